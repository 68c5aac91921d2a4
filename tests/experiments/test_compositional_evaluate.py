"""The compositional evaluation: the stage-1 cache (the untuned encoder's retrievers, index and token store of every
set, are built once per backbone and reused by later base / frozen runs and seeds, with the same metrics as a fresh
build; a tuned encoder (no `untuned` name) always builds its own; another backbone replaces the cache), Acc@1 from
spherekit.evaluation.metrics equal to the count it replaced, every metric key in the vocabulary, the per-query
values whose plain mean is the mean over sets of unequal size, and a verifier's stage 1 equal to the encoder alone."""

import random

import numpy as np
import pytest
import torch

from spherekit.evaluation import metrics
from spherekit.experiments.compositional import evaluate
from spherekit.experiments.compositional.data import RetrievalSet
from spherekit.experiments.compositional.spec import EXPERIMENT, ITEM_METRICS, METRICS
from spherekit.experiments.api.metrics import lookup
from spherekit.nn import MaxSimVerifier
from spherekit.retrieval.two_stage import TwoStageRetriever

WORDS = ["cat", "dog", "car", "tree", "house", "river", "stone", "cloud", "apple", "bread", "chair", "lamp"]


def _suite():
    corpus = [f"a {w} near the {v}" for w in WORDS for v in WORDS[:3]]
    queries = [f"where is the {w}" for w in WORDS[:6]]
    relevant = [[3 * i, 3 * i + 1] for i in range(6)]
    return [RetrievalSet("one", queries, corpus, relevant), RetrievalSet("two", queries[:4], corpus[:20], relevant[:4])]


def test_untuned_stage1_is_built_once_and_gives_the_same_metrics(backbone, monkeypatch, one_thread):
    cfg = EXPERIMENT.make_config("tiny")
    builds, real = [], TwoStageRetriever.from_texts.__func__
    monkeypatch.setattr(TwoStageRetriever, "from_texts",
                        classmethod(lambda cls, enc, corpus, *a, **k: builds.append(len(corpus)) or
                                    real(cls, enc, corpus, *a, **k)))
    monkeypatch.setattr(evaluate, "_RETRIEVERS", {})
    suite = _suite()
    fresh = [evaluate.retrieval(backbone, suite, cfg, v) for v in (None, MaxSimVerifier())]
    assert builds == [36, 20, 36, 20]  # no name: built every time
    builds.clear()
    cached = [evaluate.retrieval(backbone, suite, cfg, v, untuned="bb") for v in (None, MaxSimVerifier(), None)]
    assert builds == [36, 20]  # built once, reused with and without a verifier
    assert cached[0] == fresh[0] and cached[1] == fresh[1] and cached[2] == fresh[0]
    evaluate.retrieval(backbone, suite, cfg, untuned="other")
    assert builds == [36, 20, 36, 20] and {k[0] for k in evaluate._RETRIEVERS} == {"other"}


def test_acc1_of_the_shared_metrics_equals_the_count_it_replaced():
    rng = random.Random(0)
    for _ in range(300):
        n_q, n_docs = rng.randint(1, 120), rng.randint(4, 60)
        ranked = torch.stack([torch.randperm(n_docs) for _ in range(n_q)])[:, :rng.randint(1, n_docs)]
        relevant = [set(rng.sample(range(n_docs), rng.randint(1, 3))) for _ in range(n_q)]
        assert metrics.accuracy_at_1(ranked, relevant) == evaluate.accuracy_at(ranked, relevant, 1)  # bit for bit


def test_every_metric_key_is_in_the_vocabulary(backbone, one_thread):
    out = evaluate.retrieval(backbone, _suite(), EXPERIMENT.make_config("tiny"))
    assert set(out["mean"]) == set(out["mean2"]) == set(METRICS)
    for values in (out["mean"], out["mean2"], *out["sets"].values()):
        for key in values:
            lookup(key, EXPERIMENT)
    assert EXPERIMENT.main_metric in METRICS and all(lookup(m, EXPERIMENT) for m, _ in EXPERIMENT.summary_metrics)


def test_per_query_values_average_to_the_mean_over_sets(backbone, one_thread):
    cfg = EXPERIMENT.make_config("tiny")
    suite = _suite()  # sets of 6 and 4 queries: weights 10 / 12 and 10 / 8
    alone = evaluate.retrieval(backbone, suite, cfg)
    reranked = evaluate.retrieval(backbone, suite, cfg, MaxSimVerifier())
    for out in (alone, reranked):
        assert set(out["per_item"]) == set(ITEM_METRICS)
        for m in ITEM_METRICS:
            assert len(out["per_item"][m]) == 10
            assert np.mean(out["per_item"][m]) == pytest.approx(out["mean"][m], abs=1e-6)
    assert "stage-1" not in alone and reranked["stage-1"]["mean"] == alone["mean"]  # stage 1 = the encoder alone
    assert reranked["stage-1"]["per_item"] == alone["per_item"]
