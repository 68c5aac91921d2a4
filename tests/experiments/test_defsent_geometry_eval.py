"""The Figures 1-7 numbers of a bank and the offline proxies' metrics, against hand-computed values."""

import math

import numpy as np
import pytest
import torch
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
    assert m["crossdict_mrr"] == pytest.approx(100 * (0.5 + 1) / 2)
    assert m["crossdict_r1"] == 50 and m["crossdict_r10"] == 100
    bank = torch.tensor([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]])  # raw dot products, no normalisation
    v = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    rd = reverse_dictionary(v, [2, 0], bank, ks=(1, 2))
    # vector 0 scores (3, 0, 1): entry 2 is 2nd; vector 1 scores (3, 2, 2): entry 0 is 1st
    assert rd == {"rd_acc@1": 50.0, "rd_acc@2": 100.0}


def test_probe_accuracy():
    gen = torch.Generator().manual_seed(3)
    y = ["a"] * 50 + ["b"] * 50
    x = torch.randn(100, 5, generator=gen)
    x[:50, 0] += 6
    assert probe_accuracy(x, y, folds=10) > 95
    assert probe_accuracy(torch.randn(100, 5, generator=gen), y, folds=10) < 75
