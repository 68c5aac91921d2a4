"""The compositional experiment's data paths: the released files through --data-dir, each in its exact layout
(radoslavralev/limitations-text-retrieval data/: nq_triplets_100k.csv with anchor, positive, negative;
unified_negatives_{train,test,full}.csv with sentence1, sentence2, category; unified_negatives_with_nq_train.csv with
anchor, positive, negative, category, its structural rows having anchor == positive; NanoBEIR in the BEIR layout),
failed edits dropped and counted, the 19.2% structural mixture and its shortfall error, and the bad-input errors."""

import json

import pytest

from spherekit.experiments.compositional.data import (RetrievalSet, _mixture, load_data, read_nearmiss_csv,
                                                      read_triplets_csv)
from spherekit.experiments.compositional.spec import CompositionalConfig

CATEGORIES = ("cannot_negation", "binding_negation", "spatial")


def _pairs(i):
    """The three released categories' pairs of anchor i."""
    return [(f"the cat {i} can sit on the mat today", f"the cat {i} cannot sit on the mat today", "cannot_negation"),
            (f"the red box {i} is near the blue cup", f"the blue box {i} is near the red cup", "binding_negation"),
            (f"the lamp {i} hangs above the old table", f"the lamp {i} hangs below the old table", "spatial")]


def _csv(path, header, rows):
    with path.open("w", newline="") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(row) + "\n")


def _triplets(n=40):
    return [(f"question {i} about topic {i}", f"passage {i} on topic {i}", f"passage on another topic {i + 1}")
            for i in range(n)]


def _failed():
    return [("a sentence long enough to pass", "negatives_placeholder", "spatial"),
            ("another sentence long enough", "too short", "spatial")]


