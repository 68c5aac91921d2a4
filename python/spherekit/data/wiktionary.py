"""Wiktionary from Wiktextract / kaikki.org JSONL dumps (the paper's second source, 590K syn + 2.2M t2d).

A dump has one JSON object per line (optionally gzip-compressed, *.gz), e.g.

    {"word": "dog", "pos": "noun", "lang": "English", "lang_code": "en",
     "senses": [{"glosses": ["A mammal, Canis familiaris ..."], "examples": [{"text": "The dog barked."}],
                 "tags": [...], "synonyms": [{"word": "hound"}]},
                {"glosses": ["A man.", "A dull, unattractive man."], "tags": ["derogatory"]},
                {"glosses": ["plural of dog"], "tags": ["form-of"], "form_of": [{"word": "dog"}]}],
     "synonyms": [{"word": "doggy", "sense": "..."}]}

Read here: word, pos, lang_code, senses[].glosses (the LAST gloss is the sense's own: earlier ones are
its parents'), senses[].examples[].text, senses[].tags, senses[].form_of / alt_of, senses[].synonyms[].word
and the entry's synonyms[].word. Senses with no gloss, and form-of / alt-of senses ("plural of dog")
unless include_form_of, are skipped; entries of another lang_code are skipped. A line that is not a JSON
object, or a field of the wrong type, raises WiktionaryFormatError naming the file, the line and the field.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .masking import HeadwordMasker
from .records import SynonymPair, TermDefinition, definition_key, term_key

POS_MAP = {"noun": "n", "name": "n", "proper noun": "n", "verb": "v", "adj": "a", "adjective": "a",
           "adv": "r", "adverb": "r"}


class WiktionaryFormatError(ValueError):
    """A malformed line in a Wiktextract dump: .path, .line (1-based), .field."""

    def __init__(self, path, line: int, field: str, problem: str):
        self.path, self.line, self.field = str(path), line, field
        super().__init__(f"{path}:{line}: field {field!r}: {problem}")


@dataclass(frozen=True, slots=True)
class WiktionarySense:
    term: str            # term_key(word)
    word: str            # as in the dump
    pos: str | None      # coarse "n", "v", "a", "r" or None
    pos_label: str       # Wiktextract's pos ("noun", "name", "prep", ...)
    definition: str      # the sense's own gloss
    examples: tuple
    tags: tuple
    synonyms: tuple      # synonym words (sense-level, else the entry's)
    form_of: bool


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def _type_name(x) -> str:
    return type(x).__name__


def _check_str_list(value, path, line, field) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WiktionaryFormatError(path, line, field, f"expected a list of strings, got {_type_name(value)}"
                                    + (f" with {_type_name(next(v for v in value if not isinstance(v, str)))} items"
                                       if isinstance(value, list) else ""))
    return value


def _words(value, path, line, field) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WiktionaryFormatError(path, line, field, f"expected a list of objects, got {_type_name(value)}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("word"), str):
            raise WiktionaryFormatError(path, line, f"{field}[{i}].word", f"expected a string, got "
                                        f"{_type_name(item.get('word') if isinstance(item, dict) else item)}")
        out.append(item["word"])
    return out


def iter_entries(path: str | Path, lang_code: str | None = "en") -> Iterator[tuple[int, dict]]:
    """(line number, entry) for each line of the dump whose lang_code matches (all when None); blank lines
    are skipped; top-level fields are type-checked."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: Wiktionary dump {path} does not exist")
    with _open(path) as f:
        for lineno, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                entry = json.loads(text)
            except json.JSONDecodeError as exc:
                raise WiktionaryFormatError(path, lineno, "<line>",
                                            f"not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(entry, dict):
                raise WiktionaryFormatError(path, lineno, "<line>", f"expected a JSON object, got {_type_name(entry)}")
            for key in ("word", "pos"):
                if not isinstance(entry.get(key), str) or not entry[key].strip():
                    raise WiktionaryFormatError(path, lineno, key,
                                                f"expected a non-empty string, got {entry.get(key)!r}")
            code = entry.get("lang_code")
            if code is not None and not isinstance(code, str):
                raise WiktionaryFormatError(path, lineno, "lang_code", f"expected a string, got {_type_name(code)}")
            if lang_code is not None and code != lang_code:
                continue
            if "senses" in entry and not isinstance(entry["senses"], list):
                raise WiktionaryFormatError(path, lineno, "senses",
                                            f"expected a list, got {_type_name(entry['senses'])}")
            yield lineno, entry


def load_wiktionary(path: str | Path, *, lang_code: str | None = "en",
                    include_form_of: bool = False) -> list[WiktionarySense]:
    """Every sense with a gloss in the dump (see the module docstring)."""
    out = []
    for lineno, entry in iter_entries(path, lang_code):
        word, label = entry["word"], entry["pos"]
        entry_syn = _words(entry.get("synonyms"), path, lineno, "synonyms")
        for i, sense in enumerate(entry.get("senses") or []):
            where = f"senses[{i}]"
            if not isinstance(sense, dict):
                raise WiktionaryFormatError(path, lineno, where, f"expected an object, got {_type_name(sense)}")
            glosses = _check_str_list(sense.get("glosses", []), path, lineno, f"{where}.glosses")
            tags = _check_str_list(sense.get("tags", []), path, lineno, f"{where}.tags")
            examples = []
            raw_ex = sense.get("examples", [])
            if not isinstance(raw_ex, list):
                raise WiktionaryFormatError(path, lineno, f"{where}.examples",
                                            f"expected a list, got {_type_name(raw_ex)}")
            for j, ex in enumerate(raw_ex):
                text = ex.get("text") if isinstance(ex, dict) else None
                if not isinstance(text, str):
                    raise WiktionaryFormatError(path, lineno, f"{where}.examples[{j}].text",
                                                f"expected a string, got {_type_name(text)}")
                examples.append(text)
            form_of = bool(sense.get("form_of") or sense.get("alt_of")) or "form-of" in tags or "alt-of" in tags
            synonyms = _words(sense.get("synonyms"), path, lineno, f"{where}.synonyms") or entry_syn
            gloss = glosses[-1].strip() if glosses else ""
            if not gloss or "no-gloss" in tags or (form_of and not include_form_of):
                continue
            out.append(WiktionarySense(term_key(word), word, POS_MAP.get(label.lower()), label, gloss, tuple(examples),
                                       tuple(tags), tuple(synonyms), form_of))
    return out


def term_definition_pairs(senses: Iterable[WiktionarySense], *, mask_headword: bool = True,
                          mask_token: str | None = None, exceptions=None) -> list[TermDefinition]:
    """TermDefinition(source="wiktionary") per distinct (term, gloss), headword masked as for WordNet."""
    masker = HeadwordMasker(exceptions, mask_token)
    out, seen = [], set()
    for s in senses:
        key = (s.term, definition_key(s.definition))
        if key in seen:
            continue
        seen.add(key)
        definition = masker(s.definition, s.word) if mask_headword else s.definition
        if any(ch.isalnum() for ch in definition.replace(mask_token or "", "")):
            out.append(TermDefinition(s.word, definition, None, s.pos, "wiktionary"))
    return out


def synonym_pairs(senses: Iterable[WiktionarySense]) -> list[SynonymPair]:
    """SynonymPair(source="wiktionary") per distinct unordered (word, synonym) of a sense."""
    out, seen = [], set()
    for s in senses:
        for syn in s.synonyms:
            key = tuple(sorted((s.term, term_key(syn))))
            if key[0] == key[1] or key in seen:
                continue
            seen.add(key)
            out.append(SynonymPair(s.word, syn, None, s.pos, "wiktionary"))
    return out
