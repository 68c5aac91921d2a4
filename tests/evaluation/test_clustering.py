"""Spherical k-means, V-measure (vs scikit-learn) and CD-r (hand-computed) of "Mapping the Circumplex of Affect"
(arXiv:2601.06575)."""

import numpy as np
import pytest
import torch
from sklearn.metrics import v_measure_score

from spherekit.evaluation.clustering import (cd_r, circumplex_distance, clustering_v_measure, label_cosine_matrix,
                                             spherical_kmeans, v_measure)


def _clusters(n_per=30, k=4, d=8, noise=0.15, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.nn.functional.normalize(torch.randn(k, d, generator=g, dtype=torch.float64), dim=1)
    labels = torch.arange(k).repeat_interleave(n_per)
    x = centers[labels] + noise * torch.randn(k * n_per, d, generator=g, dtype=torch.float64)
    return x * (1 + torch.rand(k * n_per, 1, generator=g, dtype=torch.float64) * 5), labels  # norms must not matter


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_v_measure_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 5, 97), rng.integers(0, 3 + seed, 97)
    assert v_measure(a, b) == pytest.approx(v_measure_score(a, b), abs=1e-12)
    assert v_measure(a, b, beta=2.0) == pytest.approx(v_measure_score(a, b, beta=2.0), abs=1e-12)
    assert v_measure(["x", "y", "y"], [7, 3, 3]) == 1.0


def test_spherical_kmeans_recovers_clusters_and_reports_inertia():
    x, labels = _clusters()
    pred, centers, inertia = spherical_kmeans(x, 4, seed=0)
    assert v_measure(labels, pred) == pytest.approx(1.0)
    xn = torch.nn.functional.normalize(x, dim=1)
    assert torch.allclose(centers.norm(dim=1), torch.ones(4, dtype=torch.float64))
    assert inertia == pytest.approx(float((1 - (xn * centers[pred]).sum(1)).sum()), rel=1e-9)
    # each centroid is the normalised mean direction of its points (a Lloyd fixed point)
    for c in range(4):
        mean_dir = torch.nn.functional.normalize(xn[pred == c].sum(0), dim=0)
        assert torch.allclose(mean_dir, centers[c], atol=1e-9)


def _spherical_objective(x, labels):
    """sum_i (1 - cos(x_i, normalised mean direction of x_i's cluster))."""
    xn = torch.nn.functional.normalize(torch.as_tensor(x, dtype=torch.float64), dim=1)
    labels = torch.as_tensor(labels)
    return sum(float((1 - xn[labels == c] @ torch.nn.functional.normalize(xn[labels == c].sum(0), dim=0)).sum())
               for c in labels.unique())


@pytest.mark.parametrize("k,d,noise,seed", [(8, 32, 0.15, 0), (8, 16, 0.1, 1), (20, 16, 0.1, 0), (20, 16, 0.1, 2),
                                            (20, 3, 0.05, 0)])
