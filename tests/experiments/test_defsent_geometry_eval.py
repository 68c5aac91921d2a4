"""The Figures 1-7 numbers of a bank and the offline proxies' metrics, against hand-computed values."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr

from spherekit.experiments.defsent.evaluate import probe_accuracy, retrieval, reverse_dictionary, sim_scores
from spherekit.experiments.defsent.geometry import bank_geometry


def test_isotropic_gaussian_bank():
    x = torch.randn(20000, 8, generator=torch.Generator().manual_seed(0))
    g = bank_geometry(x)
    assert g["outside_2d"] == pytest.approx(math.exp(-4.5), abs=0.003)
    assert g["outside_full"] == pytest.approx(0.01, abs=0.003)
    assert abs(g["mean_cosine"]) < 0.02 and abs(g["svd_corr"]) < 0.05
    assert g["svd_top1_share"] == pytest.approx(1 / 8, rel=0.1)
    assert abs(g["excess_kurtosis"]) < 0.1 and g["abs_skew"] < 0.05
    assert len(g["points_svd"]) == 1000 and len(g["points_white"][0]) == 2


def test_cone_and_rotated_ellipse():
    gen = torch.Generator().manual_seed(1)
    cone = torch.tensor([5.0, 5.0, 5.0, 5.0]) + 0.1 * torch.randn(3000, 4, generator=gen)
    g = bank_geometry(cone)
    assert g["svd_top1_share"] > 0.99 and g["mean_cosine"] > 0.99
    u = torch.randn(3000, generator=gen)
    noise = 0.1 * torch.randn(2, 3000, generator=gen)
    ellipse = torch.stack([u, -0.8 * u + 2 * noise[0], noise[1]], 1)
    assert bank_geometry(ellipse)["svd_corr"] == pytest.approx(0.0, abs=0.1)  # SVD axes are decorrelated...
    assert np.corrcoef(ellipse[:, 0], ellipse[:, 1])[0, 1] < -0.9          # ...the raw axes are not


def test_sim_scores_is_spearman_of_cosines():
    emb = torch.randn(6, 4, generator=torch.Generator().manual_seed(2))
    pairs = [(0, 1, 0.9), (2, 3, 0.1), (4, 5, 0.5), (0, 5, 0.3)]
    cos = [float(torch.nn.functional.cosine_similarity(emb[i], emb[j], dim=0)) for i, j, _ in pairs]
    assert sim_scores(emb, pairs) == pytest.approx(100 * spearmanr(cos, [p[2] for p in pairs]).statistic)
    assert math.isnan(sim_scores(emb, pairs[:2])) and math.isnan(sim_scores(emb, [(0, 1, 1.0)] * 4))


def test_retrieval_and_reverse_dictionary_ranks():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    corpus = torch.tensor([[1.0, 0.1], [0.9, 0.5], [0.0, 1.0]])
    m = retrieval(q, corpus, [[1], [2]])      # query 0: its relevant item is 2nd; query 1: 1st
    assert m["cross-dictionary/MRR"] == pytest.approx(100 * (0.5 + 1) / 2)
    assert m["cross-dictionary/Acc@1"] == 50 and m["cross-dictionary/Acc@10"] == 100
    bank = torch.tensor([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]])  # raw dot products, no normalisation
    v = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    rd = reverse_dictionary(v, [2, 0], bank, ks=(1, 2))
    # vector 0 scores (3, 0, 1): entry 2 is 2nd; vector 1 scores (3, 2, 2): entry 0 is 1st
    assert rd == {"reverse-dictionary/Acc@1": 50.0, "reverse-dictionary/Acc@2": 100.0}


def test_probe_accuracy():
    gen = torch.Generator().manual_seed(3)
    y = ["a"] * 50 + ["b"] * 50
    x = torch.randn(100, 5, generator=gen)
    x[:50, 0] += 6
    assert probe_accuracy(x, y, folds=10) > 95
    assert probe_accuracy(torch.randn(100, 5, generator=gen), y, folds=10) < 75


def test_ranks_break_ties_in_the_relevant_items_favour_unlike_a_plain_sorted_list():
    """evaluate.py's MRR is spherekit.evaluation.metrics' over the favourable ranking: without ties it is the MRR of a
    plain sorted list, but a relevant item tied with another (the word bank's shared rows) ranks first here, second
    in a plain sorted list."""
    from spherekit.evaluation.metrics import mrr

    gen = torch.Generator().manual_seed(4)
    q, corpus = torch.randn(20, 8, generator=gen), torch.randn(50, 8, generator=gen)
    relevant = [[i, (i + 7) % 50] for i in range(20)]
    ranked = (F.normalize(q, dim=1) @ F.normalize(corpus, dim=1).T).argsort(dim=1, descending=True, stable=True)
    ours = retrieval(q, corpus, relevant)["cross-dictionary/MRR"]
    assert ours == pytest.approx(100 * mrr(ranked, [set(r) for r in relevant]), rel=1e-12)
    tied = torch.stack([corpus[0], corpus[0], corpus[2]])
    query = corpus[:1]
    ranked = (query @ tied.T).argsort(dim=1, descending=True, stable=True)
    assert retrieval(query, tied, [[1]])["cross-dictionary/MRR"] == 100.0 and 100 * mrr(ranked, [{1}]) == 50.0


def _favourable_ranking(scores, relevant):
    """The oracle: two stable sorts, relevant first, then by score (NaN last)."""
    mask = torch.zeros(scores.shape, dtype=torch.bool)
    for q, ids in enumerate(relevant):
        mask[q, list(ids)] = True
    first = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)
    return first.gather(1, torch.argsort(-scores.gather(1, first), dim=1, stable=True))


@pytest.mark.parametrize("depth", [None, 1, 3, 40])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_reciprocal_ranks_count_what_the_favourable_ranking_sorts(depth, dtype):
    """reciprocal_ranks (one comparison per score) against metrics.mrr over the sorted favourable ranking: heavy ties
    (scores on a grid of 5 values), several relevant ids, NaN scores on relevant and other candidates, an odd width;
    the same float64 numbers. A query without a relevant id is an error naming it, as in metrics.mrr."""
    from spherekit.evaluation.metrics import mrr
    from spherekit.experiments.defsent.evaluate import reciprocal_ranks

    gen = torch.Generator().manual_seed(11)
    scores = torch.randint(0, 5, (31, 37), generator=gen).to(dtype) / 4
    scores[3, :5] = float("nan")
    scores[4] = float("nan")
    relevant = [[int(i) for i in torch.randperm(37, generator=gen)[:1 + q % 3]] for q in range(31)]
    relevant[3] = [0, 9]                       # one NaN relevant score, one finite
    ranked = _favourable_ranking(scores, relevant)[:, :depth]
    want = mrr(ranked, [set(r) for r in relevant], reduction="none").numpy()
    got = reciprocal_ranks(scores, relevant, depth)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert (got > 0).sum() >= 5 and len(set(got.tolist())) >= (2 if depth == 1 else 3)  # the case is not trivial
    relevant[5] = []
    with pytest.raises(ValueError, match=r"relevant\[5\] is empty"):
        reciprocal_ranks(scores, relevant, depth)
    with pytest.raises(ValueError, match="one entry per row"):
        reciprocal_ranks(scores, relevant[:-1], depth)
    relevant[5] = [-1]                         # never read from the end
    with pytest.raises(ValueError, match=r"relevant\[5\] holds ids outside \[0, 37\)"):
        reciprocal_ranks(scores, relevant, depth)
    relevant[5] = [37]
    with pytest.raises(ValueError, match=r"relevant\[5\] holds ids outside"):
        reciprocal_ranks(scores, relevant, depth)


def test_per_item_values_recompute_each_metric(monkeypatch):
    """What the claims' bootstrap resamples: the per-item values give back the metric on the full sample."""
    from types import SimpleNamespace

    from spherekit.experiments.defsent import noise
    from spherekit.experiments.defsent.evaluate import evaluate_pooling_items, reverse_dictionary_items

    gen = torch.Generator().manual_seed(5)
    emb = {t: torch.randn(6, generator=gen) for t in "abcdefghijklmnopqrst"}

    import spherekit.experiments.defsent.evaluate as ev

    def encode(model, texts, **_):  # a lookup of fixed vectors in place of the encoder
        return torch.stack([emb[t] for t in texts])

    held = SimpleNamespace(
        sim={"n": {"texts": list("abcdefgh"), "dev": [(0, 1, 0.5), (2, 3, 0.2), (4, 5, 0.9)],
                   "test": [(0, 2, 0.1), (1, 3, 0.4), (4, 6, 0.8), (5, 7, 0.3), (0, 7, 0.6)]},
             "v": {"texts": list("ijkl"), "dev": [(0, 1, 0.2), (2, 3, 0.5), (0, 3, 0.9)],
                   "test": [(0, 2, 0.3), (1, 3, 0.7), (1, 2, 0.1), (0, 1, 0.5)]}},
        crossdict={"queries": list("mn"), "corpus": list("opq"), "relevant": [[0], [1, 2]]},
        probes={"supersense": (list("abcdefghij"), ["x", "y"] * 5), "pos": (list("klmnopqrst"), ["u"] * 5 + ["w"] * 5)})
    cfg = SimpleNamespace(encode_batch_size=4, max_seq_length=32, prompt="{sentence} {mask}", probe_folds=5)
    monkeypatch.setattr(ev, "encode_pooled", encode)
    metrics, values, meta = evaluate_pooling_items(None, held, "mean", cfg)
    for key in values:  # all ones: each item once
        ones = np.ones((1, len(values[key])))
        assert noise.statistic(values[key], meta[key], ones)[0] == pytest.approx(metrics[key], abs=1e-9), key
    assert meta["wordnet-sim/avg/Spearman"]["strata"] == [["noun", 5], ["verb", 4]]
    assert meta["probe/avg/Acc"]["strata"] == [["supersense", 10], ["pos", 10]]
    rd, hits, rd_meta = reverse_dictionary_items(torch.tensor([[1.0, 0.0], [1.0, 1.0]]), [2, 0],
                                                 torch.tensor([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), ks=(1, 2))
    assert hits["reverse-dictionary/Acc@1"] == [0.0, 100.0] and rd["reverse-dictionary/Acc@1"] == 50.0
    assert rd_meta["reverse-dictionary/Acc@2"]["strata"] == [["definitions", 2]]


def test_the_evaluation_encodes_each_text_set_twice_for_three_poolings(monkeypatch):
    """evaluate_encoder shares one pass between CLS and Mean (SharedPass) and gets the metrics that one pass per
    pooling gives."""
    from types import SimpleNamespace

    import spherekit.experiments.defsent.evaluate as ev

    gen = torch.Generator().manual_seed(3)
    emb = {(p, t): torch.randn(6, generator=gen) for p in ev.POOLINGS for t in "abcdefghijklmnopqrst"}
    passes = []

    def encode_poolings(model, texts, poolings, **_):
        passes.append((tuple(texts), tuple(poolings)))
        return {p: torch.stack([emb[(p, t)] for t in texts]) for p in poolings}

    def encode_pooled(model, texts, *, pooling, **_):
        return torch.stack([emb[(pooling, t)] for t in texts])

    held = SimpleNamespace(
        sim={"n": {"texts": list("abcdefgh"), "dev": [(0, 1, 0.5), (2, 3, 0.2), (4, 5, 0.9)],
                   "test": [(0, 2, 0.1), (1, 3, 0.4), (4, 6, 0.8), (5, 7, 0.3), (0, 7, 0.6)]}},
        crossdict={"queries": list("mn"), "corpus": list("opq"), "relevant": [[0], [1, 2]]},
        probes={"pos": (list("klmnopqrst"), ["u"] * 5 + ["w"] * 5)})
    cfg = SimpleNamespace(encode_batch_size=4, max_seq_length=32, prompt="{sentence} {mask}", probe_folds=5)
    monkeypatch.setattr(ev, "encode_poolings", encode_poolings)
    monkeypatch.setattr(ev, "encode_pooled", encode_pooled)
    flat, best, _, _ = ev.evaluate_encoder(None, held, cfg)
    sets = 4  # sim texts, cross-dictionary queries and corpus, probe texts
    assert len(passes) == 2 * sets and sum(p == ("cls", "mean") for _, p in passes) == sets
    for pooling in ev.POOLINGS:
        alone = ev.evaluate_pooling_items(None, held, pooling, cfg)[0]
        assert {k: flat[ev.pooled(k, pooling)] for k in alone} == pytest.approx(alone, nan_ok=True), pooling


def test_bank_replicates_resample_pairs_and_entries_and_pair_the_steps():
    from spherekit.experiments.defsent.geometry import top1_share_replicates

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(600, 5, generator=gen, dtype=torch.float64) * torch.tensor([3.0, 1.0, 1.0, 1.0, 1.0]) + 0.5
    g = bank_geometry(x, n_resamples=300)
    cos, top1 = (np.asarray(g["replicates"][k]) for k in ("mean_cosine", "svd_top1_share"))
    assert len(cos) == len(top1) == 300
    assert abs(cos.mean() - g["mean_cosine"]) < 0.3 * cos.std()
    assert abs(top1.mean() - g["svd_top1_share"]) < 0.3 * top1.std()
    # the Rayleigh quotient at the bank's top direction against the exact top eigenvalue of each resample: a lower
    # bound, off by a second-order term far inside the spread it measures (and shrinking as 1/E)
    _, _, vt = torch.linalg.svd(x, full_matrices=False)
    rng = np.random.default_rng([0, 3])
    for r in top1_share_replicates(x, vt[0], 5):
        rows = torch.from_numpy(rng.integers(0, 600, 600))
        s = torch.linalg.svdvals(x[rows])
        exact = float(s[0] ** 2 / (s ** 2).sum())
        assert exact - 0.25 * top1.std() < r <= exact + 1e-12
    # the next step's bank of the same entries sees the same resamples: a bank that only rescales the entries
    # (the same directions) has the same replicates, so a step-to-step difference of replicates is paired
    again = bank_geometry(2.0 * x, n_resamples=300)["replicates"]
    for key in ("mean_cosine", "svd_top1_share"):
        assert again[key] == pytest.approx(g["replicates"][key], abs=2e-6), key
