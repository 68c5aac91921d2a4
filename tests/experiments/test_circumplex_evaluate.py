"""Metrics and plots of the "Mapping the Circumplex of Affect" experiment on synthetic embeddings."""

import json
import math

import numpy as np
import pytest
import torch

from spherekit.data.emotion import ANGLES, EMOTIONS, POLARITY
from spherekit.evaluation.clustering import cd_r, circumplex_distance
from spherekit.experiments.circumplex import evaluate as ev
from spherekit.experiments.circumplex import plots

N_PER = 40


def _clusters(centres: torch.Tensor, noise: float, seed: int = 0, n_per: int = N_PER):
    """n_per noisy copies of each centre row (label EMOTIONS[i]), float64."""
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([c + noise * torch.randn(n_per, c.numel(), generator=g, dtype=torch.float64) for c in centres])
    return x, [e for e in EMOTIONS for _ in range(n_per)]


def ring(noise: float = 0.02, d: int = 16, seed: int = 0):
    """Label centroid at its ECM angle on a 2-D circle in the first two of d coordinates."""
    c = torch.zeros(12, d, dtype=torch.float64)
    th = torch.tensor([math.radians(ANGLES[e]) for e in EMOTIONS], dtype=torch.float64)
    c[:, 0], c[:, 1] = torch.cos(th), torch.sin(th)
    return _clusters(c, noise, seed)


def simplex(noise: float = 0.02, d: int = 16, seed: int = 0):
    """SINCERE-like: mutually orthogonal label centroids."""
    return _clusters(torch.eye(12, d, dtype=torch.float64), noise, seed)


@pytest.fixture(scope="module")
def ring_data():
    return ring()


@pytest.fixture(scope="module")
def ring_result(ring_data):
    return ev.evaluate_embeddings(*ring_data, ANGLES)


# ------------------------------------------------------------------ evaluate_embeddings

def test_ring_matches_the_ideal_ceiling(ring_result):
    assert ring_result["v_measure"] > 0.99
    assert ring_result["cd_r"] == pytest.approx(0.9183, abs=0.01)
    assert ring_result["label_order"] == list(EMOTIONS)
    assert ring_result["n_pairs"] == 78 and ring_result["cd_pairs"] == "upper+diagonal"
    assert ring_result["pc12_explained"] > 0.95
    assert ring_result["ring_mae"] < 0.05
    cos = np.array(ring_result["label_cosine"])
    assert cos.shape == (12, 12) and cos[0, 6] < -0.95 and cos[0, 1] == pytest.approx(math.cos(math.pi / 6), abs=0.03)
    assert len(ring_result["pca_explained_variance_ratio"]) == 10
    assert set(ring_result["pca2d_centroids"]) == set(EMOTIONS)
    json.dumps(ring_result)  # JSON-able


def test_exact_ring_gives_the_notes_values_per_pair_set():
    x, labels = ring(noise=0.0)
    got = {p: ev.evaluate_embeddings(x, labels, ANGLES, cd_pairs=p, n_init=2)["cd_r"] for p in ev.CD_PAIRS}
    assert got["upper+diagonal"] == pytest.approx(0.9183, abs=5e-4)
    assert got["upper"] == pytest.approx(0.8826, abs=5e-4)
    assert got["ordered"] == pytest.approx(0.905, abs=5e-4)


