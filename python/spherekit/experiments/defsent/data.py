"""The dictionaries of DefSent+ (arXiv:2405.16153, sec. 3.3 and Table 1): entries with their definitions.

One code path builds every dictionary: records (entry, definition, where) -> `from_records`, which combines
duplicate entries and drops duplicate definitions of an entry (Table 1's dataset a: "duplicate entries from
different resources are combined, and duplicate definitions for each entry are removed"). Sources:

    read_tsv(path)        the paper's layout, one entry per line: entry<TAB>def1<|list_more_def|>def2 ...
                          (a malformed line, an entry without definitions, or an entry given twice is a
                          DictionaryFormatError naming the file, the line and the entry). The authors' released
                          files are this layout under a ".csv" name (their README: "Ox+WN.csv", read with
                          --dataset_file_encoding utf-16; GenerateEncoderInput.py reads column 2 of each
                          tab-split line): UTF-16 (by its byte-order mark) and UTF-8 are both read, and columns
                          after the second are ignored, as the released code does
    read_kaikki(path)     a Wiktextract / kaikki.org JSONL dump (spherekit.data.wiktionary)
    offline_dictionaries  a = GCIDE and WordNet merged, b = GCIDE, c = single-token entries of b (`single_token`)

Entry ids are row indices of the bank (Dictionary.entries[i] <-> bank row i).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ...data.records import definition_key, term_key

SEPARATOR = "<|list_more_def|>"
# the authors' released file names (README of github.com/ryuliuxiaodong/DefSent-Plus: "./datasets/Ox+WN.csv"); the
# README names no file for b and c: <dir>/{b,c}.csv (or .tsv) there
RELEASED_NAMES = {"a": ("Ox+WN.csv",)}
FOLDERS = (".", "datasets")


class DictionaryFormatError(ValueError):
    """A bad dictionary file: .path, .line (1-based or None), .entry (or None)."""

    def __init__(self, path, line: int | None, entry: str | None, problem: str):
        self.path, self.line, self.entry = str(path), line, entry
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {'entry ' + repr(entry) + ': ' if entry is not None else ''}{problem}")


@dataclass
class Dictionary:
    """entries[i] and its definitions[i] (a tuple of >= 1 strings); `name` says which dictionary it is."""

    name: str
    entries: list[str]
    definitions: list[tuple[str, ...]]
    sources: tuple = ()
    held_out: list[tuple[str, int]] = field(default_factory=list)  # (definition, entry id) kept out of bank/training

    def __post_init__(self):
        if len(self.entries) != len(self.definitions):
            raise ValueError(f"{self.name}: {len(self.entries)} entries but {len(self.definitions)} definition lists")
        for entry, defs in zip(self.entries, self.definitions):
            if not defs:
                raise DictionaryFormatError(self.name, None, entry, "has no definitions")

    @property
    def n_entries(self) -> int:
        return len(self.entries)

    @property
    def n_definitions(self) -> int:
        return sum(len(d) for d in self.definitions)

    def pairs(self) -> tuple[list[str], list[int]]:
        """Every (definition, entry id) training pair (paper, footnote 5: each pair is one example)."""
        texts, labels = [], []
        for i, defs in enumerate(self.definitions):
            texts += defs
            labels += [i] * len(defs)
        return texts, labels

    def sample_pairs(self, n: int, seed: int) -> tuple[list[str], list[int]]:
        """n pairs drawn without replacement (all when n is 0 or >= their number), in a seeded random order."""
        texts, labels = self.pairs()
        order = list(range(len(texts)))
        random.Random(seed).shuffle(order)
        if n:
            order = order[:n]
        return [texts[i] for i in order], [labels[i] for i in order]

    def stats(self, tokenizer=None, sample: int = 20000) -> dict:
        out = {"entries": self.n_entries, "definitions": self.n_definitions, "held_out": len(self.held_out)}
        if tokenizer is not None:
            texts, _ = self.sample_pairs(sample, 0)
            lengths = sorted(len(ids) for ids in tokenizer(texts, truncation=False)["input_ids"])
            out.update(max_tokens=lengths[-1], median_tokens=lengths[len(lengths) // 2])
        return out


def from_records(records, name: str, *, drop: frozenset = frozenset(), drop_definitions: frozenset = frozenset(),
                 sources: tuple = ()) -> Dictionary:
    """A Dictionary from (entry, definition) records, in order of first appearance: entries compared by
    spherekit.data.records.term_key (so "Dog" and "dog" are one entry), definitions of an entry by
    definition_key (duplicates dropped). Entries in `drop` (term keys) and definitions in `drop_definitions`
    (definition keys) are left out; an entry left with no definition disappears."""
    index: dict[str, int] = {}
    entries, definitions, seen = [], [], []
    for entry, definition in records:
        key = term_key(entry)
        dkey = definition_key(definition)
        if key in drop or dkey in drop_definitions or not dkey:
            continue
        if key not in index:
            index[key] = len(entries)
            entries.append(key)
            definitions.append([])
            seen.append(set())
        i = index[key]
        if dkey not in seen[i]:
            seen[i].add(dkey)
            definitions[i].append(definition.strip())
    return Dictionary(name, entries, [tuple(d) for d in definitions], tuple(sources))


def read_tsv(path) -> list[tuple[str, str]]:
    """(entry, definition) records of a TSV in the paper's layout (module docstring); blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dictionary file {path} does not exist")
    records, first_line = [], {}
    with open(path, encoding=text_encoding(path)) as fh:
        for lineno, text in enumerate(fh, 1):
            text = text.rstrip("\n\r")
            if not text.strip():
                continue
            entry, tab, rest = text.partition("\t")
            rest = rest.split("\t")[0]  # the released code reads the second column only
            if not tab:
                raise DictionaryFormatError(path, lineno, None, "expected 'entry<TAB>definition"
                                            f"{SEPARATOR}definition...', found no tab")
            entry = entry.strip()
            if not entry:
                raise DictionaryFormatError(path, lineno, None, "empty entry before the tab")
            defs = [d.strip() for d in rest.split(SEPARATOR) if d.strip()]
            if not defs:
                raise DictionaryFormatError(path, lineno, entry, "has no definitions")
            key = term_key(entry)
            if key in first_line:
                raise DictionaryFormatError(path, lineno, entry, f"duplicate entry (first on line {first_line[key]})")
            first_line[key] = lineno
            records += [(entry, d) for d in defs]
    if not records:
        raise DictionaryFormatError(path, None, None, "no entries")
    return records


