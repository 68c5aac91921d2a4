"""Empathetic Dialogues (Rashkin et al. 2019): empatheticdialogues/{train,valid,test}.csv.

Published layout: comma-separated with a header row
    conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags
fields are not quoted: commas inside text are written as "_comma_" (restored here); test rows may
carry extra trailing fields (ignored). `context` is the conversation's emotion label (32 labels).
"Mapping the Circumplex of Affect" (arXiv:2601.06575) uses the speaker's first utterance of each conversation:
first_utterance_only=True keeps utterance_idx == 1.
"""

from __future__ import annotations

from ._io import DatasetFormatError, check_header, read_lines
from ._records import EmotionExample

COLUMNS = ("conv_id", "utterance_idx", "context", "prompt", "speaker_idx", "utterance")


def _clean(text: str) -> str:
    return text.replace("_comma_", ",").strip()


def load_empathetic_dialogues(path, *, first_utterance_only: bool = False) -> list[EmotionExample]:
    lines = read_lines(path)
    try:
        hline, header = next(lines)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    cols = check_header(path, header.split(","), COLUMNS, hline)
    width = max(cols.values()) + 1
    out = []
    for line, text in lines:
        if not text.strip():
            continue
        parts = text.split(",")
        if len(parts) < len(COLUMNS):
            raise DatasetFormatError(path, line, COLUMNS[len(parts)],
                                     f"expected at least {len(COLUMNS)} comma-separated fields {COLUMNS}, got {len(parts)}")
        if len(parts) < width:
            raise DatasetFormatError(path, line, None, f"row has {len(parts)} fields, header needs {width}")
        idx = parts[cols["utterance_idx"]]
        if not idx.strip().isdigit():
            raise DatasetFormatError(path, line, "utterance_idx", f"expected an integer, got {idx!r}")
        if first_utterance_only and int(idx) != 1:
            continue
        emotion = parts[cols["context"]].strip()
        utterance = _clean(parts[cols["utterance"]])
        if not emotion:
            raise DatasetFormatError(path, line, "context", "empty emotion label")
        if not utterance:
            raise DatasetFormatError(path, line, "utterance", "empty")
        conv = parts[cols["conv_id"]]
        out.append(EmotionExample(text=utterance, labels=(emotion,), id=f"{conv}:{int(idx)}", source="empathetic_dialogues",
                                  meta={"conv_id": conv, "utterance_idx": int(idx), "prompt": _clean(parts[cols["prompt"]]),
                                        "speaker_idx": parts[cols["speaker_idx"]]}))
    if not out:
        raise DatasetFormatError(path, None, None, "no utterances")
    return out
