"""Natural Questions training triplets ("Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization" (arXiv:2604.16351) D.1: (anchor, positive, negative) triplets for MNRL).

Accepted published layouts (by file extension; *.gz allowed):
    .jsonl   one JSON value per line: a list [anchor, positive, negative] (sentence-transformers'
             embedding-training-data style) or an object with anchor/positive/negative
             (sentence-transformers/natural-questions triplet columns; query/pos/neg also accepted)
    .tsv     header row naming the columns anchor, positive, negative (or query, positive, negative)
A list of two texts is a pair (negative None) only when allow_pairs=True.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._io import DatasetFormatError, check_header, read_delimited, read_jsonl

ALIASES = {"anchor": ("anchor", "query"), "positive": ("positive", "pos", "answer"), "negative": ("negative", "neg")}


@dataclass(frozen=True, slots=True)
class Triplet:
    anchor: str
    positive: str
    negative: str | None


def _text(path, line, fld, value) -> str:
    if not isinstance(value, str):
        raise DatasetFormatError(path, line, fld, f"expected a string, got {type(value).__name__}")
    if not value.strip():
        raise DatasetFormatError(path, line, fld, "empty text")
    return value


def _from_json(path, line, obj, allow_pairs) -> Triplet:
    if isinstance(obj, list):
        if len(obj) == 3 or (allow_pairs and len(obj) == 2):
            vals = list(obj) + [None] * (3 - len(obj))
            names = ("anchor", "positive", "negative")
            return Triplet(*(None if v is None else _text(path, line, n, v) for n, v in zip(names, vals)))
        raise DatasetFormatError(path, line, None, f"expected a list of 3 texts (anchor, positive, negative), got {len(obj)}")
    if isinstance(obj, dict):
        vals = {}
        for canon, names in ALIASES.items():
            key = next((n for n in names if n in obj), None)
            if key is None:
                if canon == "negative" and allow_pairs:
                    vals[canon] = None
                    continue
                raise DatasetFormatError(path, line, canon, f"missing (accepted names: {names})")
            vals[canon] = _text(path, line, key, obj[key])
        return Triplet(**vals)
    raise DatasetFormatError(path, line, None, f"expected a JSON list or object, got {type(obj).__name__}")


def load_nq_triplets(path, *, allow_pairs: bool = False, limit: int | None = None) -> list[Triplet]:
    name = str(path).removesuffix(".gz")
    out: list[Triplet] = []
    if name.endswith((".jsonl", ".json")):
        for line, obj in read_jsonl(path):
            out.append(_from_json(path, line, obj, allow_pairs))
            if limit is not None and len(out) >= limit:
                break
    elif name.endswith(".tsv"):
        rows = read_delimited(path, "\t")
        try:
            hline, header = next(rows)
        except StopIteration:
            raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
        lowered = [h.strip().lower() for h in header]
        cols = {}
        for canon, names in ALIASES.items():
            hit = next((n for n in names if n in lowered), None)
            if hit is None and not (canon == "negative" and allow_pairs):
                check_header(path, lowered, (canon,), hline)
            cols[canon] = None if hit is None else lowered.index(hit)
        for line, row in rows:
            if not any(cell.strip() for cell in row):
                continue
            vals = {}
            for canon, idx in cols.items():
                if idx is None:
                    vals[canon] = None
                elif idx >= len(row):
                    raise DatasetFormatError(path, line, canon, f"row has {len(row)} fields, header has {len(header)}")
                else:
                    vals[canon] = _text(path, line, canon, row[idx])
            out.append(Triplet(**vals))
            if limit is not None and len(out) >= limit:
                break
    else:
        raise ValueError(f"NQ triplets: unsupported file type {path} (expected .jsonl, .json, .tsv, optionally .gz)")
    if not out:
        raise DatasetFormatError(path, None, None, "no triplets")
    return out
