"""Labelled emotion text tables as used by "Mapping the Circumplex of Affect" (Emolit, GoEmotions,
Empathetic Dialogues, SuperEmotion, or any table of texts and labels), read into list[EmotionItem]
(spherekit.data.emotion: text, label, provenance "<file name>:<line number>").

    items = load_labelled_table("mine.csv", label_map={"afraid": "fear"})
    items = load_emotion_dataset("empatheticdialogues/train.csv", "empathetic_dialogues")
    train, test = load_emotion_dir("goemotions/data", "goemotions")        # its own train/test files
    angles = resolve_angles({i.label for i in items}, angles_file=None)    # degrees per label
    check_labelled(items)                                                  # >= 2 labels, >= 2 texts each
    train, test = balanced_split(items, 500, 100, seed=0)                  # the paper's 500 / 100 per label

One code path. Every reader turns its rows into (line, text, raw label) and hands them to the same
validation: an empty text or label is a DatasetFormatError (a ValueError) naming the file, the line
and the field; the raw label goes through the label map (the dataset's default map, updated by the
caller's label_map; looked up as written, then lower-cased), and a result matching a circumplex name
(spherekit.data.emotion.EMOTIONS) case-insensitively becomes that name. keep then selects labels:
None keeps all, "circumplex" the 12 circumplex names, a collection those names. The dataset readers
default to keep="circumplex" (the paper keeps the labels with a circumplex name: "exact name matches
or ... equivalent semantic properties"); load_labelled_table keeps all. A file that leaves no row is
an error.

Table files (load_labelled_table, the emolit and superemotion readers, angle files): by extension
(a trailing .gz is read through gzip): .csv comma-separated, .tsv and .txt tab-separated, both with a
header row (csv-module quoting: quoted fields may hold the delimiter or span lines; the line is the
record's first line); .jsonl one JSON object per line (the columns are the first object's keys);
.parquet through pyarrow (the "line" is the 1-based row number). A column the reader needs and the
header lacks is an error naming the file and the column and listing the columns present.

Readers, and the columns each expects (the published layouts, as spherekit.data.datasets reads them):
  table                 text_column (default "text") and label_column (default "label").
  emolit                Emolit (Rei & Mladenic 2023): "text" and either a "label" column or one score
                        column per emotion (the Zenodo release: every column but tid, id, text, split,
                        og_split, lang is an emotion holding its probability); with scores the label is
                        the emotion with the highest score, as in the paper ("we assigned the emotion
                        with the highest predicted probability as the ground truth label"), ties to the
                        first column.
  goemotions            GoEmotions (Demszky et al. 2020) data/{train,dev,test}.tsv: no header, one row
                        "text <TAB> comma-separated label ids <TAB> comment id"; id i names line i of
                        emotions.txt in the same folder (or emotions_file; without one, the published
                        28 names). Rows with more than one label are skipped.
  empathetic_dialogues  Empathetic Dialogues (Rashkin et al. 2019) {train,valid,test}.csv: header
                        conv_id,utterance_idx,context,prompt,speaker_idx,utterance,... unquoted, commas
                        in text written "_comma_" (restored); extra trailing fields ignored. As in the
                        paper, the speaker's first utterance of each conversation (utterance_idx == 1),
                        label = context, mapped by ED_LABEL_MAP (afraid -> fear, trusting / faithful ->
                        trust, ...).
  superemotion          SuperEmotion (cirimus/super-emotion) data/*.parquet or the same rows as JSON
                        lines: "text" and "labels_str" (label_field; a list of the harmonised labels
                        joy, love, surprise, anger, fear, sadness, neutral, or a single string); rows
                        with more than one label are skipped; sources=("GoEmotions", "CrowdFlower")
                        keeps those values of the "source" column (the paper's subsets).

balanced_split serves both these tables and the offline set (spherekit.data.emotion.emotion_split).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .datasets._io import DatasetFormatError, read_delimited, read_jsonl, read_lines, require_file
from .emotion import ANGLES, EMOTIONS, EmotionItem

DATASETS = ("table", "emolit", "goemotions", "empathetic_dialogues", "superemotion")
TABLE_EXTENSIONS = (".csv", ".tsv", ".txt", ".jsonl", ".parquet")
ED_LABEL_MAP = {"joyful": "joy", "excited": "excitement", "surprised": "surprise", "angry": "anger",
                "afraid": "fear", "disgusted": "disgust", "sad": "sadness", "trusting": "trust", "faithful": "trust"}
EMOLIT_NOT_LABELS = ("tid", "id", "text", "split", "og_split", "lang")
ED_COLUMNS = ("conv_id", "utterance_idx", "context", "prompt", "speaker_idx", "utterance")
# File names load_emotion_dir looks for (in the folder, then in its data/ subfolder).
SPLIT_FILES = {
    "goemotions": (("train.tsv",), ("test.tsv",)),
    "empathetic_dialogues": (("train.csv",), ("test.csv",)),
}
DEFAULT_SPLIT_FILES = (tuple(f"train{e}" for e in TABLE_EXTENSIONS) + ("train-*.parquet", "train-*.jsonl"),
                       tuple(f"test{e}" for e in TABLE_EXTENSIONS) + ("test-*.parquet", "test-*.jsonl"))


# ---- table files ----

@dataclass
class Table:
    """A header and its rows: (line, {column: value}) pairs, read lazily."""

    path: Path
    columns: list[str]
    header_line: int | None
    rows: Iterator[tuple[int, dict]]


def _extension(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _delimited_table(path: Path, delimiter: str) -> Table:
    records = read_delimited(path, delimiter)
    try:
        line, header = next(records)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    header = [h.strip() for h in header]

    def rows():
        for n, row in records:
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise DatasetFormatError(path, n, None, f"row has {len(row)} fields, the header has {len(header)}")
            yield n, dict(zip(header, row))

    return Table(path, header, line, rows())


def _jsonl_table(path: Path) -> Table:
    records = read_jsonl(path)
    first = next(records, None)
    if first is None:
        raise DatasetFormatError(path, None, None, "no JSON objects")
    if not isinstance(first[1], dict):
        raise DatasetFormatError(path, first[0], None, f"expected a JSON object, got {type(first[1]).__name__}")

    def rows():
        yield first
        for n, obj in records:
            if not isinstance(obj, dict):
                raise DatasetFormatError(path, n, None, f"expected a JSON object, got {type(obj).__name__}")
            yield n, obj

    return Table(path, list(first[1]), first[0], rows())


def _parquet_table(path: Path) -> Table:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return Table(path, list(table.column_names), None, iter(enumerate(table.to_pylist(), start=1)))


def open_table(path) -> Table:
    """The header and rows of a table file, by extension (see the module docstring)."""
    path = require_file(path)
    ext = _extension(path)
    if ext == ".csv":
        return _delimited_table(path, ",")
    if ext in (".tsv", ".txt"):
        return _delimited_table(path, "\t")
    if ext == ".jsonl":
        return _jsonl_table(path)
    if ext == ".parquet":
        return _parquet_table(path)
    raise ValueError(f"{path}: unknown table extension {ext!r}; expected one of {TABLE_EXTENSIONS} (optionally .gz)")


def require_columns(table: Table, needed: Iterable[str]) -> None:
    """DatasetFormatError naming the file and the missing columns (field: the first), listing the columns present."""
    missing = [name for name in needed if name not in table.columns]
    if missing:
        what = "missing column" if len(missing) == 1 else f"missing columns {missing}"
        raise DatasetFormatError(table.path, table.header_line, missing[0],
                                 f"{what}; columns present: {table.columns}")


# ---- the shared validation path ----

def _label_lookup(raw: str, label_map: dict | None) -> str:
    if label_map:
        raw = label_map.get(raw, label_map.get(raw.lower(), raw))
    low = raw.lower()
    return low if low in EMOTIONS else raw


def _field_str(path, line: int, field: str, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        what = "missing" if value is None else f"expected a string, got {type(value).__name__}"
        raise DatasetFormatError(path, line, field, what)
    text = str(value).strip()
    if not text:
        raise DatasetFormatError(path, line, field, "empty")
    return text


def make_item(path, line: int, text, label, *, label_map: dict | None = None, text_field: str = "text",
              label_field: str = "label") -> EmotionItem:
    """One validated EmotionItem: text and label non-empty strings (an int label is read as its digits),
    the label mapped (see the module docstring), provenance "<file name>:<line>"."""
    text = _field_str(path, line, text_field, text)
    label = _label_lookup(_field_str(path, line, label_field, label), label_map)
    return EmotionItem(text, label, f"{Path(path).name}:{line}")


def _kept(keep) -> set | None:
    if keep is None:
        return None
    if keep == "circumplex":
        return set(EMOTIONS)
    if isinstance(keep, str):
        raise ValueError(f"keep: expected None, 'circumplex' or a collection of label names, got {keep!r}")
    return set(keep)


def _finish(path, items: list[EmotionItem], keep) -> list[EmotionItem]:
    wanted = _kept(keep)
    out = items if wanted is None else [it for it in items if it.label in wanted]
    if not out:
        seen = sorted(Counter(it.label for it in items))
        raise DatasetFormatError(path, None, None, "no labelled rows" + (
            f" with a label in {sorted(wanted)} (labels found: {seen})" if wanted is not None else ""))
    return out


def _merged_map(default: dict | None, label_map: dict | None) -> dict:
    return {**(default or {}), **(label_map or {})}


# ---- readers ----

def load_labelled_table(path, *, text_column: str = "text", label_column: str = "label", label_map=None,
                        keep=None) -> list[EmotionItem]:
    """Every row of a table file (CSV / TSV / TXT / JSONL / Parquet) as an EmotionItem (see the module
    docstring for the validation, label_map and keep)."""
    table = open_table(path)
    require_columns(table, (text_column, label_column))
    items = [make_item(table.path, n, row.get(text_column), row.get(label_column), label_map=label_map,
                       text_field=text_column, label_field=label_column) for n, row in table.rows]
    return _finish(table.path, items, keep)


def _score(path, line: int, field: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DatasetFormatError(path, line, field, f"expected a number, got {value!r}") from None
    if not math.isfinite(x):
        raise DatasetFormatError(path, line, field, f"expected a finite number, got {value!r}")
    return x


def read_emolit(path, *, label_column: str = "label", label_map=None, keep="circumplex") -> list[EmotionItem]:
    """Emolit rows: the label column when present, else the highest-scoring emotion column."""
    table = open_table(path)
    if label_column in table.columns:
        require_columns(table, ("text",))
        items = [make_item(table.path, n, row.get("text"), row.get(label_column), label_map=label_map,
                           label_field=label_column) for n, row in table.rows]
        return _finish(table.path, items, keep)
    require_columns(table, ("text",))
    emotions = [c for c in table.columns if c and c not in EMOLIT_NOT_LABELS]
    if not emotions:
        raise DatasetFormatError(table.path, table.header_line, label_column,
                                 f"missing column, and no per-emotion score columns; columns present: {table.columns}")
    items = []
    for n, row in table.rows:
        scores = [_score(table.path, n, e, row.get(e)) for e in emotions]
        best = emotions[scores.index(max(scores))]
        items.append(make_item(table.path, n, row.get("text"), best, label_map=label_map))
    return _finish(table.path, items, keep)


def goemotions_names(path, emotions_file=None) -> tuple[str, ...]:
    """GoEmotions label names by id: emotions_file, else emotions.txt beside path, else the published 28."""
    from .datasets.goemotions import EMOTIONS as PUBLISHED

    file = Path(emotions_file) if emotions_file is not None else Path(path).parent / "emotions.txt"
    if emotions_file is None and not file.is_file():
        return PUBLISHED
    names = tuple(t.strip() for _, t in read_lines(file) if t.strip())
    if not names:
        raise DatasetFormatError(file, None, None, "no emotion names")
    return names


def read_goemotions(path, *, emotions_file=None, label_map=None, keep="circumplex") -> list[EmotionItem]:
    """GoEmotions TSV rows carrying exactly one label."""
    path = require_file(path)
    names = goemotions_names(path, emotions_file)
    items = []
    for n, row in read_delimited(path, "\t"):
        if not any(c.strip() for c in row):
            continue
        if len(row) != 3:
            raise DatasetFormatError(path, n, None,
                                     f"expected 3 tab-separated fields (text, label ids, comment id), got {len(row)}")
        ids = [t.strip() for t in row[1].split(",")]
        if not all(t.isdigit() and int(t) < len(names) for t in ids):
            raise DatasetFormatError(path, n, "labels", f"expected label ids in [0, {len(names)}), got {row[1]!r}")
        if len(ids) == 1:
            items.append(make_item(path, n, row[0], names[int(ids[0])], label_map=label_map, label_field="labels"))
    return _finish(path, items, keep)


def read_empathetic_dialogues(path, *, label_map=None, keep="circumplex",
                              first_utterance_only: bool = True) -> list[EmotionItem]:
    """Empathetic Dialogues utterances (by default the first of each conversation), label = context."""
    path = require_file(path)
    lines = read_lines(path)
    try:
        header_line, header = next(lines)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected a header row)") from None
    table = Table(path, [h.strip() for h in header.split(",")], header_line, iter(()))
    require_columns(table, ED_COLUMNS)
    col = {c: table.columns.index(c) for c in ED_COLUMNS}
    width = max(col.values()) + 1
    mapping = _merged_map(ED_LABEL_MAP, label_map)
    items = []
    for n, text in lines:
        if not text.strip():
            continue
        parts = text.split(",")
        if len(parts) < width:
            raise DatasetFormatError(path, n, None,
                                     f"row has {len(parts)} comma-separated fields, the header needs {width}")
        idx = parts[col["utterance_idx"]].strip()
        if not idx.isdigit():
            raise DatasetFormatError(path, n, "utterance_idx", f"expected an integer, got {idx!r}")
        if first_utterance_only and int(idx) != 1:
            continue
        utterance = parts[col["utterance"]].replace("_comma_", ",")
        items.append(make_item(path, n, utterance, parts[col["context"]], label_map=mapping, text_field="utterance",
                               label_field="context"))
    return _finish(path, items, keep)


def read_superemotion(path, *, label_field: str = "labels_str", label_map=None, keep="circumplex",
                      sources=None) -> list[EmotionItem]:
    """SuperEmotion rows with exactly one label (of label_field), optionally only the given sources."""
    table = open_table(path)
    require_columns(table, ("text", label_field) + (("source",) if sources is not None else ()))
    wanted = None if sources is None else set(sources)
    items = []
    for n, row in table.rows:
        if wanted is not None and row.get("source") not in wanted:
            continue
        value = row.get(label_field)
        if isinstance(value, (list, tuple)):
            if len(value) != 1:
                if not value:
                    raise DatasetFormatError(table.path, n, label_field, "empty")
                continue
            value = value[0]
        items.append(make_item(table.path, n, row.get("text"), value, label_map=label_map, label_field=label_field))
    return _finish(table.path, items, keep)


READERS = {"table": load_labelled_table, "emolit": read_emolit, "goemotions": read_goemotions,
           "empathetic_dialogues": read_empathetic_dialogues, "superemotion": read_superemotion}


def _reader(dataset: str):
    if dataset not in READERS:
        raise ValueError(f"dataset: expected one of {DATASETS}, got {dataset!r}")
    return READERS[dataset]


def load_emotion_dataset(path, dataset: str, **options) -> list[EmotionItem]:
    """The items of one file in the format of `dataset` (one of DATASETS); options go to its reader
    (label_map, keep, and the reader's own: text_column, emotions_file, label_field, sources ...)."""
    return _reader(dataset)(path, **options)


def _find_split_file(folder: Path, patterns: tuple[str, ...], split: str, dataset: str) -> Path:
    found = []
    for where in (folder, folder / "data"):
        for pattern in patterns:
            found += [p for p in sorted(where.glob(pattern)) if p.is_file() and p not in found]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)} candidate"
        raise ValueError(f"data_dir: {what} {split} file for dataset {dataset!r} in {folder} (or its data/ "
                         f"subfolder); expected exactly one of {list(patterns)}"
                         + (f", found {[str(p) for p in found]}" if found else ""))
    return found[0]