def test_spherical_kmeans_reaches_sklearns_optimum_on_blobs(k, d, noise, seed):
    """Same 10 restarts as scikit-learn's KMeans (greedy k-means++) on the normalised data: the objective must
    be as good (plain k-means++ merged two true clusters on the first and third sets: 14% worse, V 0.94)."""
    from sklearn.cluster import KMeans

    g = np.random.default_rng(seed)
    centers = g.standard_normal((k, d))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    truth = np.repeat(np.arange(k), 50)
    x = centers[truth] + noise * g.standard_normal((k * 50, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pred, _, inertia = spherical_kmeans(torch.tensor(x), k, n_init=10, seed=0)
    sk = KMeans(k, n_init=10, random_state=0).fit(x).labels_
    assert inertia == pytest.approx(_spherical_objective(x, pred), rel=1e-9)
    assert inertia <= _spherical_objective(x, sk) * (1 + 1e-6)
    if d > 3:  # well separated: the true clustering is the optimum
        assert v_measure(truth, pred) == pytest.approx(1.0)


def test_more_inits_never_worse_and_seeded():
    x, _ = _clusters(n_per=15, k=6, noise=0.6, seed=4)
    one = spherical_kmeans(x, 6, n_init=1, seed=7, max_iter=30)[2]
    a = spherical_kmeans(x, 6, n_init=10, seed=7, max_iter=30)
    b = spherical_kmeans(x, 6, n_init=10, seed=7, max_iter=30)
    assert a[2] <= one + 1e-12  # the first of the ten runs is the single run: min over ten is never worse
    assert torch.equal(a[0], b[0]) and a[2] == b[2]


def test_clustering_v_measure_end_to_end():
    x, labels = _clusters(seed=5)
    names = [["joy", "fear", "anger", "calm"][i] for i in labels.tolist()]
    assert clustering_v_measure(x, names) == pytest.approx(1.0)
    noise = torch.randn(120, 8, generator=torch.Generator().manual_seed(9))
    assert clustering_v_measure(noise, names) < 0.3


def test_label_cosine_matrix_is_mean_pairwise_cosine():
    x = torch.randn(9, 5, generator=torch.Generator().manual_seed(0)).double()
    labels = ["b", "a", "b", "c", "a", "c", "c", "b", "a"]
    avg, order = label_cosine_matrix(x, labels)
    assert order == ["a", "b", "c"]
    xn = torch.nn.functional.normalize(x, dim=1)
    for i, li in enumerate(order):
        for j, lj in enumerate(order):
            a = xn[[k for k, l in enumerate(labels) if l == li]]
            b = xn[[k for k, l in enumerate(labels) if l == lj]]
            assert avg[i, j].item() == pytest.approx(float((a @ b.T).mean()), abs=1e-12)


def test_cd_r_hand_computed():
    # three labels at angles 0, 90, 180 degrees on a circle: 1 - AvgCosSim = 0 / 1 / 2 -> 1, 2, 1 for the pairs
    pts = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    x = pts.repeat_interleave(3, 0)
    labels = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    cd = np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0]], dtype=float)  # pairs (0,1)=1 (0,2)=5 (1,2)=1
    assert cd_r(x, labels, cd) == pytest.approx(1.0)
    assert cd_r(x, labels, -cd) == pytest.approx(-1.0)
    cd2 = np.array([[0, 3, 1], [3, 0, 2], [1, 2, 0]], dtype=float)  # pairs 3, 1, 2 vs 1, 2, 1
    expect = np.corrcoef([3, 1, 2], [1, 2, 1])[0, 1]
    assert cd_r(x, labels, cd2) == pytest.approx(expect)
    # with the diagonal: pairs (0,0),(0,1),(0,2),(1,1),(1,2),(2,2): distances 0,3,1,0,2,0 vs 0,1,2,0,1,0
    assert cd_r(x, labels, cd2, include_diagonal=True) == pytest.approx(np.corrcoef([0, 3, 1, 0, 2, 0], [0, 1, 2, 0, 1, 0])[0, 1])
    # label_order reorders rows of the distance matrix
    assert cd_r(x, ["c"] * 3 + ["b"] * 3 + ["a"] * 3, cd, label_order=["c", "b", "a"]) == pytest.approx(1.0)


def test_cd_r_default_order_sorts_integer_labels_numerically():
    """Twelve integer labels 0..11 on a circle; the distance matrix in numeric order. Sorting the labels as
    strings (0, 1, 10, 11, 2, ...) silently misaligned rows and gave a different CD-r."""
    angles = torch.arange(12, dtype=torch.float64) * (2 * torch.pi / 12)
    pts = torch.stack([angles.cos(), angles.sin()], dim=1)
    labels = torch.arange(12).repeat_interleave(2)
    steps = np.abs(np.arange(12)[:, None] - np.arange(12)[None, :])
    cd = np.minimum(steps, 12 - steps).astype(float)
    expect = cd_r(pts.repeat_interleave(2, 0), labels, cd, label_order=list(range(12)))
    assert expect > 0.95
    assert cd_r(pts.repeat_interleave(2, 0), labels, cd) == pytest.approx(expect, abs=1e-12)
    assert cd_r(pts.repeat_interleave(2, 0), labels.numpy(), cd) == pytest.approx(expect, abs=1e-12)
    with pytest.raises(ValueError, match="mix types.*label_order"):
        cd_r(pts[:3], [0, "a", 1.5], cd[:3, :3])


def test_circumplex_distance():
    cd = circumplex_distance([0, 3, 6, 11], ["positive", "positive", "negative", "neutral"])
    assert cd[0, 1] == 3  # same polarity, 3 steps
    assert cd[0, 2] == 4 + 6  # opposite polarities, 6 steps
    assert cd[0, 3] == 2 + 1  # neutral vs positive, 1 step around the circle (11 -> 0)
    assert cd[2, 3] == 2 + 5 and np.allclose(cd, cd.T) and np.all(np.diag(cd) == 0)


@pytest.mark.parametrize("call, match", [
    (lambda: spherical_kmeans(torch.randn(5, 2), 6), "k must be"),
    (lambda: v_measure([1, 2], [1]), "equal length"),
    (lambda: cd_r(torch.randn(6, 2), [0, 0, 1, 1, 2, 2], np.zeros((2, 2))), "shape"),
    (lambda: cd_r(torch.randn(4, 2), [0, 0, 1, 1], np.zeros((2, 2))), "at least 3"),
    (lambda: label_cosine_matrix(torch.randn(3, 2), [0, 1, 1], label_order=[0, 1, 2]), "without samples"),
    (lambda: circumplex_distance([0, 1], ["positive", "happy"]), "polarities"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
