"""Anisotropy, effective rank and projections vs hand-computed cases and scikit-learn."""

import math

import numpy as np
import pytest
import torch

from spherekit.evaluation.geometry import (anisotropy, cosine_pairs, effective_rank, mds_project, pca_project,
                                           random_pairs, resampled_anisotropy, resampled_geometry)


def test_random_pairs_distinct_seeded_uniform():
    i, j = random_pairs(5, 20000, seed=3)
    assert bool((i != j).all())
    i2, j2 = random_pairs(5, 20000, seed=3)
    assert torch.equal(i, i2) and torch.equal(j, j2)
    counts = torch.bincount(i * 5 + j, minlength=25).view(5, 5)
    off = counts[~torch.eye(5, dtype=torch.bool)].double()
    assert counts.diag().sum() == 0 and (off / off.mean() - 1).abs().max() < 0.1  # all 20 ordered pairs ~equally often


def test_anisotropy_hand_cases():
    same = torch.tensor([[1.0, 2.0]] * 7)
    assert anisotropy(same, n_pairs=100) == pytest.approx(1.0)
    # two antipodal points, scaled: every distinct pair has cosine -1
    assert anisotropy(torch.tensor([[3.0, 0.0], [-0.5, 0.0]]), n_pairs=50) == pytest.approx(-1.0)
    # orthonormal basis: every distinct pair has cosine 0
    assert anisotropy(torch.eye(6), n_pairs=500) == pytest.approx(0.0)


def test_anisotropy_is_mean_of_sampled_pairs():
    x = torch.randn(41, 9, generator=torch.Generator().manual_seed(0)).double()
    i, j = random_pairs(41, 1234, seed=5)
    xn = x / x.norm(dim=1, keepdim=True)
    expect = float((xn[i] * xn[j]).sum(1).mean())
    assert anisotropy(x, n_pairs=1234, seed=5) == pytest.approx(expect, abs=1e-12)
    assert cosine_pairs(x, 1234, 5).mean().item() == pytest.approx(expect, abs=1e-12)
    assert anisotropy(x, n_pairs=1234, seed=6) != pytest.approx(expect, abs=1e-12)


def test_effective_rank_hand_cases():
    assert effective_rank(torch.eye(5)) == pytest.approx(5.0)
    assert effective_rank(torch.ones(4, 3)) == pytest.approx(1.0)
    x = torch.diag(torch.tensor([3.0, 1.0]))  # rows normalised -> singular values 1, 1
    assert effective_rank(x) == pytest.approx(2.0)
    assert effective_rank(x, normalize=False) == pytest.approx(math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25))))


def test_effective_rank_formula_random():
    x = torch.randn(30, 7, generator=torch.Generator().manual_seed(1)).double()
    s = np.linalg.svd((x / x.norm(dim=1, keepdim=True)).numpy(), compute_uv=False)
    p = s / s.sum()
    assert effective_rank(x) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-10)
    xc = x / x.norm(dim=1, keepdim=True)
    s = np.linalg.svd((xc - xc.mean(0)).numpy(), compute_uv=False)
    p = s / s.sum()
    assert effective_rank(x, center=True) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-10)


@pytest.mark.parametrize("center", [False, True])
def test_resampled_geometry_replicates_are_the_statistics_of_explicit_resamples(center):
    """Oracle: replicate b is anisotropy over the resampled pairs and effective_rank (SVD) of the resampled rows,
    rebuilt here from the same generator stream; the Gram-matrix shortcut must agree with the SVD."""
    x = torch.randn(37, 6, dtype=torch.float64) + 0.4
    reps = resampled_geometry(x, 4, n_pairs=300, seed=5, center=center)
    cos = cosine_pairs(x, 300, seed=5).numpy()
    rng = np.random.default_rng([5, 1])
    for b in range(4):
        pairs = rng.integers(0, 300, 300)
        rows = rng.integers(0, 37, 37)
        assert reps["anisotropy"][b] == pytest.approx(cos[pairs].mean(), abs=1e-12)
        assert reps["effective rank"][b] == pytest.approx(effective_rank(x[rows], center=center), rel=1e-9)