def load_emotion_dir(data_dir, dataset: str, **options) -> tuple[list[EmotionItem], list[EmotionItem]]:
    """(train items, test items) of a dataset shipped with its own split: the train.* and test.* files
    of data_dir or data_dir/data (GoEmotions train.tsv / test.tsv, Empathetic Dialogues train.csv /
    test.csv, else train.<csv|tsv|txt|jsonl|parquet> or HF-style train-*.parquet / train-*.jsonl).
    ValueError naming the folder and the expected file names when one is missing or ambiguous."""
    reader = _reader(dataset)
    folder = Path(data_dir)
    if not folder.is_dir():
        raise ValueError(f"data_dir: {folder} is not a folder")
    train_names, test_names = SPLIT_FILES.get(dataset, DEFAULT_SPLIT_FILES)
    train = _find_split_file(folder, train_names, "train", dataset)
    test = _find_split_file(folder, test_names, "test", dataset)
    return reader(train, **options), reader(test, **options)


# ---- angles, checks, splits ----

def read_angles(path) -> dict[str, float]:
    """label -> angle in degrees from a table file with columns label, angle (a label given twice is an error)."""
    table = open_table(path)
    require_columns(table, ("label", "angle"))
    out: dict[str, float] = {}
    for n, row in table.rows:
        label = _field_str(table.path, n, "label", row.get("label"))
        if label in out:
            raise DatasetFormatError(table.path, n, "label", f"{label!r} given twice")
        out[label] = _score(table.path, n, "angle", row.get("angle"))
    if not out:
        raise DatasetFormatError(table.path, None, None, "no angles")
    return out