def text_encoding(path) -> str:
    """"utf-16" when the file starts with a UTF-16 byte-order mark (the released files), else "utf-8-sig"."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    return "utf-16" if head in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"


def read_kaikki(path) -> list[tuple[str, str]]:
    """(word, gloss) records of a Wiktextract / kaikki.org dump (English entries, form-of senses left out)."""
    from ...data.wiktionary import load_wiktionary, term_definition_pairs

    pairs = term_definition_pairs(load_wiktionary(path), mask_headword=False)
    if not pairs:
        raise DictionaryFormatError(path, None, None, "no English sense with a gloss")
    return [(p.term, p.definition) for p in pairs]


def find_dictionary_file(data_dir, name: str) -> Path | None:
    """Dictionary `name` under data_dir or data_dir/datasets (the released layout): <name>.tsv / .csv (the paper's
    layout), the released name (a: Ox+WN.csv), else <name>.jsonl / .jsonl.gz / .json (kaikki); None when absent."""
    names = [f"{name}{suffix}" for suffix in (".tsv", ".csv")] + list(RELEASED_NAMES.get(name, ()))
    names += [f"{name}{suffix}" for suffix in (".jsonl", ".jsonl.gz", ".json")]
    for folder in FOLDERS:
        for file in names:
            path = Path(data_dir) / folder / file
            if path.is_file():
                return path
    return None


def read_dictionary_file(path) -> list[tuple[str, str]]:
    path = Path(path)
    return read_tsv(path) if path.suffix in (".tsv", ".csv") else read_kaikki(path)


def offline_records(mask_headword: bool = False) -> dict[str, list[tuple[str, str]]]:
    """{"gcide": records, "wordnet": records} from the installed GCIDE and WordNet 3.0 (GCIDE's senses copied
    from WordNet are left out of "gcide", so a = both sources has no near-copies)."""
    from ...data.gcide import load_gcide
    from ...data.wordnet import load_wordnet

    wn = load_wordnet()
    gcide = load_gcide().term_definition_pairs(mask_headword=mask_headword, exceptions=wn.exceptions)
    wordnet = wn.term_definition_pairs(mask_headword=mask_headword)
    return {"gcide": [(p.term, p.definition) for p in gcide], "wordnet": [(p.term, p.definition) for p in wordnet]}


def single_token(dictionary: Dictionary, tokenizer, name: str = "c") -> Dictionary:
    """The entries that are one token of the tokenizer's vocabulary (dataset c: DefSent's setting)."""
    special = set(tokenizer.all_special_tokens)
    keep = [i for i, e in enumerate(dictionary.entries)
            if len(toks := tokenizer.tokenize(e)) == 1 and toks[0] not in special]
    return Dictionary(name, [dictionary.entries[i] for i in keep], [dictionary.definitions[i] for i in keep],
                      dictionary.sources)


def subsample(dictionary: Dictionary, max_entries: int, max_definitions: int, seed: int) -> Dictionary:
    """At most max_entries random entries (0: all; dictionary order kept) with their first max_definitions
    definitions (0: all)."""
    keep = list(range(dictionary.n_entries))
    if max_entries and max_entries < len(keep):
        keep = sorted(random.Random(seed).sample(keep, max_entries))
    defs = [dictionary.definitions[i][:max_definitions or None] for i in keep]
    return Dictionary(dictionary.name, [dictionary.entries[i] for i in keep], defs, dictionary.sources)


def hold_out_reverse(dictionary: Dictionary, n: int, seed: int) -> Dictionary:
    """Move the last definition of n random entries that have several into `held_out` (reverse-dictionary test
    definitions: neither in the bank nor in training)."""
    several = [i for i, d in enumerate(dictionary.definitions) if len(d) > 1]
    chosen = set(random.Random(seed).sample(several, min(n, len(several))))
    defs = [d[:-1] if i in chosen else d for i, d in enumerate(dictionary.definitions)]
    held = [(dictionary.definitions[i][-1], i) for i in sorted(chosen)]
    return Dictionary(dictionary.name, list(dictionary.entries), defs, dictionary.sources, held)