def test_unordered_pair_sets_agree_with_clustering_cd_r(ring_data):
    x, labels = ring_data
    cd = circumplex_distance([int(ANGLES[e] // 30) for e in EMOTIONS], [POLARITY[e] for e in EMOTIONS])
    for pairs, diag in (("upper+diagonal", True), ("upper", False)):
        ours = ev.evaluate_embeddings(x, labels, ANGLES, cd_pairs=pairs, n_init=1)["cd_r"]
        assert ours == pytest.approx(cd_r(x, labels, cd, list(EMOTIONS), include_diagonal=diag), abs=1e-12)


def test_simplex_clusters_well_but_has_low_cd_r(ring_result):
    res = ev.evaluate_embeddings(*simplex(), ANGLES)
    assert res["v_measure"] > 0.99
    assert abs(res["offdiag_mean_cosine"]) < 0.05
    assert res["cd_r"] < ring_result["cd_r"] - 0.25  # only the diagonal carries signal
    off = ev.evaluate_embeddings(*simplex(), ANGLES, cd_pairs="upper")["cd_r"]
    assert abs(off) < 0.3


def test_random_embeddings_do_not_cluster():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(12 * 60, 16, generator=g)
    labels = [EMOTIONS[i % 12] for i in range(x.shape[0])]
    assert ev.evaluate_embeddings(x, labels, ANGLES, n_init=3)["v_measure"] < 0.1


def test_polarity_is_configurable(ring_data):
    no_neutral = {e: ("positive" if math.cos(math.radians(ANGLES[e])) >= 0 else "negative") for e in EMOTIONS}
    default = ev.evaluate_embeddings(*ring_data, ANGLES, n_init=1)["cd_r"]
    other = ev.evaluate_embeddings(*ring_data, ANGLES, polarity=no_neutral, n_init=1)["cd_r"]
    assert other != pytest.approx(default, abs=1e-3)


def test_subset_keeps_ecm_steps(ring_data):
    x, labels = ring_data
    keep = {"joy", "excitement", "surprise", "anger", "fear", "disgust", "sadness", "trust"}  # Empathetic Dialogue
    idx = [i for i, lab in enumerate(labels) if lab in keep]
    res = ev.evaluate_embeddings(x[idx], [labels[i] for i in idx], ANGLES, n_init=2)
    cd = np.array(res["circumplex_distance"])
    order = res["label_order"]
    # trust (330) and joy (30) are 2 ECM steps apart, both positive
    assert cd[order.index("trust"), order.index("joy")] == 2
    assert res["n_labels"] == 8 and res["v_measure"] > 0.99


def test_input_errors(ring_data):
    x, labels = ring_data
    angles = {k: v for k, v in ANGLES.items() if k not in ("love", "trust")}
    with pytest.raises(ValueError, match=r"love.*trust"):
        ev.evaluate_embeddings(x, labels, angles)
    with pytest.raises(ValueError, match="at least 2 distinct labels"):
        ev.evaluate_embeddings(x[:5], ["joy"] * 5, ANGLES)
    with pytest.raises(ValueError, match="labels has"):
        ev.evaluate_embeddings(x, labels[:-1], ANGLES)
    with pytest.raises(ValueError, match="cd_pairs"):
        ev.evaluate_embeddings(x, labels, ANGLES, cd_pairs="all")
    with pytest.raises(ValueError, match="polarity"):
        ev.evaluate_embeddings(x, labels, ANGLES, polarity={"love": "positive"})
    with pytest.raises(ValueError, match="multiples of 30"):
        ev.evaluate_embeddings(x, labels, {**ANGLES, "joy": 45.0})


def test_two_labels_upper_pairs_give_none(ring_data):
    x, labels = ring_data
    idx = [i for i, lab in enumerate(labels) if lab in ("love", "disgust")]
    sub = [labels[i] for i in idx]
    assert ev.evaluate_embeddings(x[idx], sub, ANGLES, cd_pairs="upper", n_init=1)["cd_r"] is None
    assert ev.evaluate_embeddings(x[idx], sub, ANGLES, n_init=1)["cd_r"] > 0.99


def test_projections(ring_data):
    x, labels = ring_data
    p = ev.projections(x, labels, ANGLES, max_points=120, mds_max_iter=100)
    assert p["pca"].shape == (x.shape[0], 2) and len(p["pca_labels"]) == x.shape[0]
    assert p["mds"].shape == (120, 2) and len(p["mds_labels"]) == 120
    assert [labels[i] for i in p["mds_index"]] == p["mds_labels"]
    assert {lab: p["mds_labels"].count(lab) for lab in EMOTIONS} == {lab: 10 for lab in EMOTIONS}
    assert sum(p["pca_explained"]) > 0.95


# ------------------------------------------------------------------ sweeps

def test_pca_sweep_on_ring_is_flat(ring_data):
    rows = ev.pca_dimension_sweep(*ring_data, ANGLES, n_init=3)
    dims = [r["dim"] for r in rows]
    assert dims == [2, 3, 4, 8, 16]  # 16..128 >= d are skipped, then "full" (d = 16)
    assert [r["reduced"] for r in rows] == [True] * 4 + [False]
    full, two = rows[-1], rows[0]
    assert two["v_measure"] == pytest.approx(full["v_measure"], abs=0.01)
    assert two["cd_r"] == pytest.approx(full["cd_r"], abs=0.01)
    assert full["explained"] == pytest.approx(1.0) and two["explained"] > 0.95
    json.dumps(rows)


def test_pca_sweep_hurts_a_simplex_more_than_a_ring():
    """Paper Fig. 5a in miniature: at 2 PCA dimensions the orthogonal layout loses V, the ring keeps it."""
    sim = ev.pca_dimension_sweep(*simplex(noise=0.1), ANGLES, dims=(2, "full"), n_init=3)
    rng = ev.pca_dimension_sweep(*ring(noise=0.1), ANGLES, dims=(2, "full"), n_init=3)
    assert sim[0]["v_measure"] < sim[1]["v_measure"] - 0.2
    assert rng[0]["v_measure"] > sim[0]["v_measure"] + 0.2
    with pytest.raises(ValueError, match="dims"):
        ev.pca_dimension_sweep(*simplex(), ANGLES, dims=(0,))


def test_label_count_subsets_documented_choices():
    s = ev.label_count_subsets(ANGLES)
    assert s[2] == ("love", "disgust")
    assert s[3] == ("love", "anger", "boredom")
    assert s[4] == ("love", "surprise", "disgust", "calmness")
    assert s[6] == ("love", "excitement", "anger", "disgust", "boredom", "relief")
    assert s[12] == tuple(EMOTIONS)


@pytest.mark.parametrize("counts, match", [((8,), "equidistant"), ((24,), "exceeds"), ((1,), ">= 2")])
def test_label_count_subsets_impossible(counts, match):
    with pytest.raises(ValueError, match=match):
        ev.label_count_subsets(ANGLES, counts)


def test_label_count_subsets_duplicate_nearest():
    with pytest.raises(ValueError, match="share a nearest label"):
        ev.label_count_subsets({"a": 0.0, "b": 10.0, "c": 20.0}, (3,))


def test_label_count_sweep(ring_data):
    rows = ev.label_count_sweep(*ring_data, ANGLES, counts=(2, 4, 12), n_init=2)
    assert [r["count"] for r in rows] == [2, 4, 12]
    assert [r["n"] for r in rows] == [2 * N_PER, 4 * N_PER, 12 * N_PER]
    assert all(r["v_measure"] > 0.99 for r in rows)
    assert rows[1]["labels"] == ["love", "surprise", "disgust", "calmness"]
    json.dumps(rows)


def test_loss_metric_correlation():
    rows = [{"v_measure": 0.8, "cd_r": 0.2}, {"v_measure": 0.7, "cd_r": 0.5}, {"v_measure": 0.6, "cd_r": 0.9},
            {"v_measure": 0.5, "cd_r": None}]
    r = ev.loss_metric_correlation(rows)
    assert r == pytest.approx(np.corrcoef([0.8, 0.7, 0.6], [0.2, 0.5, 0.9])[0, 1])
    assert r < -0.9
    assert ev.loss_metric_correlation(rows[:2]) is None
    with pytest.raises(ValueError, match="rows\\[0\\]"):
        ev.loss_metric_correlation([{"v_measure": 1.0}])


# ------------------------------------------------------------------ plots

def _png(path):
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plots_write_pngs(tmp_path, ring_data, ring_result):
    x, labels = ring_data
    p = ev.projections(x, labels, ANGLES, max_points=60, mds_max_iter=50)
    _png(plots.heatmap(ring_result["label_cosine"], ring_result["label_order"], tmp_path / "heat.png", "ring"))
    _png(plots.scatter_2d(p["pca"], p["pca_labels"], ANGLES, tmp_path / "pca.png", "PCA",
                          explained=p["pca_explained"]))
    _png(plots.scatter_2d(p["mds"], p["mds_labels"], ANGLES, tmp_path / "mds.png", "MDS"))
    _png(plots.explained_variance({"ring": ring_result["pca_explained_variance_ratio"], "flat": [0.1] * 10},
                                  tmp_path / "ev.png"))
    sweep = {"ring": [{"dim": 2, "v_measure": 1.0, "cd_r": 0.9}, {"dim": 768, "v_measure": 0.9, "cd_r": None}],
             "simplex": [{"dim": 2, "v_measure": 0.4, "cd_r": 0.1}, {"dim": 768, "v_measure": 1.0, "cd_r": 0.5}]}
    _png(plots.sweep_curves(sweep, "dim", tmp_path / "sweep.png", "PCA sweep"))
    _png(plots.grid_bars([{"name": "SINCERE-GPT", "v_measure": 0.8, "cd_r": -0.2},
                          {"name": "CircularCSE-nGPT", "v_measure": 0.7, "cd_r": 0.9},
                          {"name": "Pretrained", "v_measure": 0.3, "cd_r": None}], tmp_path / "sub" / "grid.png"))


def test_angle_colors_are_cyclic():
    c = plots.angle_colors(list(EMOTIONS), ANGLES)
    assert np.allclose(c["love"], plots.pyplot().get_cmap("hsv")(0.0))
    with pytest.raises(ValueError, match="angles"):
        plots.angle_colors(["neutral"], ANGLES)
    with pytest.raises(ValueError, match="shape"):
        plots.heatmap(np.zeros((3, 3)), ["a", "b"], "unused.png")


def test_ngpt_step_sizes_read_the_effective_alphas():
    from spherekit.experiments.circumplex.measure import ngpt_step_sizes
    from spherekit.experiments.circumplex.spec import ALPHA_MAX, ALPHA_MEAN
    from spherekit.nn.head import HypersphereHead

    head = HypersphereHead(16, kind="ngpt", n_heads=2, n_layers=2, backend="reference")
    assert ngpt_step_sizes(head) == pytest.approx({ALPHA_MEAN: 0.05, ALPHA_MAX: 0.05})
    with torch.no_grad():  # effective alpha = raw * (0.05 / init_scaling); its sign does not matter
        head.blocks[1].alpha_mlp.raw[0] = -head.blocks[1].alpha_mlp.raw[0] * 3
    stats = ngpt_step_sizes(head)
    assert stats[ALPHA_MAX] == pytest.approx(0.15)
    assert stats[ALPHA_MEAN] == pytest.approx(0.05 + 0.10 / (4 * 16))
    assert ngpt_step_sizes(HypersphereHead(16, kind="gpt", n_heads=2)) == {}