def resolve_angles(labels, angles_file=None) -> dict[str, float]:
    """Degrees per label (in the order given): from angles_file (columns label, angle) when it names the
    label (exactly, else case-insensitively), else from spherekit.data.emotion.ANGLES by name
    (case-insensitive). ValueError listing every label left without an angle."""
    given = read_angles(angles_file) if angles_file is not None else {}
    given_lower = {k.lower(): v for k, v in given.items()}
    out, missing = {}, []
    for name in dict.fromkeys(labels):
        key = str(name)
        angle = given.get(key, given_lower.get(key.lower(), ANGLES.get(key.lower())))
        if angle is None:
            missing.append(key)
        else:
            out[key] = float(angle)
    if missing:
        src = f" (not in {angles_file} either)" if angles_file is not None else ""
        raise ValueError(f"labels: no circumplex angle for {sorted(missing)}{src}; the circumplex names are "
                         f"{list(EMOTIONS)}; give the others with an angles file (a CSV/TSV with columns label, angle "
                         "in degrees; `spherekit reproduce circumplex --set angles_file=FILE`)")
    return out


def check_labelled(items, *, min_labels: int = 2, min_per_label: int = 2) -> dict[str, int]:
    """Texts per label; ValueError with the counts when there are fewer than min_labels distinct labels
    or a label has fewer than min_per_label texts."""
    counts = dict(Counter(it.label for it in items))
    if len(counts) < min_labels:
        raise ValueError(f"items: need at least {min_labels} distinct labels, got {len(counts)} "
                         f"(texts per label: {counts})")
    small = {k: v for k, v in counts.items() if v < min_per_label}
    if small:
        raise ValueError(f"items: labels with fewer than {min_per_label} texts: {small} (texts per label: {counts})")
    return counts


