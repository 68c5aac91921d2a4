"""Evaluators on hand-built embeddings (exact expected values) and on the tiny offline BERT."""

import math
from collections import namedtuple

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from spherekit.evaluation.evaluators import (ClusteringEvaluator, ConceptRetrievalEvaluator, GeometryEvaluator,
                                             LayerwiseEvaluator, NPParaphraseEvaluator, RetrievalEvaluator, STSEvaluator)
from tests.evaluation._stub import StubModel

Rec = namedtuple("Rec", "term definition synset_id pos")
PNG = b"\x89PNG\r\n\x1a\n"


def _axis(i, d=4, scale=1.0):
    v = [0.0] * d
    v[i] = scale
    return v


def test_concept_perfect_and_swapped():
    recs = [Rec("cup", "a drinking vessel", "cup.n.01", "n"), Rec("dog", "a domestic canine", "dog.n.01", "n"),
            Rec("hound", "a domestic canine", "dog.n.01", "n"), Rec("run", "move fast on foot", "run.v.01", "v")]
    perfect = StubModel({"cup": _axis(0), "a drinking vessel": _axis(0, scale=2), "dog": _axis(1), "hound": _axis(1),
                         "a domestic canine": _axis(1), "run": _axis(2), "move fast on foot": _axis(2)})
    ev = ConceptRetrievalEvaluator(recs, seed=0)
    assert ev.terms == ["cup", "dog", "hound", "run"] and ev.d2t == [{0}, {1, 2}, {3}]
    m = ev(perfect)
    for key in ("R@1 (term to definition)", "R@10 (term to definition)", "MRR (term to definition)",
                "R@10 (definition to term)", "MRR (definition to term)", "pair ROC-AUC (random negative)"):
        assert m[key] == pytest.approx(1.0), key
    # definition to term R@1: "a domestic canine" has two relevant terms, only one fits at rank 1 -> recall 1/2
    assert m["R@1 (definition to term)"] == pytest.approx((1 + 0.5 + 1) / 3)
    # swap: "cup" now sits on the canine axis; its definition ranks second behind "a domestic canine"
    swapped = dict(perfect.table)
    swapped["cup"] = torch.tensor([0.1, 1.0, 0.0, 0.0])
    m2 = ev(StubModel({k: v.tolist() for k, v in swapped.items()}))
    assert m2["MRR (term to definition)"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)
    assert m2["R@1 (term to definition)"] == pytest.approx(3 / 4)


def test_concept_pair_roc_auc_matches_sklearn(tiny_model):
    recs = [Rec(t, d, s, "n") for t, d, s in [
        ("cup", "a small open container for drinking", "c1"), ("mammal", "a warm blooded vertebrate", "c2"),
        ("inflation", "a sustained increase in prices", "c3"), ("dirty", "not clean", "c4"), ("filthy", "not clean", "c4"),
        ("revitalize", "give new life or vigor to", "c5"), ("joy", "feel happy", "c6")]]
    ev = ConceptRetrievalEvaluator(recs, seed=3)
    m = ev(tiny_model)
    pos, neg = ev.last_details["positive_cosines"], ev.last_details["negative_cosines"]
    assert len(pos) == len(neg) == 7
    for (ti, di), n in zip(ev.pairs, ev.negatives):  # negatives are definitions of other concepts
        assert ev.concepts[ev.pairs.index((ti, di))] not in {ev.concepts[k] for k, p in enumerate(ev.pairs) if p[1] == n}
    expect = roc_auc_score([1] * 7 + [0] * 7, torch.cat([pos, neg]).numpy())
    assert m["pair ROC-AUC (random negative)"] == pytest.approx(expect)
    assert all(0.0 <= v <= 1.0 for v in m.values())


def test_retrieval_evaluator_ndcg_acc1():
    model = StubModel({"q1": _axis(0), "q2": _axis(1), "d0": [1.0, 0.2, 0, 0], "d1": [0.9, 1.0, 0, 0], "d2": _axis(2)})
    ev = RetrievalEvaluator(["q1", "q2"], ["d0", "d1", "d2"], [{0: 1}, {1: 2, 0: 1}], label="toy")
    m = ev(model)
    # q1: d0 first -> nDCG 1; q2: ranking d1 (gain 2), d0 (gain 1) -> ideal -> nDCG 1
    assert m["nDCG@10 (toy)"] == pytest.approx(1.0) and m["Acc@1 (toy)"] == 1.0
    ev2 = RetrievalEvaluator(["q1"], ["d0", "d1", "d2"], [{2}], label="toy")
    assert ev2(model)["MRR (toy)"] == pytest.approx(1 / 3) and ev2(model)["nDCG@10 (toy)"] == pytest.approx(1 / math.log2(4))


