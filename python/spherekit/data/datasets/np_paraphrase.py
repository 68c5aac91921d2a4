"""The modifier-labelled NP paraphrase suite of "Principles of Concept Representation in Sentence Encoders"
(arXiv:2606.06994) (4,000 pairs; five composition families).

The paper releases the suite but does not give its file format; spherekit reads JSON lines, one pair
per line (this is our documented choice):
    {"query": "dirty cup", "paraphrase": "not clean cup", "family": "intersective",
     "regime": "strict", "id": "np-0001"}
  query, paraphrase   required, non-empty
  family              required: intersective | subsective | relational | modal | privative
  regime              optional: strict (zero lexical overlap after head masking) | near (rule-based
                      head-broadening / relation abstraction)
  id                  optional (default: the 1-based line number)
A TSV with a header row of the same column names is read too (*.tsv).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._io import DatasetFormatError, check_header, get_str, read_delimited, read_jsonl

FAMILIES = ("intersective", "subsective", "relational", "modal", "privative")
REGIMES = ("strict", "near")


@dataclass(frozen=True, slots=True)
class NPPair:
    query: str
    paraphrase: str
    family: str
    regime: str | None = None
    id: str | None = None


def _make(path, line, get) -> NPPair:
    family = get("family").strip().lower()
    if family not in FAMILIES:
        raise DatasetFormatError(path, line, "family", f"expected one of {FAMILIES}, got {family!r}")
    regime = get("regime", optional=True)
    regime = regime.strip().lower() if regime else None
    if regime is not None and regime not in REGIMES:
        raise DatasetFormatError(path, line, "regime", f"expected one of {REGIMES}, got {regime!r}")
    ident = get("id", optional=True) or str(line)
    return NPPair(get("query").strip(), get("paraphrase").strip(), family, regime, ident)


def load_np_paraphrase(path) -> list[NPPair]:
    out: list[NPPair] = []
    if str(path).removesuffix(".gz").endswith(".tsv"):
        rows = read_delimited(path, "\t")
        try:
            hline, header = next(rows)
        except StopIteration:
            raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
        cols = check_header(path, header, ("query", "paraphrase", "family"), hline)
        for line, row in rows:
            if not any(c.strip() for c in row):
                continue

            def get(key, optional=False, row=row, line=line):
                if key not in cols or cols[key] >= len(row):
                    if optional:
                        return None
                    raise DatasetFormatError(path, line, key, "missing")
                value = row[cols[key]]
                if not value.strip() and not optional:
                    raise DatasetFormatError(path, line, key, "empty")
                return value

            out.append(_make(path, line, get))
    else:
        for line, obj in read_jsonl(path):

            def get(key, optional=False, obj=obj, line=line):
                if optional and (not isinstance(obj, dict) or obj.get(key) is None):
                    return None
                return get_str(path, line, obj, key)

            out.append(_make(path, line, get))
    if not out:
        raise DatasetFormatError(path, None, None, "no pairs")
    return out
