"""GoEmotions (Demszky et al. 2020), in its two published layouts.

simplified: data/{train,dev,test}.tsv, no header, one example per line:
    text <TAB> comma-separated label ids (0-27) <TAB> comment id
  with data/emotions.txt listing the 28 label names, one per line (the id is the line index).
raw: data/full_dataset/goemotions_{1,2,3}.csv (comma-separated, quoted, with a header): text, id,
  author, subreddit, link_id, parent_id, created_utc, rater_id, example_very_unclear, then one 0/1
  column per emotion; one row per (comment, rater) annotation.
"""

from __future__ import annotations

from ._io import DatasetFormatError, check_header, read_delimited, read_lines, table_rows
from ._records import EmotionExample

EMOTIONS = ("admiration", "amusement", "anger", "annoyance", "approval", "caring", "confusion", "curiosity",
            "desire", "disappointment", "disapproval", "disgust", "embarrassment", "excitement", "fear",
            "gratitude", "grief", "joy", "love", "nervousness", "optimism", "pride", "realization", "relief",
            "remorse", "sadness", "surprise", "neutral")
RAW_META = ("text", "id", "author", "subreddit", "link_id", "parent_id", "created_utc", "rater_id", "example_very_unclear")


def load_emotion_names(path) -> tuple[str, ...]:
    names = tuple(t.strip() for _, t in read_lines(path) if t.strip())
    if not names:
        raise DatasetFormatError(path, None, None, "no emotion names")
    return names


def load_goemotions(path, emotions_path=None) -> list[EmotionExample]:
    """The simplified TSV layout (label names from emotions_path, default the published 28)."""
    names = load_emotion_names(emotions_path) if emotions_path is not None else EMOTIONS
    out = []
    for line, row in read_delimited(path, "\t"):
        if not any(c.strip() for c in row):
            continue
        if len(row) != 3:
            raise DatasetFormatError(path, line, None, f"expected 3 tab-separated fields (text, labels, id), got {len(row)}")
        text, ids, cid = row
        if not text.strip():
            raise DatasetFormatError(path, line, "text", "empty")
        labels = []
        for tok in ids.split(","):
            if not tok.strip().isdigit() or int(tok) >= len(names):
                raise DatasetFormatError(path, line, "labels", f"expected label ids in [0, {len(names)}), got {ids!r}")
            labels.append(names[int(tok)])
        out.append(EmotionExample(text=text.strip(), labels=tuple(labels), id=cid.strip() or str(line), source="goemotions"))
    if not out:
        raise DatasetFormatError(path, None, None, "no examples")
    return out


def load_goemotions_raw(path) -> list[EmotionExample]:
    """The raw per-rater CSV layout (labels = the emotion columns equal to 1)."""
    rows = read_delimited(path, ",")
    try:
        hline, header = next(rows)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    cols = check_header(path, header, ("text", "id"), hline)
    emotions = [(i, h) for i, h in enumerate(header) if h in EMOTIONS]
    if not emotions:
        raise DatasetFormatError(path, hline, None, f"no emotion columns (expected some of {EMOTIONS[:3]}...)")
    out = []
    for line, row in table_rows(path, rows, len(header)):
        labels = []
        for i, name in emotions:
            if row[i] not in ("0", "1"):
                raise DatasetFormatError(path, line, name, f"expected 0 or 1, got {row[i]!r}")
            if row[i] == "1":
                labels.append(name)
        text = row[cols["text"]].strip()
        if not text:
            raise DatasetFormatError(path, line, "text", "empty")
        meta = {k: row[cols[k]] for k in RAW_META if k in cols and k not in ("text", "id")}
        out.append(EmotionExample(text=text, labels=tuple(labels), id=row[cols["id"]], source="goemotions", meta=meta))
    if not out:
        raise DatasetFormatError(path, None, None, "no examples")
    return out