def test_geometry_evaluator_and_plots(tmp_path):
    same = StubModel({"a": [1, 1, 0], "b": [2, 2, 0], "c": [3, 3, 0]})
    ev = GeometryEvaluator(["a", "b", "c"], ["x", "y", "x"], n_pairs=50)
    m = ev(same)
    assert m == {"anisotropy": pytest.approx(1.0), "effective rank": pytest.approx(1.0)}
    basis = StubModel({"a": _axis(0), "b": _axis(1), "c": _axis(2)})
    m = ev(basis)
    assert m["anisotropy"] == pytest.approx(0.0) and m["effective rank"] == pytest.approx(3.0)
    paths = ev.write_plots(tmp_path)
    assert len(paths) == 2 and all(open(p, "rb").read(8) == PNG for p in paths)


def test_layerwise_final_layer_equals_model_readout(tiny_model, tmp_path):
    queries = ["cup", "mammal", "joy", "car"]
    corpus = ["a small open container for drinking", "a warm blooded vertebrate", "feel happy", "he drove the car", "sunny weather"]
    relevant = [{0}, {1}, {2}, {3}]
    lw = LayerwiseEvaluator(queries, corpus, relevant, n_pairs=200)
    m = lw(tiny_model)
    assert sorted(m) == ["MRR (layer 0)", "MRR (layer 1)", "anisotropy (layer 0)", "anisotropy (layer 1)"]
    final = RetrievalEvaluator(queries, corpus, relevant)(tiny_model)["MRR"]
    from spherekit.evaluation.encode import encode_layers
    from spherekit.evaluation.geometry import anisotropy

    both = torch.cat([encode_layers(tiny_model, queries), encode_layers(tiny_model, corpus)], dim=1)
    for layer in (0, 1):
        assert m[f"anisotropy (layer {layer})"] == pytest.approx(anisotropy(both[layer], 200, 0), abs=1e-6)
    assert m["MRR (layer 1)"] == pytest.approx(final)
    assert all(-1 <= v <= 1 for v in m.values())
    paths = lw.write_plots(tmp_path)
    assert [p.rsplit("/", 1)[1] for p in paths] == ["layerwise_mrr_by_layer.png", "layerwise_anisotropy_by_layer.png"]
    with pytest.raises(ValueError, match="layers must lie"):
        LayerwiseEvaluator(queries, corpus, relevant, layers=[5])(tiny_model)
    # resamples: per-layer first relevant ranks (their reciprocals average to the MRR) and anisotropy replicates
    kept = LayerwiseEvaluator(queries, corpus, relevant, n_pairs=200, resamples=50)
    assert kept(tiny_model) == m and "ranks" not in lw.last_details
    for layer in (0, 1):
        ranks = kept.last_details["ranks"][layer]
        assert len(ranks) == len(queries) and all(1 <= r <= len(corpus) for r in ranks)
        assert np.mean([1.0 / r for r in ranks]) == pytest.approx(m[f"MRR (layer {layer})"])
        assert len(kept.last_details["anisotropy replicates"][layer]) == 50
    with pytest.raises(ValueError, match="resamples"):
        LayerwiseEvaluator(queries, corpus, relevant, resamples=-1)


def test_np_paraphrase_by_family():
    items = [dict(query="q1", paraphrase="p1", family="modal"), dict(query="q2", paraphrase="p2", family="modal"),
             dict(query="q3", paraphrase="p3", family="privative")]
    model = StubModel({"q1": _axis(0), "p1": _axis(0), "q2": _axis(1), "p2": [0.0, 0.5, 1.0, 0.0], "q3": _axis(2),
                       "p3": _axis(2)})
    # q2 -> p3 (cos 0) vs p2 (0.447): p2 first; q3 -> p3 (1.0) first
    m = NPParaphraseEvaluator(items)(model)
    assert m["R@1 (modal)"] == 1.0 and m["R@1 (privative)"] == 1.0 and m["R@1 (NP paraphrase)"] == 1.0
    model.table["q3"] = torch.tensor([0.0, 0.9, 0.3, 0.0])  # now p2 (0.77) beats p3 (0.32) for q3
    m = NPParaphraseEvaluator(items)(model)
    assert m["R@1 (privative)"] == 0.0 and m["R@10 (privative)"] == 1.0 and m["R@1 (NP paraphrase)"] == pytest.approx(2 / 3)
    assert m["MRR (NP paraphrase)"] == pytest.approx((1 + 1 + 0.5) / 3)


