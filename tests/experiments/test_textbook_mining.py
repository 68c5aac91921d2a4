"""Hard-negative mining of the textbook reproduction: labelled positives are never returned, top_k and
num_negatives are respected (BM25 and model-mined), round 2 mines with the model round 1 trained, and an
interrupted chain resumes after its last finished round with the same result as an uninterrupted one."""

import dataclasses
import random
import types
from pathlib import Path

import numpy as np
import pytest

from spherekit.experiments.textbook import mining
from spherekit.experiments.textbook.data import Retrieval, retrieval_from_pairs
from spherekit.experiments.textbook.evaluate import embed
from spherekit.experiments.textbook.sections.listings import chapter_mine_hard_negatives
from spherekit.experiments.textbook.spec import EXPERIMENT

CORPUS = [
    "a domestic dog kept as a pet",          # 0: positive of "dog"
    "a young dog",                           # 1: BM25 hit for "dog"
    "a dog trained to hunt dog dog",         # 2: the strongest BM25 hit for "dog"
    "a small cat",                           # 3: positive of "cat"
    "feline animal like a cat",              # 4: positive of "cat"
    "the price of milk",                     # 5
    "a wild cat of the mountains",           # 6: BM25 hit for "cat"
    "work at the office",                    # 7
]


@pytest.fixture
def data():
    return Retrieval(["dog", "cat"], CORPUS, [{0}, {3, 4}])


def cfg(**kw):
    return dataclasses.replace(EXPERIMENT.make_config("tiny"), **kw)


def test_retrieval_from_pairs_groups_positives_and_dedupes_passages():
    r = retrieval_from_pairs([("bank", "a river side"), ("bank", "a money house"), ("shore", "a river side")], ["x"])
    assert r.queries == ["bank", "shore"] and r.corpus == ["a river side", "a money house", "x"]
    assert r.relevant == [{0, 1}, {0}]


def test_bm25_excludes_positives_and_respects_top_k(data):
    negs, added = mining.bm25_negatives(None, data, cfg(top_k=8, num_negatives=2), random.Random(0))
    assert negs[0] == [2, 1]                                  # the best BM25 non-positives of "dog", best first
    assert negs[1][0] == 6 and len(negs[1]) == 2 and not set(negs[1]) & {3, 4}
    assert added == 1                                         # "cat" has one BM25 non-positive: one random added
    # top_k = 1: at most one BM25 candidate per query (a positive one is dropped), the rest random
    few = types.SimpleNamespace(top_k=1, num_negatives=2)
    negs, added = mining.bm25_negatives(None, data, few, random.Random(0))
    assert negs[0][0] == 2 and all(len(n) == 2 for n in negs) and added >= 2
    assert 0 not in negs[0] and not set(negs[1]) & {3, 4}


def test_random_negatives_never_positive(data):
    for seed in range(20):
        negs, _ = mining.random_negatives(None, data, cfg(num_negatives=5), random.Random(seed))
        assert len(negs[0]) == 5 and 0 not in negs[0] and not set(negs[1]) & {3, 4}
        assert all(len(set(n)) == len(n) for n in negs)


def test_model_negatives_are_the_most_similar_non_positives(backbone, data):
    c = cfg(top_k=30, num_negatives=3, mining_margin=0.0)  # the listing's rule (the margin: below)
    negs, added = mining.model_negatives(backbone, data, c, random.Random(0))
    sims = (embed(backbone, data.queries, c) @ embed(backbone, data.corpus, c).T).numpy()
    for q, rel in enumerate(data.relevant):
        order = [int(i) for i in np.argsort(-sims[q], kind="stable") if int(i) not in rel]
        assert negs[q] == order[:3] and not set(negs[q]) & rel
    assert added == 0
    # the chapter's listing gives the same lists
    listing = chapter_mine_hard_negatives(backbone, data.queries, data.corpus, dict(enumerate(data.relevant)), 30, 3)
    assert [listing[0], listing[1]] == negs


def test_model_negatives_respect_top_k(backbone, data):
    # top_k = 3: negatives come from the 3 most similar non-positive passages; 3 wanted, so none is random
    negs, added = mining.model_negatives(backbone, data, cfg(top_k=3, num_negatives=3, mining_margin=0.0),
                                         random.Random(0))
    sims = (embed(backbone, data.queries, cfg()) @ embed(backbone, data.corpus, cfg()).T).numpy()
    for q, rel in enumerate(data.relevant):
        order = [int(i) for i in np.argsort(-sims[q], kind="stable") if int(i) not in rel]
        assert negs[q] == order[:3]


def test_training_rows_one_per_positive(data):
    cols = mining.training_rows(data, [[2, 1], [6, 5]], 2)
    assert cols["anchor"] == ["dog", "cat", "cat"]
    assert cols["positive"] == [CORPUS[0], CORPUS[3], CORPUS[4]]
    assert cols["negative_1"] == [CORPUS[2], CORPUS[6], CORPUS[6]] and cols["negative_2"][0] == CORPUS[1]