def _count(name: str, value, *, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive int{' or None' if allow_none else ''}, got {value!r}")
    return value


def _text_key(text: str) -> str:
    return " ".join(text.lower().split())


def _unambiguous(items) -> list[EmotionItem]:
    """Items in order, repeated texts (case and spacing ignored) kept once, texts with two labels dropped."""
    labels_of: dict[str, set] = {}
    for it in items:
        labels_of.setdefault(_text_key(it.text), set()).add(it.label)
    seen, out = set(), []
    for it in items:
        key = _text_key(it.text)
        if len(labels_of[key]) == 1 and key not in seen:
            seen.add(key)
            out.append(it)
    return out


def _label_order(labels) -> list[str]:
    labels = set(labels)
    return [e for e in EMOTIONS if e in labels] + sorted(labels - set(EMOTIONS))


def _by_label(items) -> dict[str, list[EmotionItem]]:
    out: dict[str, list[EmotionItem]] = {}
    for it in items:
        out.setdefault(it.label, []).append(it)
    return out


def _round_robin(chosen: dict[str, list[EmotionItem]], order: list[str], n: int) -> list[EmotionItem]:
    return [chosen[label][i] for i in range(n) for label in order]


def balanced_split(items, n_train_per_label: int | None, n_test_per_label: int, seed: int, *,
                   test_items=None) -> tuple[list[EmotionItem], list[EmotionItem]]:
    """A balanced, seeded, disjoint (train, test) split, both ordered label by label round-robin
    (circumplex labels in EMOTIONS order, then the others by name).

    Repeated texts are kept once and texts carrying two labels dropped (case and spacing ignored).
    Each label's texts are shuffled with random.Random(f"{seed}:split:{label}"); the first
    n_test_per_label are its test texts and train is the rest, cut to n_train_per_label per label
    (None: the smallest label's remainder). With test_items (a dataset's own test file) test is drawn
    from those instead and train from items, less any text also in test_items; both must carry the
    same labels. ValueError naming the argument when a label has too few texts."""
    n_test = _count("n_test_per_label", n_test_per_label)
    n_train = _count("n_train_per_label", n_train_per_label, allow_none=True)
    pool = _by_label(_unambiguous(items))
    if not pool:
        raise ValueError("items: no texts to split")
    rng = {label: random.Random(f"{seed}:split:{label}") for label in pool}
    if test_items is None:
        shuffled = {label: rng[label].sample(v, len(v)) for label, v in pool.items()}
        test_pool = {label: v[:n_test] for label, v in shuffled.items()}
        rest = {label: v[n_test:] for label, v in shuffled.items()}
    else:
        test_pool = _by_label(_unambiguous(test_items))
        if set(test_pool) != set(pool):
            raise ValueError(f"test_items: labels {sorted(test_pool)} differ from the items' labels {sorted(pool)}")
        held = {_text_key(it.text) for v in test_pool.values() for it in v}
        test_pool = {label: rng[label].sample(v, min(n_test, len(v))) for label, v in test_pool.items()}
        rest = {label: rng[label].sample(v, len(v)) for label, v in pool.items()}
        rest = {label: [it for it in v if _text_key(it.text) not in held] for label, v in rest.items()}
    short = {label: len(v) for label, v in test_pool.items() if len(v) < n_test}
    if short:
        raise ValueError(f"n_test_per_label: {n_test} test texts per label requested, but these labels have "
                         f"fewer{' in test_items' if test_items is not None else ''}: {short}")
    sizes = {label: len(v) for label, v in rest.items()}
    k = n_train if n_train is not None else min(sizes.values())
    if k < 1:
        raise ValueError(f"n_test_per_label: {n_test} test texts per label leave no train text for "
                         f"{[label for label, n in sizes.items() if n == 0]} (train texts per label: {sizes})")
    short = {label: n for label, n in sizes.items() if n < k}
    if short:
        raise ValueError(f"n_train_per_label: {k} train texts per label requested, but after the test draw "
                         f"these labels have fewer: {short}")
    order = _label_order(pool)
    return _round_robin(rest, order, k), _round_robin(test_pool, order, n_test)