def test_clustering_evaluator(tmp_path):
    texts = [f"t{i}" for i in range(12)]
    labels = ["joy", "fear", "calm"] * 4
    dirs = {"joy": [1.0, 0.0], "fear": [-1.0, 0.0], "calm": [0.0, 1.0]}
    model = StubModel({t: dirs[l] for t, l in zip(texts, labels)})
    cd = np.array([[0.0, 5.0, 1.0], [5.0, 0.0, 1.0], [1.0, 1.0, 0.0]])  # order: calm, fear, joy
    ev = ClusteringEvaluator(texts, labels, label_distance=cd, label_order=["calm", "fear", "joy"])
    m = ev(model)
    assert m["V-measure"] == pytest.approx(1.0)
    # 1 - AvgCos: calm-fear 1, calm-joy 1, fear-joy 2  vs CD 5, 1, 1 -> r of (5,1,1) and (1,1,2)
    assert m["CD-r"] == pytest.approx(np.corrcoef([5, 1, 1], [1, 1, 2])[0, 1])
    assert all(open(p, "rb").read(8) == PNG for p in ev.write_plots(tmp_path))


def test_sts_evaluator():
    model = StubModel({"a": [1, 0], "b": [1, 0.1], "c": [1, 1], "d": [0, 1], "e": [-1, 0.2], "f": [1, 2]})
    # cosines: (a,b) 0.995, (a,c) 0.707, (a,d) 0, (a,e) -0.98 -> gold in the same order -> rho = 1
    ev = STSEvaluator({"x": (["a"] * 4, ["b", "c", "d", "e"], [5, 3, 1, 0]),
                       "y": (["a", "a", "c"], ["b", "d", "f"], [0, 1, 2])}, name="STS12")
    m = ev(model)
    assert m["Spearman x100 (STS12 x)"] == pytest.approx(100.0)
    assert m["Spearman x100 (STS12 y)"] == pytest.approx(-50.0)  # cos 0.995, 0, 0.949 vs gold 0, 1, 2
    from scipy.stats import spearmanr

    cos_all = [0.995, 0.707, 0.0, -0.981, 0.995, 0.0, 0.949]
    assert m["Spearman x100 (STS12 all)"] == pytest.approx(100 * spearmanr(cos_all, [5, 3, 1, 0, 0, 1, 2]).statistic)
    assert m["Spearman x100 (STS12 mean)"] == pytest.approx(25.0)
    single = STSEvaluator({"test": (["a", "a", "a"], ["b", "c", "d"], [3, 2, 1])}, name="STS-B")(model)
    assert single == {"Spearman x100 (STS-B)": pytest.approx(100.0)}


def test_evaluator_output_path_json(tmp_path):
    import json

    model = StubModel({"q": _axis(0), "d": _axis(0)})
    ev = RetrievalEvaluator(["q"], ["d"], [{0}], name="toy")
    metrics = ev(model, output_path=str(tmp_path))
    assert json.loads((tmp_path / "toy_results.json").read_text()) == metrics
    assert ev.primary_metric == "MRR"


@pytest.mark.parametrize("make, match", [
    (lambda: RetrievalEvaluator(["q"], ["d"], [{0}, {0}]), "one entry per query"),
    (lambda: ConceptRetrievalEvaluator([]), "empty"),
    (lambda: ConceptRetrievalEvaluator([dict(term="x", definition="", synset_id="s")]), "non-empty"),
    (lambda: GeometryEvaluator(["a"]), "at least 2"),
    (lambda: STSEvaluator({"x": (["a"], ["b", "c"], [1])}), "equal length"),
    (lambda: ClusteringEvaluator(["a", "b"], ["x"]), "equal length"),
])
def test_constructor_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_retrieval_from_loaded_beir_and_dbpedia():
    from pathlib import Path

    from spherekit.data.datasets.beir import load_beir
    from spherekit.data.datasets.dbpedia_gap import load_dbpedia_gap

    fix = Path(__file__).parents[1] / "data" / "fixtures"
    beir = load_beir(fix / "beir" / "NanoAlpha")
    table = {t: _axis(i % 4) for i, t in enumerate(beir.corpus.values())}
    table["what animal feeds its young with milk"] = _axis(0)  # = d1 ("Mammal ...", index 0)
    table["why do prices keep rising"] = [0.0, 0.5, 0.2, 1.0]  # d4 first, then the relevant d2 (index 1) at rank 2
    m = RetrievalEvaluator.from_data(beir)(StubModel(table))
    assert m["Acc@1 (NanoAlpha)"] == 0.5 and m["MRR (NanoAlpha)"] == pytest.approx((1 + 1 / 2) / 2)
    gap = load_dbpedia_gap(fix / "dbpedia_gap" / "pairs.jsonl")
    ev = RetrievalEvaluator.from_data(gap, label="DBpedia")
    assert ev.relevant == [{0}, {1, 3}] and ev.corpus[2] == "completionDate"