def test_round_two_mines_with_the_model_round_one_trained(data, monkeypatch):
    seen = []

    def spy(name):
        def miner(model, d, c, rng):
            seen.append((name, model))
            return [[i for i in range(len(d.corpus)) if i not in rel][:c.num_negatives] for rel in d.relevant], 0
        return miner

    monkeypatch.setitem(mining.MINERS, "bm25", spy("bm25"))
    monkeypatch.setitem(mining.MINERS, "model", spy("model"))
    trained = []

    def train_round(model, columns, r):
        assert len(columns["anchor"]) == 3 and "negative_2" in columns
        trained.append(object())
        return trained[-1], {"round": r}

    base = object()
    records = mining.mining_rounds(base, data, cfg(rounds=3, num_negatives=2, train_negatives=2),
                                   ("bm25", "model"), train_round, lambda m: {"model": id(m)}, seed=0)
    assert [name for name, _ in seen] == ["bm25", "model", "model"]
    assert seen[0][1] is base and seen[1][1] is trained[0] and seen[2][1] is trained[1]
    assert [r["metrics"]["model"] for r in records] == [id(t) for t in trained]
    assert records[0]["overlap_with_previous"] is None and records[1]["overlap_with_previous"] == 1.0


class _Model:
    """A stand-in model that can be saved and loaded: its name says which round trained it."""

    def __init__(self, name):
        self.name = name

    def save(self, folder):
        (Path(folder) / "name.txt").write_text(self.name)


def _chain(monkeypatch, data, rounds_dir, seen, fail_at=None):
    def miner(model, d, c, rng):  # random draws: a resumed chain must continue the same random stream
        seen.append(model.name)
        return [rng.sample([i for i in range(len(d.corpus)) if i not in rel], c.num_negatives)
                for rel in d.relevant], 0

    def train_round(model, columns, r):
        if r == fail_at:
            raise KeyboardInterrupt
        return _Model(f"round{r + 1}"), {"rows": len(columns["anchor"])}

    monkeypatch.setitem(mining.MINERS, "random", miner)
    return mining.mining_rounds(_Model("base"), data, cfg(rounds=3, num_negatives=2, train_negatives=2),
                                ("random",), train_round, lambda m: {"model": m.name}, seed=0, rounds_dir=rounds_dir,
                                load_model=lambda folder: _Model((folder / "name.txt").read_text()))


def test_interrupted_chain_resumes_after_its_last_finished_round(data, tmp_path, monkeypatch):
    straight_seen, resumed_seen = [], []
    straight = _chain(monkeypatch, data, tmp_path / "straight", straight_seen)
    assert straight_seen == ["base", "round1", "round2"]
    with pytest.raises(KeyboardInterrupt):
        _chain(monkeypatch, data, tmp_path / "resumed", resumed_seen, fail_at=2)
    assert sorted(p.name for p in (tmp_path / "resumed").iterdir()) == ["round1", "round2"]
    assert not (tmp_path / "resumed" / "round1" / "model").exists()  # only the last finished round's model is kept
    resumed_seen.clear()
    resumed = _chain(monkeypatch, data, tmp_path / "resumed", resumed_seen)
    assert resumed_seen == ["round2"]  # round 3 mined with the reloaded round-2 model; rounds 1-2 not redone
    assert resumed == straight and [r["metrics"]["model"] for r in resumed] == ["round1", "round2", "round3"]
    assert len({str(r["negatives"]) for r in straight}) > 1  # the random stream moves between rounds
    assert not list((tmp_path / "resumed").glob("round*/model"))  # models removed once the chain is finished
    assert _chain(monkeypatch, data, tmp_path / "resumed", resumed_seen) == straight  # a finished chain: reread
    assert resumed_seen == ["round2"]


@pytest.mark.parametrize("margin", [0.0, 0.01, 0.05])
def test_model_negatives_keep_the_false_negative_margin(backbone, data, margin):
    """With a relative margin m, a mined negative is at most (1 - m) x the positive's cosine (the rest of the
    num_negatives are random top-ups); m = 0 is the listing's rule."""
    c = cfg(top_k=8, num_negatives=3, mining_margin=margin)
    negs, added = mining.model_negatives(backbone, data, c, random.Random(0))
    sims = (embed(backbone, data.queries, c) @ embed(backbone, data.corpus, c).T).numpy()
    expected_added = 0
    for q, rel in enumerate(data.relevant):
        pos = min(sims[q, i] for i in rel)  # the library measures the margin from the hardest positive
        order = [int(i) for i in np.argsort(-sims[q], kind="stable") if int(i) not in rel]
        kept = [i for i in order if not margin or sims[q, i] <= pos - margin * abs(pos) + 1e-6][:3]
        assert negs[q][:len(kept)] == kept and len(negs[q]) == 3 and not set(negs[q]) & rel
        expected_added += 3 - len(kept)
    assert added == expected_added
    if margin == 0.05:
        assert added > 0  # the tiny backbone puts every passage close to the positive: the margin removes some


def test_each_round_draws_its_own_batch_order():
    from spherekit.experiments.textbook.sections.mining import round_seed

    assert [round_seed(cfg(), 3, r) for r in range(3)] == [3, 1003, 2003]
    assert [round_seed(cfg(reshuffle_rounds=False), 3, r) for r in range(3)] == [3, 3, 3]


def test_mining_reads_the_queries_it_is_set_to(data):
    from spherekit.experiments.textbook.data import TextbookData

    sentences = Retrieval(["she walked the dog home"], ["a domestic dog kept as a pet"], [{0}])
    d = TextbookData(data, [], data, [], [], example_test=sentences, example_train=sentences)
    assert d.mining_sets("terms") == (data, data) and d.mining_sets("examples") == (sentences, sentences)
    with pytest.raises(ValueError, match="mining_queries"):
        cfg(mining_queries="questions")