def test_resampled_geometry_centres_on_the_statistics_and_pairs_models():
    torch.manual_seed(0)
    x = torch.randn(400, 16, dtype=torch.float64) + 0.5
    reps = resampled_geometry(x, 200, n_pairs=2000, seed=1)
    a, r = np.array(reps["anisotropy"]), np.array(reps["effective rank"])
    assert abs(a.mean() - anisotropy(x, 2000, seed=1)) < 0.5 * a.std() and a.std() > 0
    assert abs(r.mean() - effective_rank(x)) < 3 * r.std() and r.std() > 0
    assert resampled_geometry(x, 200, n_pairs=2000, seed=1) == reps  # seeded
    # common random numbers: a second model of the same texts (x plus a small perturbation) gets the same
    # resamples, so the paired difference of replicates is far tighter than either replicate's spread
    y = x + 0.05 * torch.randn_like(x)
    other = resampled_geometry(y, 200, n_pairs=2000, seed=1)
    assert np.std(np.array(other["anisotropy"]) - a) < 0.2 * a.std()
    assert np.std(np.array(other["effective rank"]) - r) < 0.2 * r.std()
    with pytest.raises(ValueError, match="n_resamples"):
        resampled_geometry(x, 0)


def test_resampled_anisotropy_resamples_the_pairs_and_shares_them_across_sets():
    x = torch.randn(50, 6, dtype=torch.float64) + 0.3
    reps = resampled_anisotropy(x, 5, n_pairs=300, seed=3)
    cos = cosine_pairs(x, 300, seed=3).numpy()
    rng = np.random.default_rng([3, 2])
    assert reps == pytest.approx([cos[rng.integers(0, 300, 300)].mean() for _ in range(5)], abs=1e-12)
    # another set of the same size (another layer, another model on the same texts): the same pairs and resamples
    y = torch.randn(50, 6, dtype=torch.float64)
    other = resampled_anisotropy(y, 5, n_pairs=300, seed=3)
    rng = np.random.default_rng([3, 2])
    cos_y = cosine_pairs(y, 300, seed=3).numpy()
    assert other == pytest.approx([cos_y[rng.integers(0, 300, 300)].mean() for _ in range(5)], abs=1e-12)
    wide = np.asarray(resampled_anisotropy(x, 400, n_pairs=300, seed=3))
    assert abs(wide.mean() - anisotropy(x, 300, seed=3)) < 0.2 * wide.std()
    with pytest.raises(ValueError, match="n_resamples"):
        resampled_anisotropy(x, 0)


def test_pca_matches_sklearn_and_mds_preserves_cosine_distances():
    from sklearn.decomposition import PCA

    x = torch.randn(50, 6, generator=torch.Generator().manual_seed(2)).double()
    coords, ratio = pca_project(x)
    ref = PCA(2).fit(x.numpy())
    np.testing.assert_allclose(ratio, ref.explained_variance_ratio_, rtol=1e-10)
    np.testing.assert_allclose(np.abs(coords), np.abs(ref.transform(x.numpy())), atol=1e-10)
    # points on a circle in 3-D: cosine distances are realisable in 2-D up to a monotone map, MDS keeps the order
    ang = torch.linspace(0, math.pi, 9, dtype=torch.float64)
    pts = torch.stack([ang.cos(), ang.sin(), torch.zeros_like(ang)], 1)
    emb = mds_project(pts, seed=0)
    assert emb.shape == (9, 2)
    d = np.linalg.norm(emb[:, None] - emb[None], axis=-1)
    assert d[0, 8] == d.max()  # the antipodal pair stays the farthest


@pytest.mark.parametrize("call, match", [
    (lambda: anisotropy(torch.zeros(1, 3)), "at least 2"),
    (lambda: anisotropy(torch.zeros(3)), "2 dimensions"),
    (lambda: effective_rank(torch.tensor([[float("inf"), 1.0]])), "NaN or Inf"),
    (lambda: effective_rank(torch.zeros(3, 2, dtype=torch.long)), "float"),
    (lambda: pca_project(torch.randn(5, 3), n_components=4), "n_components"),
])
def test_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
