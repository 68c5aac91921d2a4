"""Labelled emotion tables ("Mapping the Circumplex of Affect" datasets and plain tables) on small fixture
files in their published formats; every error names the file and the line / field / column."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from spherekit.data.datasets import DatasetFormatError
from spherekit.data.emotion import ANGLES, EMOTIONS, EmotionItem
from spherekit.data.labelled import (
    DATASETS, balanced_split, check_labelled, load_emotion_dataset, load_emotion_dir, load_labelled_table,
    read_angles, read_emolit, read_empathetic_dialogues, read_goemotions, read_superemotion, resolve_angles,
)

FIX = Path(__file__).parent / "fixtures" / "labelled"


def _raises(match_parts, fn, *args, **kwargs):
    """Call fn, expect a ValueError whose message contains every part (file name, line, field ...)."""
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    for part in match_parts:
        assert str(part) in msg, (part, msg)
    return info.value


# ---- plain tables ----

def test_table_csv_with_label_map():
    path = FIX / "table" / "table.csv"
    items = load_labelled_table(path, label_map={"afraid": "fear", "faithful": "trust", "joyful": "joy"})
    assert [i.label for i in items] == ["joy", "fear", "trust", "joy", "fear", "trust", "pride"]
    assert items[0] == EmotionItem("I laughed all day, truly", "joy", "table.csv:2")  # quoted comma kept
    assert [i.provenance for i in items][-1] == "table.csv:8"
    circ = load_labelled_table(path, label_map={"afraid": "fear", "faithful": "trust", "joyful": "joy"},
                               keep="circumplex")
    assert "pride" not in {i.label for i in circ} and len(circ) == 6
    raw = load_labelled_table(path)
    assert {i.label for i in raw} == {"joyful", "afraid", "faithful", "pride"}


def test_table_tsv_txt_and_jsonl(tmp_path):
    tsv = load_labelled_table(FIX / "table" / "table.tsv")
    assert [i.label for i in tsv] == ["joy", "fear", "boredom", "excitement"]
    assert tsv[2].provenance == "table.tsv:4"
    txt = load_labelled_table(FIX / "table" / "table.txt")
    assert [(i.text, i.label) for i in txt] == [("The lake lay still and quiet", "calmness"),
                                                ("At last the pain was gone", "relief")]
    jl = load_labelled_table(FIX / "emolit" / "emolit_label.jsonl")
    assert [i.label for i in jl] == ["joy", "sadness", "calmness", "boredom"]
    assert jl[1].provenance == "emolit_label.jsonl:2"
    upper = tmp_path / "t.csv"
    upper.write_text("sentence,emotion\nHello,JOY\nBye,Fear\n", encoding="utf-8")
    items = load_labelled_table(upper, text_column="sentence", label_column="emotion")
    assert [i.label for i in items] == ["joy", "fear"]  # circumplex names matched case-insensitively


def test_table_errors():
    e = _raises(["missing_column.csv", "'label'", "columns present", "'emotion'"],
                load_labelled_table, FIX / "table" / "missing_column.csv")
    assert isinstance(e, DatasetFormatError) and e.field == "label"
    e = _raises(["empty_text.csv:3", "'text'", "empty"], load_labelled_table, FIX / "table" / "empty_text.csv")
    assert (e.line, e.field) == (3, "text")
    e = _raises(["empty_label.tsv:3", "'label'"], load_labelled_table, FIX / "table" / "empty_label.tsv")
    assert (e.line, e.field) == (3, "label")
    _raises(["bad_row.csv:2", "4 fields"], load_labelled_table, FIX / "table" / "bad_row.csv")
    _raises(["no_label.jsonl", "'label'", "columns present", "'text'"], load_labelled_table,
            FIX / "table" / "no_label.jsonl")
    _raises(["table.xlsx", "extension", ".csv"], load_labelled_table, FIX / "table" / "table.xlsx")
    _raises(["table.tsv", "no labelled rows", "trust"], load_labelled_table, FIX / "table" / "table.tsv",
            keep={"trust"})
    with pytest.raises(FileNotFoundError, match="nowhere.csv"):
        load_labelled_table(FIX / "table" / "nowhere.csv")
    _raises(["keep"], load_labelled_table, FIX / "table" / "table.tsv", keep="all")


# ---- dataset formats ----

def test_emolit_scores_and_label_column():
    items = read_emolit(FIX / "emolit" / "emolit.tsv")
    # highest score wins; admiration (row 105) has no circumplex name and is dropped
    assert [(i.label, i.provenance) for i in items] == [
        ("joy", "emolit.tsv:2"), ("sadness", "emolit.tsv:3"), ("fear", "emolit.tsv:4"), ("love", "emolit.tsv:5")]
    assert items[1].text == "He wept, alone, by the grave."
    every = read_emolit(FIX / "emolit" / "emolit.tsv", keep=None)
    assert every[-1].label == "admiration"
    labelled = read_emolit(FIX / "emolit" / "emolit_label.jsonl")
    assert [i.label for i in labelled] == ["joy", "sadness", "calmness", "boredom"]
    assert load_emotion_dataset(FIX / "emolit" / "emolit.tsv", "emolit") == items


def test_emolit_errors():
    e = _raises(["bad_score.tsv:2", "'sadness'", "number"], read_emolit, FIX / "emolit" / "bad_score.tsv")
    assert (e.line, e.field) == (2, "sadness")
    _raises(["no_scores.tsv", "'label'", "score columns", "columns present"], read_emolit,
            FIX / "emolit" / "no_scores.tsv")


def test_goemotions_single_label_rows():
    items = read_goemotions(FIX / "goemotions" / "train.tsv")
    # row 1 has two labels (skipped), row 4 is neutral (no circumplex name)
    assert [(i.label, i.provenance) for i in items] == [
        ("sadness", "train.tsv:2"), ("fear", "train.tsv:3"), ("surprise", "train.tsv:5"), ("relief", "train.tsv:6")]
    assert [i.label for i in read_goemotions(FIX / "goemotions" / "train.tsv", keep=None)][-3] == "neutral"
    names = FIX / "goemotions" / "emotions.txt"
    assert read_goemotions(FIX / "goemotions" / "train.tsv", emotions_file=names) == items
    mapped = read_goemotions(FIX / "goemotions" / "train.tsv", keep=None, label_map={"neutral": "calmness"})
    assert "calmness" in {i.label for i in mapped}


def test_goemotions_errors(tmp_path):
    e = _raises(["bad_ids.tsv:1", "'labels'", "[0, 28)"], read_goemotions, FIX / "goemotions" / "bad_ids.tsv")
    assert (e.line, e.field) == (1, "labels")
    _raises(["bad_fields.tsv:1", "3 tab-separated fields"], read_goemotions, FIX / "goemotions" / "bad_fields.tsv")
    e = _raises(["empty_text.tsv:1", "'text'"], read_goemotions, FIX / "goemotions" / "empty_text.tsv")
    assert e.field == "text"
    empty_names = tmp_path / "names.txt"
    empty_names.write_text("\n", encoding="utf-8")
    _raises(["names.txt", "no emotion names"], read_goemotions, FIX / "goemotions" / "train.tsv",
            emotions_file=empty_names)


def test_empathetic_dialogues_first_utterances():
    items = read_empathetic_dialogues(FIX / "empathetic_dialogues" / "train.csv")
    # utterance 2 skipped, "sentimental" has no circumplex name, faithful / trusting -> trust, _comma_ -> ","
    assert [(i.label, i.provenance) for i in items] == [
        ("joy", "train.csv:2"), ("fear", "train.csv:4"), ("trust", "train.csv:5"), ("trust", "train.csv:7")]
    assert items[0].text == "I finally got the job I wanted, I am thrilled!"
    every = read_empathetic_dialogues(FIX / "empathetic_dialogues" / "train.csv", first_utterance_only=False, keep=None)
    assert len(every) == 6 and every[1].text == "Congratulations, that is great news."
    own = read_empathetic_dialogues(FIX / "empathetic_dialogues" / "train.csv", keep=None,
                                    label_map={"sentimental": "love"})
    assert "love" in {i.label for i in own} and "trust" in {i.label for i in own}


def test_empathetic_dialogues_errors():
    d = FIX / "empathetic_dialogues"
    e = _raises(["bad_idx.csv:2", "'utterance_idx'", "integer"], read_empathetic_dialogues, d / "bad_idx.csv")
    assert (e.line, e.field) == (2, "utterance_idx")
    e = _raises(["empty_context.csv:2", "'context'"], read_empathetic_dialogues, d / "empty_context.csv")
    assert e.field == "context"
    e = _raises(["empty_utterance.csv:2", "'utterance'"], read_empathetic_dialogues, d / "empty_utterance.csv")
    assert e.field == "utterance"
    _raises(["missing_column.csv", "'utterance'", "columns present"], read_empathetic_dialogues,
            d / "missing_column.csv")
    _raises(["short_row.csv:2", "3 comma-separated fields"], read_empathetic_dialogues, d / "short_row.csv")


def test_superemotion_rows():
    path = FIX / "superemotion" / "data" / "train-00000-of-00001.jsonl"
    items = read_superemotion(path)
    # neutral dropped, the two-label row skipped
    assert [(i.label, i.provenance) for i in items] == [
        ("joy", "train-00000-of-00001.jsonl:1"), ("surprise", "train-00000-of-00001.jsonl:2"),
        ("anger", "train-00000-of-00001.jsonl:5")]
    subset = read_superemotion(path, sources=("GoEmotions", "CrowdFlower"))
    assert [i.label for i in subset] == ["joy", "surprise"]
    source_labels = read_superemotion(path, label_field="labels_source", label_map={"happiness": "joy"})
    assert source_labels[0].label == "joy"


def test_superemotion_errors():
    d = FIX / "superemotion"
    e = _raises(["empty_text.jsonl:1", "'text'"], read_superemotion, d / "empty_text.jsonl")
    assert e.field == "text"
    e = _raises(["empty_labels.jsonl:1", "'labels_str'", "empty"], read_superemotion, d / "empty_labels.jsonl")
    assert e.field == "labels_str"
    _raises(["missing_labels_str.jsonl", "'labels_str'", "columns present"], read_superemotion,
            d / "missing_labels_str.jsonl")
    _raises(["bad_json.jsonl:2", "JSON"], read_superemotion, d / "bad_json.jsonl")


def test_superemotion_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [json.loads(line) for line in
            (FIX / "superemotion" / "data" / "train-00000-of-00001.jsonl").read_text().splitlines()]
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    items = read_superemotion(path)
    assert [(i.label, i.provenance) for i in items] == [
        ("joy", f"{path.name}:1"), ("surprise", f"{path.name}:2"), ("anger", f"{path.name}:5")]


def test_dispatch():
    assert DATASETS == ("table", "emolit", "goemotions", "empathetic_dialogues", "superemotion")
    tsv = FIX / "table" / "table.tsv"
    assert load_emotion_dataset(tsv, "table") == load_labelled_table(tsv)
    assert load_emotion_dataset(FIX / "goemotions" / "train.tsv", "goemotions")[0].label == "sadness"
    _raises(["dataset", "twitter", "goemotions"], load_emotion_dataset, FIX / "table" / "table.tsv", "twitter")


def test_load_emotion_dir():
    train, test = load_emotion_dir(FIX / "goemotions", "goemotions")
    assert [i.label for i in test] == ["love", "anger"] and test[0].provenance == "test.tsv:1"
    assert len(train) == 4
    train, test = load_emotion_dir(FIX / "empathetic_dialogues", "empathetic_dialogues")
    assert [i.label for i in test] == ["sadness", "anger"]
    train, test = load_emotion_dir(FIX / "superemotion", "superemotion")  # HF layout under data/
    assert [i.label for i in test] == ["love", "fear"]
    train, test = load_emotion_dir(FIX / "table", "table")
    assert Counter(i.label for i in train) == {"joy": 3, "fear": 3} and len(test) == 2
    _raises(["data_dir", "no_test", "no test file", "test.csv"], load_emotion_dir, FIX / "no_test", "table")
    _raises(["data_dir", "emolit", "no train file", "train.tsv"], load_emotion_dir, FIX / "emolit", "emolit")
    _raises(["data_dir", "not a folder"], load_emotion_dir, FIX / "nowhere", "table")
    _raises(["dataset"], load_emotion_dir, FIX / "table", "nope")


# ---- angles ----

def test_resolve_angles():
    assert resolve_angles(["joy", "Fear", "trust"]) == {"joy": 30.0, "Fear": 150.0, "trust": 330.0}
    angles = resolve_angles(["pride", "joy", "fear"], angles_file=FIX / "angles.csv")
    assert angles == {"pride": 45.0, "joy": 35.0, "fear": ANGLES["fear"]}  # the file adds and overrides
    assert read_angles(FIX / "angles.csv") == {"pride": 45.0, "Joy": 35.0}


def test_resolve_angles_errors():
    e = _raises(["'pride'", "'shame'", "--set angles_file=FILE"], resolve_angles, ["joy", "pride", "shame"])
    assert "'joy'" not in str(e).split("circumplex names")[0]
    _raises(["'shame'", "angles.csv", "--set angles_file=FILE"], resolve_angles, ["pride", "shame"],
            angles_file=FIX / "angles.csv")
    e = _raises(["angles_bad.tsv:2", "'angle'", "number"], resolve_angles, ["pride"],
                angles_file=FIX / "angles_bad.tsv")
    assert (e.line, e.field) == (2, "angle")
    _raises(["angles_twice.csv:3", "'label'", "twice"], read_angles, FIX / "angles_twice.csv")
    _raises(["missing_column.csv", "'angle'", "columns present"], read_angles, FIX / "table" / "missing_column.csv")


# ---- checks and splits ----

def _items(counts: dict[str, int]) -> list[EmotionItem]:
    return [EmotionItem(f"{label} text {i}", label, f"t.csv:{i}") for label, n in counts.items() for i in range(n)]


def test_check_labelled():
    assert check_labelled(_items({"joy": 2, "fear": 3})) == {"joy": 2, "fear": 3}
    _raises(["at least 2 distinct labels", "{'joy': 5}"], check_labelled, _items({"joy": 5}))
    _raises(["fewer than 2 texts", "{'fear': 1}", "'joy': 4"], check_labelled, _items({"joy": 4, "fear": 1}))
    _raises(["fewer than 5 texts"], check_labelled, _items({"joy": 4, "fear": 5}), min_per_label=5)
    _raises(["at least 3 distinct"], check_labelled, _items({"joy": 4, "fear": 5}), min_labels=3)


def test_balanced_split_properties():
    items = _items({"fear": 12, "joy": 10, "pride": 15})
    train, test = balanced_split(items, None, 3, seed=0)
    assert Counter(i.label for i in test) == {"joy": 3, "fear": 3, "pride": 3}
    assert Counter(i.label for i in train) == {"joy": 7, "fear": 7, "pride": 7}  # smallest remainder
    assert not {i.text for i in train} & {i.text for i in test}
    assert [i.label for i in test[:3]] == ["joy", "fear", "pride"]  # circumplex order, then by name
    assert balanced_split(items, None, 3, seed=0) == (train, test)
    assert balanced_split(items, None, 3, seed=1) != (train, test)
    train5, test5 = balanced_split(items, 5, 3, seed=0)
    assert test5 == test and Counter(i.label for i in train5) == {"joy": 5, "fear": 5, "pride": 5}


def test_balanced_split_dedupes_and_drops_conflicts():
    items = _items({"joy": 4, "fear": 4}) + [EmotionItem("JOY text 0", "joy", "x:1"),
                                             EmotionItem("joy text 1", "fear", "x:2")]
    train, test = balanced_split(items, None, 1, seed=0)
    texts = [i.text.lower() for i in train + test]
    assert len(texts) == len(set(texts)) and "joy text 1" not in texts
    assert Counter(i.label for i in train) == {"joy": 2, "fear": 2}


def test_balanced_split_with_own_test_file():
    train_items = _items({"joy": 6, "fear": 5})
    test_items = [EmotionItem("joy text 0", "joy", "test:1"), EmotionItem("other fear", "fear", "test:2"),
                  EmotionItem("other joy", "joy", "test:3"), EmotionItem("more fear", "fear", "test:4")]
    train, test = balanced_split(train_items, None, 2, seed=0, test_items=test_items)
    assert {i.provenance.split(":")[0] for i in test} == {"test"} and len(test) == 4
    assert "joy text 0" not in {i.text for i in train}  # a test text never trains
    assert Counter(i.label for i in train) == {"joy": 5, "fear": 5}
    _raises(["test_items", "labels"], balanced_split, train_items, None, 1, 0, test_items=test_items[:1])
    _raises(["n_test_per_label", "in test_items", "'joy': 2"], balanced_split, train_items, None, 3, 0,
            test_items=test_items)


def test_balanced_split_errors():
    items = _items({"joy": 5, "fear": 3})
    _raises(["n_test_per_label", "4 test texts", "{'fear': 3}"], balanced_split, items, None, 4, 0)
    _raises(["n_test_per_label", "no train text", "fear"], balanced_split, items, None, 3, 0)
    _raises(["n_train_per_label", "3 train texts", "{'fear': 2}"], balanced_split, items, 3, 1, 0)
    _raises(["n_test_per_label", "positive int"], balanced_split, items, None, 0, 0)
    _raises(["n_train_per_label", "positive int or None"], balanced_split, items, 0, 1, 0)
    _raises(["n_train_per_label"], balanced_split, items, True, 1, 0)
    _raises(["items", "no texts"], balanced_split, [], None, 1, 0)


def test_circumplex_names_are_the_emotion_set():
    assert set(ANGLES) == set(EMOTIONS)