def _nanobeir(root):
    nano = root / "nanobeir" / "NanoToy"
    (nano / "qrels").mkdir(parents=True)
    (nano / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"doc {i}"})
                                                 for i in range(6)) + "\n")
    (nano / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"})
                                                  for i in range(3)) + "\n")
    (nano / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq1\td2\t1\n")


def _config(root, **kw):
    return CompositionalConfig(data_dir=str(root), n_train_triplets=36, n_reference_pairs=4, seeds=(42,), **kw)


def _check_common(data, n_triplets=36):
    assert len(data.train_a) == n_triplets and len(data.reference_pos) == len(data.reference_neg) == 4
    assert {t["family"] for t in data.nearmiss_test} == {"negation", "binding", "spatial"}
    (toy,) = data.suite
    assert toy.name == "NanoToy" and len(toy.queries) == 2 and len(toy.corpus) == 6  # q2 has no judgement
    assert sorted(map(len, toy.relevant)) == [1, 2]
    struct = [r for r in data.train_b if r[0] == r[1]]
    assert all(r[0] != r[2] for r in struct) and len(data.train_b) == n_triplets + len(struct)
    assert len(struct) == round(0.192 / 0.808 * n_triplets) == data.stats["structural_triplets"]


def test_released_triplets_and_the_authors_split(tmp_path):
    _csv(tmp_path / "nq_triplets_100k.csv", ("anchor", "positive", "negative"), _triplets())
    _csv(tmp_path / "unified_negatives_train.csv", ("sentence1", "sentence2", "category"),
         [p for i in range(8) for p in _pairs(i)] + _failed())
    _csv(tmp_path / "unified_negatives_test.csv", ("sentence1", "sentence2", "category"),
         [p for i in range(8, 10) for p in _pairs(i)] + _failed()[:1])
    _nanobeir(tmp_path)
    data = load_data(_config(tmp_path), tmp_path / "out")
    _check_common(data)
    assert data.stats["dropped"] == {"empty_or_failed_edit_rows": 3}
    assert data.stats["nearmiss_train_pairs"] == 24 and len(data.nearmiss_test) == 6  # the authors' 80/20
    assert data.stats["files"] == ["nq_triplets_100k.csv", "unified_negatives_test.csv",
                                   "unified_negatives_train.csv"]
    assert all(t["positive"] == t["anchor"] for t in data.nearmiss_test)  # pairs: the anchor is its own positive
    assert load_data(_config(tmp_path), tmp_path / "out").train_a == data.train_a  # cached


def test_released_full_file_is_split_by_anchor(tmp_path):
    _csv(tmp_path / "nq_triplets_100k.csv", ("anchor", "positive", "negative", "category"),
         [(*t, "nq") for t in _triplets()])
    _csv(tmp_path / "unified_negatives_full.csv", ("sentence1", "sentence2", "category", "source_id"),
         [(*p, f"mrpc-{i}") for i in range(10) for p in _pairs(i)] + [(*f, "x") for f in _failed()])
    _nanobeir(tmp_path)
    data = load_data(_config(tmp_path), tmp_path / "out")
    _check_common(data)
    assert data.stats["dropped"] == {"empty_or_failed_edit_rows": 2}
    n_test = len(data.nearmiss_test)
    assert n_test == pytest.approx(0.2 * 30, abs=3) and data.stats["nearmiss_train_pairs"] == 30 - n_test
    train_anchors = {r[0] for r in data.train_b if r[0] == r[1]}
    assert not train_anchors & {t["anchor"] for t in data.nearmiss_test}  # split by anchor


def test_released_mixture_gives_the_triplets_and_the_training_pairs(tmp_path):
    """unified_negatives_with_nq_train.csv alone (with the test file), as the released verifier script reads it."""
    structural = [(a, a, b, c) for i in range(8) for a, b, c in _pairs(i)]
    _csv(tmp_path / "unified_negatives_with_nq_train.csv", ("anchor", "positive", "negative", "category"),
         [(*t, "nq") for t in _triplets()] + structural + [("", "p", "n", "nq")])
    _csv(tmp_path / "unified_negatives_test.csv", ("sentence1", "sentence2", "category"),
         [p for i in range(8, 10) for p in _pairs(i)])
    _nanobeir(tmp_path)
    data = load_data(_config(tmp_path), tmp_path / "out")
    _check_common(data)
    assert data.stats["nearmiss_train_pairs"] == 24 and data.stats["dropped"] == {"empty_or_failed_edit_rows": 1}
    assert not any(r[0] == r[1] for r in data.train_a)  # Model A: the NQ rows only
    triplets, pairs, dropped = read_triplets_csv(tmp_path / "unified_negatives_with_nq_train.csv")
    assert (len(triplets), len(pairs), dropped) == (40, 24, 1)
    assert {f for _, _, f in pairs} == {"negation", "binding", "spatial"}


def test_mixture_share_and_its_shortfall():
    cfg = CompositionalConfig()
    triplets = [[f"a{i}", f"p{i}", f"n{i}"] for i in range(1000)]
    pairs = [(f"s{i}", f"t{i}", "negation") for i in range(500)]
    rows = _mixture(triplets, pairs, cfg, 0)
    struct = sum(r[0] == r[1] for r in rows)
    assert struct == round(0.192 / 0.808 * 1000) and struct / len(rows) == pytest.approx(0.192, abs=1e-3)
    with pytest.raises(ValueError, match=r"Model B needs 238 structural triplets \(19.2% of 1,238 rows\) but only "
                                         r"200 near-miss training pairs exist: raise nearmiss_per_family"):
        _mixture(triplets, pairs[:200], cfg, 0)


def test_a_released_layout_with_too_few_pairs_is_an_error(tmp_path):
    _csv(tmp_path / "nq_triplets_100k.csv", ("anchor", "positive", "negative"), _triplets())
    _csv(tmp_path / "unified_negatives_train.csv", ("sentence1", "sentence2", "category"), _pairs(0))
    _csv(tmp_path / "unified_negatives_test.csv", ("sentence1", "sentence2", "category"), _pairs(1))
    _nanobeir(tmp_path)
    with pytest.raises(ValueError, match="Model B needs 9 structural triplets .* only 3 near-miss training pairs"):
        load_data(_config(tmp_path), tmp_path / "out")


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="retrieval set 'NanoX' is empty"):
        RetrievalSet("NanoX", [], ["doc"], [])
    with pytest.raises(ValueError, match="retrieval set 'NanoY': every query needs relevant documents"):
        RetrievalSet("NanoY", ["q0", "q1"], ["d0"], [[0], []])
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence1,sentence2\na,b\n")
    with pytest.raises(ValueError, match=r"bad.csv: missing column\(s\) \['category'\]"):
        read_nearmiss_csv(bad)
    bad.write_text("sentence1,sentence2,category\nthe dog bit the man today,the man bit the dog today,other\n")
    with pytest.raises(ValueError, match="line 2: category 'other'"):
        read_nearmiss_csv(bad)
    bad.write_text("anchor,negative\na,b\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['positive'\]"):
        read_triplets_csv(bad)
    with pytest.raises(FileNotFoundError, match="no nq_triplets_100k.csv"):
        load_data(CompositionalConfig(data_dir=str(tmp_path)), tmp_path / "out")
    _csv(tmp_path / "nq_triplets_100k.csv", ("anchor", "positive", "negative"), _triplets())
    with pytest.raises(FileNotFoundError, match="no unified_negatives_test.csv"):
        load_data(CompositionalConfig(data_dir=str(tmp_path)), tmp_path / "out")
    _csv(tmp_path / "unified_negatives_test.csv", ("sentence1", "sentence2", "category"), _pairs(1))
    with pytest.raises(FileNotFoundError, match="no unified_negatives_train.csv"):
        load_data(CompositionalConfig(data_dir=str(tmp_path)), tmp_path / "out")
