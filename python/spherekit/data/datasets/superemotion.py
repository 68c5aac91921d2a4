"""SuperEmotion (de Fortuny 2025; hub dataset cirimus/super-emotion), used by "Mapping the Circumplex of Affect"
(arXiv:2601.06575).

Published layout: data/{train,validation,test}-00000-of-00001.parquet with columns
    text (str), labels (list[int]), labels_str (list[str]: the harmonised Shaver labels, e.g.
    "joy", "neutral"), labels_source (list[str], the source dataset's own labels; optional),
    source (str: the source corpus, e.g. "GoEmotions", "CrowdFlower")
The same columns as JSON lines (*.jsonl) are read too. "Mapping the Circumplex of Affect" uses the GoEmotions and
CrowdFlower
parts: pass sources=("GoEmotions", "CrowdFlower").
"""

from __future__ import annotations

from ._io import DatasetFormatError, read_jsonl, require_file
from ._records import EmotionExample

REQUIRED = ("text", "labels_str", "source")


def _rows(path):
    if str(path).endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(require_file(path))
        missing = [c for c in REQUIRED if c not in table.column_names]
        if missing:
            raise DatasetFormatError(path, None, missing[0], f"missing column (columns: {table.column_names})")
        for i, row in enumerate(table.to_pylist(), start=1):
            yield i, row  # "line" = 1-based row number
    else:
        yield from read_jsonl(path)


def load_superemotion(path, *, sources=None) -> list[EmotionExample]:
    keep = None if sources is None else set(sources)
    out = []
    for line, row in _rows(path):
        if not isinstance(row, dict):
            raise DatasetFormatError(path, line, None, f"expected an object, got {type(row).__name__}")
        for key in REQUIRED:
            if key not in row:
                raise DatasetFormatError(path, line, key, "missing")
        text, labels, source = row["text"], row["labels_str"], row["source"]
        if not isinstance(text, str) or not text.strip():
            raise DatasetFormatError(path, line, "text", "expected a non-empty string")
        if not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) and x for x in labels):
            raise DatasetFormatError(path, line, "labels_str", f"expected a list of label names, got {labels!r}")
        if not isinstance(source, str):
            raise DatasetFormatError(path, line, "source", f"expected a string, got {type(source).__name__}")
        if keep is not None and source not in keep:
            continue
        meta = {"labels_source": list(row.get("labels_source") or [])}
        out.append(EmotionExample(text=text.strip(), labels=tuple(labels), id=str(row.get("id", line)), source=source, meta=meta))
    if not out:
        raise DatasetFormatError(path, None, None, "no examples" + (f" from sources {sorted(keep)}" if keep else ""))
    return out
