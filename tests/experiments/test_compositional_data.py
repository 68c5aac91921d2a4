"""The compositional experiment's data paths: the released layouts through --data-dir (NQ triplets CSV, near-miss
CSV in the released columns with failed edits dropped and counted, NanoBEIR in the BEIR layout), the 19.2%
structural mixture, and the bad-input errors (empty retrieval set, queries without relevant documents, bad
near-miss columns / categories)."""

import json

import pytest

from spherekit.experiments.compositional.spec import CompositionalConfig
from spherekit.experiments.compositional.data import RetrievalSet, _mixture, load_data, read_nearmiss_csv


def _write_dir(root):
    with (root / "nq_triplets.csv").open("w") as f:
        f.write("anchor,positive,negative\n")
        for i in range(40):
            f.write(f"question {i} about topic {i},passage {i} on topic {i},passage on another topic {i + 1}\n")
    with (root / "nearmiss.csv").open("w") as f:
        f.write("sentence1,sentence2,category\n")
        for i in range(10):
            f.write(f"the cat {i} can sit on the mat today,the cat {i} cannot sit on the mat today,cannot_negation\n")
            f.write(f"the red box {i} is near the blue cup,the blue box {i} is near the red cup,binding_negation\n")
            f.write(f"the lamp {i} hangs above the old table,the lamp {i} hangs below the old table,spatial\n")
        f.write("a sentence long enough to pass,negatives_placeholder,spatial\n")
        f.write("another sentence long enough,too short,spatial\n")
    nano = root / "nanobeir" / "NanoToy"
    (nano / "qrels").mkdir(parents=True)
    (nano / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"doc {i}"})
                                                 for i in range(6)) + "\n")
    (nano / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"})
                                                  for i in range(3)) + "\n")
    (nano / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq1\td2\t1\n")


def test_data_dir_layouts(tmp_path):
    _write_dir(tmp_path)
    cfg = CompositionalConfig(data_dir=str(tmp_path), n_train_triplets=36, n_reference_pairs=4, seeds=(42,))
    data = load_data(cfg, tmp_path / "out")
    assert data.stats["dropped"] == {"nearmiss_failed_edits": 2}
    assert len(data.train_a) == 36 and len(data.reference_pos) == len(data.reference_neg) == 4
    assert {t["family"] for t in data.nearmiss_test} <= {"negation", "binding", "spatial"}
    n_test = len(data.nearmiss_test)
    assert n_test == pytest.approx(0.2 * 30, abs=1) and data.stats["nearmiss_train_pairs"] == 30 - n_test
    (toy,) = data.suite
    assert toy.name == "NanoToy" and len(toy.queries) == 2 and len(toy.corpus) == 6  # q2 has no judgement
    assert sorted(map(len, toy.relevant)) == [1, 2]
    struct = [r for r in data.train_b if r[0] == r[1]]
    assert all(r[0] != r[2] for r in struct) and len(data.train_b) == 36 + len(struct)
    assert load_data(cfg, tmp_path / "out").train_a == data.train_a  # cached


def test_mixture_share():
    cfg = CompositionalConfig()
    triplets = [[f"a{i}", f"p{i}", f"n{i}"] for i in range(1000)]
    pairs = [(f"s{i}", f"t{i}", "negation") for i in range(500)]
    rows = _mixture(triplets, pairs, cfg, 0)
    struct = sum(r[0] == r[1] for r in rows)
    assert struct == round(0.192 / 0.808 * 1000) and struct / len(rows) == pytest.approx(0.192, abs=1e-3)


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
    with pytest.raises(FileNotFoundError, match="no nq_triplets"):
        load_data(CompositionalConfig(data_dir=str(tmp_path)), tmp_path / "out")
