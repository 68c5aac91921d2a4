"""Emolit (Rei & Mladenovic 2023; Zenodo record 7883954), used by "Mapping the Circumplex of Affect"
(arXiv:2601.06575).

Published layout: a tab-separated file with a header row; an id column (tid or id), a text column,
optional split / og_split / lang columns, and one column per emotion holding its score (the NLI /
pseudo-labelling probability, or 0/1). Following "Mapping the Circumplex of Affect" (appendix C.1), `label` is the
emotion with the highest score; `labels` are the emotions scoring >= threshold (0.5), best first.
"""

from __future__ import annotations

from ._io import DatasetFormatError, check_header, read_delimited, table_rows, to_float
from ._records import EmotionExample

NOT_LABELS = ("tid", "id", "text", "split", "og_split", "lang")


def load_emolit(path, *, threshold: float = 0.5, split: str | None = None) -> list[EmotionExample]:
    """All rows (or those whose split column equals `split`)."""
    rows = read_delimited(path, "\t")
    try:
        hline, header = next(rows)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    cols = check_header(path, header, ("text",), hline)
    id_col = next((cols[c] for c in ("tid", "id") if c in cols), None)
    emotions = [(i, h.strip()) for i, h in enumerate(header) if h.strip() and h.strip() not in NOT_LABELS]
    if not emotions:
        raise DatasetFormatError(path, hline, None, f"no emotion columns in header {header!r}")
    if split is not None and "split" not in cols:
        raise DatasetFormatError(path, hline, "split", "missing column (needed to select a split)")
    out = []
    for line, row in table_rows(path, rows, len(header)):
        if split is not None and row[cols["split"]] != split:
            continue
        text = row[cols["text"]].strip()
        if not text:
            raise DatasetFormatError(path, line, "text", "empty")
        scores = {name: to_float(path, line, name, row[i]) for i, name in emotions}
        ranked = sorted(scores, key=lambda k: -scores[k])
        out.append(EmotionExample(
            text=text, labels=tuple(k for k in ranked if scores[k] >= threshold),
            id=row[id_col] if id_col is not None else str(line), source="emolit",
            label=ranked[0], scores=scores, meta={"split": row[cols["split"]]} if "split" in cols else {}))
    if not out:
        raise DatasetFormatError(path, None, None, "no examples" + (f" with split {split!r}" if split else ""))
    return out
