"""Stress-test, near-miss and emotion evaluators (suites stress, nearmiss, emotion): exact values on a stub
encoder, values in range on the tiny BERT model, and the suite contract of spherekit.evaluation.suites."""

from __future__ import annotations

import pytest

from spherekit.data.hard_negatives import HardNegative
from spherekit.data.nearmiss import NearMiss
from spherekit.data.records import TermDefinition
from spherekit.evaluation.evaluators.emotion import EmotionCircumplexEvaluator
from spherekit.evaluation.evaluators.nearmiss import NearMissEvaluator, balanced_limit
from spherekit.evaluation.evaluators.stress import StressTestEvaluator
from tests.evaluation._stub import StubModel

@pytest.fixture(scope="module")
def wn():
    from spherekit.data.wordnet import load_wordnet

    return load_wordnet()


RECORDS = [TermDefinition("warm", "having heat", "warm.a.01", "a"),
           TermDefinition("dog", "a domestic canine", "dog.n.01", "n")]


def _negs(neg_vec_warm, neg_vec_dog):
    negs = [HardNegative("warm", "having heat", "not having heat", "negation", "warm.a.01", "a"),
            HardNegative("dog", "a domestic canine", "a hand tool", "type_swap", "dog.n.01", "n")]
    stats = {"negation": {"applied": 1, "attempted": 2, "rate": 0.5},
             "type_swap": {"applied": 1, "attempted": 2, "rate": 0.5}}
    table = {"warm": [1, 0, 0], "having heat": [1, 0.1, 0], "not having heat": neg_vec_warm,
             "dog": [0, 1, 0], "a domestic canine": [0, 1, 0.1], "a hand tool": neg_vec_dog}
    return (negs, stats), StubModel(table)


def test_stress_exact_values_on_stub():
    negatives, model = _negs([0, 0, 1], [0, 0, 1])  # negatives orthogonal: perfect discrimination
    ev = StressTestEvaluator(RECORDS, rules=("negation", "type_swap"), negatives=negatives)
    m = ev(model)
    assert m["pair ROC-AUC (hard negatives)"] == 1.0
    assert m["ROC-AUC (lexical negation)"] == 1.0 and m["Acc (lexical negation)"] == 1.0
    assert m["ROC-AUC (ontological type swap)"] == 1.0
    negatives, model = _negs([1, 0, 0], [0, 1, 0])  # negatives identical to the queries: always ranked first
    m = ev.__class__(RECORDS, rules=("negation", "type_swap"), negatives=negatives)(model)
    assert m["ROC-AUC (lexical negation)"] == 0.0 and m["Acc (ontological type swap)"] == 0.0
    assert m["pair ROC-AUC (hard negatives)"] == 0.0


def test_stress_on_tiny_model_with_generated_negatives(tiny_model, wn):
    from spherekit.data._spacy import load_spacy

    pool = [p for p in wn.term_definition_pairs() if p.synset_id in
            {"dog.n.01", "cat.n.01", "hammer.n.02", "warm.a.01", "cold.a.01", "increase.n.01", "car.n.01"}]
    ev = StressTestEvaluator(pool, seed=0, wordnet=wn, nlp=load_spacy())
    m = ev(tiny_model)
    assert "pair ROC-AUC (hard negatives)" in m and "ROC-AUC (same-POS random swap)" in m
    assert all(0.0 <= v <= 1.0 for v in m.values())
    assert ev.config["applied"]["pos_swap"] > 0


NM = [NearMiss("the cat is above the table", "the cat is above the board", "the cat is below the table", "spatial",
               "spatial flip", "synonym", "text"),
      NearMiss("the man bit the dog", "the man bit the dog", "the dog bit the man", "binding",
               "subject-object swap", "identity", "text"),
      NearMiss("the dog is barking", "the dog is barking", "the dog is not barking", "negation",
               "verb negation", "identity", "text")]


