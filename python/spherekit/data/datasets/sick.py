"""SICK-R (relatedness) in SentEval's layout (data/downstream/SICK/SICK_{train,trial,test_annotated}.txt;
also the full SICK.txt). Tab-separated with a header row naming the columns; the loader reads
sentence_A, sentence_B and relatedness_score (1-5) by name, so both layouts work:
    pair_ID <TAB> sentence_A <TAB> sentence_B <TAB> relatedness_score <TAB> entailment_judgment
"""

from __future__ import annotations

from ._io import DatasetFormatError, check_header, read_lines, to_float
from .sts import STSPair

REQUIRED = ("sentence_A", "sentence_B", "relatedness_score")


def load_sick(path) -> list[STSPair]:
    lines = read_lines(path)
    try:
        hline, header = next(lines)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    cols = check_header(path, header.split("\t"), REQUIRED, hline)
    width = max(cols[c] for c in REQUIRED) + 1
    out = []
    for line, text in lines:
        if not text.strip():
            continue
        parts = text.split("\t")
        if len(parts) < width:
            missing = [c for c in REQUIRED if cols[c] >= len(parts)]
            raise DatasetFormatError(path, line, missing[0], f"row has {len(parts)} fields, header has {len(header.split(chr(9)))}")
        a, b = parts[cols["sentence_A"]].strip(), parts[cols["sentence_B"]].strip()
        for field, value in (("sentence_A", a), ("sentence_B", b)):
            if not value:
                raise DatasetFormatError(path, line, field, "empty sentence")
        out.append(STSPair(a, b, to_float(path, line, "relatedness_score", parts[cols["relatedness_score"]])))
    if not out:
        raise DatasetFormatError(path, None, None, "no pairs after the header")
    return out
