"""STS Benchmark in SentEval's layout (data/downstream/STS/STSBenchmark/sts-{train,dev,test}.csv).

Tab-separated, no header, one pair per line:
    genre <TAB> file <TAB> year <TAB> id <TAB> score <TAB> sentence1 <TAB> sentence2 [<TAB> sources...]
(fields are not quoted; extra trailing columns are ignored, as SentEval does).
"""

from __future__ import annotations

from ._io import DatasetFormatError, read_lines, to_float
from .sts import STSPair

FIELDS = ("genre", "filename", "year", "id", "score", "sentence1", "sentence2")


def load_stsb(path) -> list[STSPair]:
    out = []
    for line, text in read_lines(path):
        if not text.strip():
            continue
        parts = text.split("\t")
        if len(parts) < len(FIELDS):
            raise DatasetFormatError(path, line, FIELDS[len(parts)],
                                     f"expected {len(FIELDS)} tab-separated fields {FIELDS}, got {len(parts)}")
        score = to_float(path, line, "score", parts[4])
        for i, field in ((5, "sentence1"), (6, "sentence2")):
            if not parts[i].strip():
                raise DatasetFormatError(path, line, field, "empty sentence")
        out.append(STSPair(parts[5].strip(), parts[6].strip(), score))
    if not out:
        raise DatasetFormatError(path, None, None, "no pairs")
    return out