def test_nearmiss_exact_values_on_stub():
    table = {"the cat is above the table": [1, 0], "the cat is above the board": [1, 0.2],
             "the cat is below the table": [0.2, 1], "the man bit the dog": [0, 1], "the dog bit the man": [1, 1],
             "the dog is barking": [1, 1], "the dog is not barking": [1, -1]}
    m = NearMissEvaluator(NM)(StubModel(table))
    assert m["Acc (spatial)"] == 1.0 and m["Acc (binding)"] == 1.0 and m["Acc"] == 1.0
    assert m["mean near-miss cosine (negation)"] == pytest.approx(0.0, abs=1e-6)
    assert m["mean near-miss cosine (binding)"] == pytest.approx(2 ** -0.5, abs=1e-6)
    assert m["ROC-AUC (spatial)"] == 1.0
    assert "ROC-AUC (binding)" not in m  # every positive is the anchor itself


def test_nearmiss_on_tiny_model_and_limit(tiny_model):
    m = NearMissEvaluator(NM)(tiny_model)
    assert all(0.0 <= m[k] <= 1.0 for k in m if not k.startswith("mean"))
    assert all(-1.0 <= m[k] <= 1.0 + 1e-6 for k in m if k.startswith("mean"))
    many = [NM[0]] * 5 + [NM[1]] * 5 + [NM[2]] * 5
    assert [i.family for i in balanced_limit(many, 4)] == ["spatial", "binding", "negation", "spatial"]
    with pytest.raises(ValueError, match="limit"):
        balanced_limit(many, 0)


def test_emotion_on_tiny_model(tiny_model, wn):
    from spherekit.data.emotion import EMOTIONS, build_emotion_set

    items = build_emotion_set(n_per_label=4, seed=0, reader=wn.reader())
    ev = EmotionCircumplexEvaluator(items, n_init=2, seed=0)
    m = ev(tiny_model)
    assert set(m) == {"V-measure", "CD-r"}
    assert 0.0 <= m["V-measure"] <= 1.0 and -1.0 <= m["CD-r"] <= 1.0
    assert ev.config["n_labels"] == len(EMOTIONS)
    with pytest.raises(ValueError, match="labels"):
        EmotionCircumplexEvaluator([{"text": "x", "label": "neutral"}, {"text": "y", "label": "joy"}])


def test_emotion_cd_r_sign_on_stub():
    """Embeddings placed on the circle at the ECM angles correlate positively with the CD; reversed, negatively."""
    import math

    from spherekit.data.emotion import ANGLES, EMOTIONS

    items = [{"text": f"{e}{k}", "label": e} for e in EMOTIONS for k in range(2)]
    table = {f"{e}{k}": [math.cos(math.radians(ANGLES[e])), math.sin(math.radians(ANGLES[e])), 0.01 * k]
             for e in EMOTIONS for k in range(2)}
    ev = EmotionCircumplexEvaluator(items, n_init=3, seed=0)
    assert ev(StubModel(table))["CD-r"] > 0.5
    table_rev = {t: [-v[0], v[1], v[2]] if t.startswith(("love", "joy", "excitement", "relief", "trust")) else v
                 for t, v in table.items()}
    assert ev(StubModel(table_rev))["CD-r"] < ev(StubModel(table))["CD-r"]


def test_suites_are_registered():
    from spherekit.evaluation.suites import load_suite

    for name in ("stress", "nearmiss", "emotion"):
        assert callable(load_suite(name).make_evaluator)


def test_emotion_suite_contract(tiny_model):
    from spherekit.evaluation.suites import load_suite

    ev = load_suite("emotion").make_evaluator(None, limit=24, seed=0, batch_size=8, n_init=2)
    assert len(ev.texts) == 24 and ev.config["limit"] == 24
    m = ev(tiny_model)
    assert 0.0 <= m["V-measure"] <= 1.0


def test_stress_suite_contract(tiny_model, wn):
    from spherekit.data.splits import Split
    from spherekit.evaluation.suites import load_suite

    test = [p for p in wn.term_definition_pairs() if p.synset_id in {"dog.n.01", "cat.n.01", "hammer.n.02",
                                                                      "warm.a.01", "cold.a.01"}]
    split = Split("in-domain", 0, train=[], dev=[], test=test)
    ev = load_suite("stress").make_evaluator(split, limit=3, seed=0, batch_size=8)
    assert ev.config["n_pairs"] == 3
    assert all(0.0 <= v <= 1.0 for v in ev(tiny_model).values())
    with pytest.raises(ValueError, match="split"):
        load_suite("stress").make_evaluator(None)
