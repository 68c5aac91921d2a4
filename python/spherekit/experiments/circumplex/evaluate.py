"""Metrics of "Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via Hyperspherical
Contrastive Learning" (Yamauchi & Aizawa) on a fixed set of test embeddings, and its robustness sweeps.

    evaluate_embeddings(emb, labels, angles)      V-measure, CD-r, label-pair cosines, PCA spectrum  (JSON-able)
    projections(emb, labels, angles)              per-text 2-D PCA and MDS coordinates (numpy, for plots)
    pca_dimension_sweep(emb, labels, angles)      metrics after PCA to k dimensions     (paper Fig. 5a / 9)
    label_count_subsets(angles) / label_count_sweep(...)   metrics on evenly spread label subsets (Fig. 5b / 11)
    loss_metric_correlation(rows)                 Pearson(V, CD-r) across runs (the V / CD-r trade-off)

Every metric is computed on the L2-normalised embeddings e_k (the paper's e = Norm(Pooling(h))).

V-measure (paper sec. 4.2): spherical k-means with k = number of labels, 10 seeded initialisations, minimum
inertia kept; V = 2hc / (h + c) against the gold labels (spherekit.evaluation.clustering).

CD-r (paper eq. 10-11), labels i, j in the set L sorted by angle:
    AvgCosSim(i, j) = (1 / (N_i N_j)) sum_{k in i} sum_{l in j} e_k . e_l          (i = j keeps the k = l terms)
    CD(i, j)        = C(pol_i, pol_j) + min(|p_i - p_j|, 12 - |p_i - p_j|),   p = angle / 30 (12-step ECM),
                      C = 0 same polarity, 2 neutral vs positive/negative, 4 positive vs negative
    CD-r            = Pearson over a pair set P of ( CD(i, j), 1 - AvgCosSim(i, j) )
The pair set is not stated in the paper (cd_pairs):
    "upper+diagonal"  unordered pairs i <= j (E(E+1)/2; 78 for 12 labels) -- default: on an ideal ring
                      (AvgCosSim = cos dtheta) it gives 0.9183, the only convention whose ceiling lies above
                      every CD-r the paper prints for CircularCSE (notes_003 sec. 1.2). This is
                      spherekit.evaluation.clustering.cd_r(include_diagonal=True).
    "upper"           unordered pairs i < j (E(E-1)/2; 66): cd_r(include_diagonal=False); ideal ring 0.8826.
    "ordered"         all E^2 ordered pairs (144), diagonal included; ideal ring 0.905.
Polarities default to spherekit.data.emotion.POLARITY (the paper's Fig. 3 is missing; our choice by Russell's
valence axis: surprise and calmness neutral). For label subsets (8- and 9-label sets, the label-count sweep)
CD still counts steps on the 12-point ECM (p = angle / 30), so gaps in the ring keep their length.
A CD-r that is undefined (fewer than 2 pairs, or a constant CD or cosine column) is reported as None.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

CD_PAIRS = ("upper+diagonal", "upper", "ordered")
ECM_STEPS = 12
DEFAULT_PCA_DIMS = (2, 3, 4, 8, 16, 32, 64, 128, "full")
DEFAULT_LABEL_COUNTS = (2, 3, 4, 6, 12)


# ---------------------------------------------------------------- validation and label bookkeeping

def _unit(emb) -> Tensor:
    """emb (n, d) float -> float64 rows of unit L2 norm."""
    from ...evaluation.geometry import check_embeddings

    x = check_embeddings("emb", emb, min_rows=2).double()
    return torch.nn.functional.normalize(x, dim=1)


def _check(emb, labels, angles: Mapping[str, float]) -> tuple[Tensor, list[str], list[str]]:
    """-> (unit embeddings, labels as a list, distinct labels sorted by angle). ValueError naming the argument."""
    x = _unit(emb)
    labels = [str(v) for v in (labels.tolist() if hasattr(labels, "tolist") else labels)]
    if len(labels) != x.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries but emb has {x.shape[0]} rows")
    return x, labels, label_order(labels, angles)


def label_order(labels: Sequence[str], angles: Mapping[str, float]) -> list[str]:
    """Distinct labels sorted by angle (mod 360), ties by name. ValueError when a label has no angle in `angles`
    or fewer than 2 distinct labels are present."""
    present = sorted(set(labels))
    missing = [lab for lab in present if lab not in angles]
    if missing:
        raise ValueError(f"angles has no entry for the labels {missing} (angles covers {sorted(angles)})")
    if len(present) < 2:
        raise ValueError(f"labels must contain at least 2 distinct labels, got {present}")
    return sorted(present, key=lambda lab: (float(angles[lab]) % 360.0, lab))


def circumplex_cd_matrix(order: Sequence[str], angles: Mapping[str, float], polarity: Mapping[str, str] | None = None,
                         *, n_steps: int = ECM_STEPS) -> np.ndarray:
    """CD (E, E) in `order`: C(pol_i, pol_j) + circular steps between p_i = angle_i / (360 / n_steps) on the
    n_steps-point ECM. ValueError when an angle is off that grid or a label has no polarity."""
    from ...data.emotion import POLARITY
    from ...evaluation.clustering import circumplex_distance

    polarity = POLARITY if polarity is None else polarity
    no_pol = [lab for lab in order if lab not in polarity]
    if no_pol:
        raise ValueError(f"polarity has no entry for the labels {no_pol}")
    step = 360.0 / n_steps
    pos = [float(angles[lab]) % 360.0 / step for lab in order]
    off = [lab for lab, p in zip(order, pos) if abs(p - round(p)) > 1e-6]
    if off:
        raise ValueError(f"angles of {off} are not multiples of {step:g} degrees (the {n_steps}-step ECM grid "
                         "the circumplex distance counts on)")
    return circumplex_distance([int(round(p)) % n_steps for p in pos], [polarity[lab] for lab in order], n_steps)


def _pair_index(n_labels: int, cd_pairs: str) -> tuple[np.ndarray, np.ndarray]:
    if cd_pairs == "upper+diagonal":
        return np.triu_indices(n_labels, k=0)
    if cd_pairs == "upper":
        return np.triu_indices(n_labels, k=1)
    if cd_pairs == "ordered":
        ii, jj = np.meshgrid(np.arange(n_labels), np.arange(n_labels), indexing="ij")
        return ii.ravel(), jj.ravel()
    raise ValueError(f"cd_pairs must be one of {CD_PAIRS}, got {cd_pairs!r}")


def _cd_r(x: Tensor, labels: list[str], order: list[str], cd: np.ndarray, avg: np.ndarray, cd_pairs: str):
    """CD-r over the pair set, or None where Pearson is undefined (< 2 pairs or a constant column).
    The unordered sets go through spherekit.evaluation.clustering.cd_r."""
    from ...evaluation.clustering import cd_r
    from ...evaluation.metrics import pearson

    ii, jj = _pair_index(len(order), cd_pairs)
    a, b = cd[ii, jj], 1.0 - avg[ii, jj]
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) <= 1e-15:
        return None
    if cd_pairs == "ordered":
        return pearson(a, b)
    return cd_r(x, labels, cd, order, include_diagonal=(cd_pairs == "upper+diagonal"))


def _metrics(x: Tensor, labels: list[str], order: list[str], angles, polarity, n_init: int, seed: int,
             cd_pairs: str) -> dict:
    """V-measure and CD-r of unit embeddings x, plus the label-pair cosine and CD matrices and the k-means
    assignment ("clusters", one cluster id per text; the V-measure is that of this assignment: it equals
    spherekit.evaluation.clustering.clustering_v_measure, which runs the same seeded spherical k-means)."""
    from ...evaluation.clustering import (
        label_cosine_matrix,
        spherical_kmeans,
        v_measure,
    )

    avg, _ = label_cosine_matrix(x, labels, order)
    avg = avg.numpy()
    cd = circumplex_cd_matrix(order, angles, polarity)
    clusters, _, _ = spherical_kmeans(x, len(order), n_init=n_init, seed=seed)
    return {"v_measure": v_measure(labels, clusters), "clusters": clusters.numpy(),
            "cd_r": _cd_r(x, labels, order, cd, avg, cd_pairs), "label_cosine": avg, "cd": cd}


# ---------------------------------------------------------------- one set of embeddings

def _ring_targets(order: Sequence[str], angles: Mapping[str, float]) -> np.ndarray:
    th = np.radians([float(angles[lab]) for lab in order])
    return np.cos(th[:, None] - th[None, :])


def evaluate_embeddings(emb, labels: Sequence[str], angles: Mapping[str, float], *,
                        polarity: Mapping[str, str] | None = None, n_init: int = 10, seed: int = 0,
                        cd_pairs: str = "upper+diagonal") -> dict:
    """All scalar metrics of one run's test embeddings emb (n, d) with gold labels (n,), JSON-able:

        n, dim, n_labels, label_order (labels sorted by angle), cd_pairs, n_pairs
        v_measure        spherical k-means (k = n_labels, n_init seeded restarts) V-measure
        cd_r             Pearson(CD, 1 - AvgCosSim) over the cd_pairs pair set (None if undefined)
        label_cosine     E x E AvgCosSim (eq. 11) in label_order;  circumplex_distance  E x E CD
        offdiag_mean_cosine   mean AvgCosSim over i != j (about 0 for SINCERE, paper Fig. 4)
        ring_mae         mean |AvgCosSim(i, j) - cos(theta_i - theta_j)| over i != j (0 for CircularCSE's optimum)
        pca_explained_variance_ratio   the first min(10, d, n) PCA components (fitted on the unit embeddings)
        pc12_explained   PC1 + PC2 ratio (paper Fig. 1: near 1 for a 2-D ring)
        pca2d_centroids  {label: [x, y]} mean 2-D PCA coordinates per label (per-text points: projections())
        per_item         what the claims' bootstrap over the test texts needs (noise.record_of stores it): "label"
                         (index into label_order), "cluster" (the k-means assignment the V-measure scores) and
                         "cosine" (n x E): e_k . m_j, the text's cosine to each label's mean unit embedding m_j, so
                         that the mean of "cosine"[k][j] over the texts k of label i is AvgCosSim(i, j)
    """
    from ...evaluation.geometry import pca_project

    x, labels, order = _check(emb, labels, angles)
    _pair_index(len(order), cd_pairs)  # validates cd_pairs before the clustering runs
    m = _metrics(x, labels, order, angles, polarity, n_init, seed, cd_pairs)
    avg, off = m["label_cosine"], ~np.eye(len(order), dtype=bool)
    n_pc = min(10, x.shape[0], x.shape[1])
    _, ratios = pca_project(x, n_pc, seed=seed)
    coords, _ = pca_project(x, 2, seed=seed) if x.shape[1] >= 2 else (np.zeros((x.shape[0], 2)), None)
    lab = np.asarray(labels)
    return {
        "n": int(x.shape[0]), "dim": int(x.shape[1]), "n_labels": len(order), "label_order": order,
        "cd_pairs": cd_pairs, "n_pairs": int(_pair_index(len(order), cd_pairs)[0].size),
        "v_measure": float(m["v_measure"]), "cd_r": m["cd_r"],
        "label_cosine": avg.tolist(), "circumplex_distance": m["cd"].tolist(),
        "offdiag_mean_cosine": float(avg[off].mean()),
        "ring_mae": float(np.abs(avg - _ring_targets(order, angles))[off].mean()),
        "pca_explained_variance_ratio": [float(r) for r in ratios],
        "pc12_explained": float(sum(ratios[:2])),
        "pca2d_centroids": {o: coords[lab == o].mean(axis=0).tolist() for o in order},
        "per_item": _per_item(x, labels, order, m["clusters"]),
    }


def _per_item(x: Tensor, labels: list[str], order: list[str], clusters: np.ndarray) -> dict:
    """{"label", "cluster", "cosine"} of evaluate_embeddings (see its docstring)."""
    ids = np.array([order.index(lab) for lab in labels])
    means = np.stack([x.numpy()[ids == i].mean(axis=0) for i in range(len(order))])
    return {"label": ids.tolist(), "cluster": np.asarray(clusters, dtype=np.int64).tolist(),
            "cosine": (x.numpy() @ means.T).tolist()}


def _subsample(labels: list[str], order: list[str], max_points: int, seed: int) -> np.ndarray:
    """Sorted indices: up to max(1, max_points // E) texts per label, drawn with a seeded generator."""
    rng = np.random.default_rng(seed)
    per = max(1, max_points // len(order))
    lab = np.asarray(labels)
    picks = []
    for o in order:
        idx = np.flatnonzero(lab == o)
        picks.append(idx if idx.size <= per else rng.choice(idx, per, replace=False))
    return np.sort(np.concatenate(picks))


def projections(emb, labels: Sequence[str], angles: Mapping[str, float], *, max_points: int = 600, seed: int = 0,
                mds_max_iter: int = 300) -> dict:
    """Per-text 2-D coordinates for scatter plots (numpy, not JSON):

        pca, pca_labels, pca_explained   PCA of all n unit embeddings: (n, 2), labels, the 2 variance ratios
        mds, mds_labels, mds_index       seeded metric MDS (SMACOF) of the cosine distances 1 - e_k . e_l on a
                                         per-label subsample of at most max_points texts: (m, 2), labels,
                                         row indices into emb
        label_order                      labels sorted by angle
    """
    from ...evaluation.geometry import mds_project, pca_project

    x, labels, order = _check(emb, labels, angles)
    if max_points < 2:
        raise ValueError(f"max_points must be >= 2, got {max_points}")
    pca, ratios = pca_project(x, 2, seed=seed)
    idx = _subsample(labels, order, max_points, seed)
    mds = mds_project(x[torch.as_tensor(idx)], 2, seed=seed, max_iter=mds_max_iter)
    return {"label_order": order, "pca": pca, "pca_labels": labels, "pca_explained": [float(r) for r in ratios],
            "mds": np.asarray(mds), "mds_labels": [labels[i] for i in idx], "mds_index": idx}


# ---------------------------------------------------------------- robustness sweeps (post hoc)

def _pca_basis(x: Tensor, center: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-> (mean used for projecting, principal axes (d, r) by decreasing variance, explained ratios (r,))."""
    a = x.numpy()
    mu = a.mean(axis=0)
    _, s, vt = np.linalg.svd(a - mu, full_matrices=False)
    var = s ** 2
    return (mu if center else np.zeros_like(mu)), vt.T, var / var.sum()


def pca_dimension_sweep(emb, labels: Sequence[str], angles: Mapping[str, float], dims=DEFAULT_PCA_DIMS, *,
                        polarity: Mapping[str, str] | None = None, n_init: int = 10, seed: int = 0,
                        cd_pairs: str = "upper+diagonal", center: bool = True) -> list[dict]:
    """Metrics after PCA to k dimensions (paper Fig. 5a / Fig. 9; its grid is not stated).

    The PCA is fitted on these unit embeddings e (n, d): with the top-k principal axes V_k (d, k),
        z = Norm((e - mu) V_k)       (mu = the mean when center=True, as sklearn's PCA.transform; 0 otherwise)
    and V-measure and CD-r are recomputed on z. k >= d and k > n are skipped; "full" (or None) is the
    unreduced embeddings, so the curve ends on the headline metrics. Rows, in `dims` order:
        {"dim": k, "reduced": bool, "explained": cumulative variance ratio of the k axes, "v_measure", "cd_r"}
    """
    x, labels, order = _check(emb, labels, angles)
    _pair_index(len(order), cd_pairs)
    mu, axes, ratios = _pca_basis(x, center)
    n, d = x.shape
    rows = []
    for k in dims:
        full = k is None or k == "full"
        if not full and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"dims entries must be positive ints, 'full' or None, got {k!r}")
        if not full and (k >= d or k > n):
            continue
        z = x if full else torch.nn.functional.normalize(torch.from_numpy((x.numpy() - mu) @ axes[:, :k]), dim=1)
        m = _metrics(z, labels, order, angles, polarity, n_init, seed, cd_pairs)
        rows.append({"dim": int(d if full else k), "reduced": not full,
                     "explained": float(ratios.sum() if full else ratios[:k].sum()),
                     "v_measure": float(m["v_measure"]), "cd_r": m["cd_r"]})
    return rows


def _circ_dist(a: float, b: float) -> float:
    diff = abs(a - b) % 360.0
    return min(diff, 360.0 - diff)


def label_count_subsets(labels_by_angle: Mapping[str, float], counts=DEFAULT_LABEL_COUNTS, *,
                        tol: float = 1e-6) -> dict[int, tuple[str, ...]]:
    """For each count k, the k labels spread evenly round the circle: target angles 0, 360/k, ..., and for
    each target the label of nearest circular angle. Result tuples are in target (= angle) order.

    The paper's label configurations (its Fig. 10) are missing from our copy; the authors' scripts only
    show that 2, 3, 4, 6, 12 and 24 labels were used. These evenly spread ECM subsets are our choice:
    with the 12-label ECM, 2 -> (love, disgust), 3 -> (love, anger, boredom), 4 -> (love, surprise, disgust,
    calmness), 6 -> (love, excitement, anger, disgust, boredom, relief), 12 -> all.
    ValueError when k < 2, k exceeds the number of labels, a target is equidistant (within tol degrees) from
    two labels, or two targets pick the same label (e.g. k = 8 on the 12-label ECM: 45 degrees is
    equidistant from joy and excitement).
    """
    names = list(labels_by_angle)
    if not names:
        raise ValueError("labels_by_angle is empty")
    out = {}
    for k in counts:
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ValueError(f"counts entries must be ints >= 2, got {k!r}")
        if k > len(names):
            raise ValueError(f"count {k} exceeds the {len(names)} labels in labels_by_angle")
        chosen = []
        for j in range(k):
            target = 360.0 * j / k
            dist = sorted((_circ_dist(float(labels_by_angle[lab]), target), lab) for lab in names)
            if len(dist) > 1 and dist[1][0] - dist[0][0] <= tol:
                raise ValueError(f"count {k}: target angle {target:g} is equidistant from {dist[0][1]!r} and "
                                 f"{dist[1][1]!r}; no evenly spread subset of {k} labels")
            chosen.append(dist[0][1])
        if len(set(chosen)) < k:
            raise ValueError(f"count {k}: targets share a nearest label ({chosen}); too few distinct angles")
        out[k] = tuple(chosen)
    return out


def label_count_sweep(emb, labels: Sequence[str], angles: Mapping[str, float], counts=DEFAULT_LABEL_COUNTS, *,
                      polarity: Mapping[str, str] | None = None, n_init: int = 10, seed: int = 0,
                      cd_pairs: str = "upper+diagonal") -> list[dict]:
    """Post-hoc label-count robustness (paper Fig. 5b / 11, which trains one model per subset; a caller that
    trains per subset evaluates each model with evaluate_embeddings instead). For each count, the subset of
    label_count_subsets() over the labels present, the texts of those labels only, and k = count clusters.
    Rows: {"count", "labels" (list), "n" (texts used), "v_measure", "cd_r"}; CD steps stay on the 12-step ECM."""
    x, labels, order = _check(emb, labels, angles)
    _pair_index(len(order), cd_pairs)
    subsets = label_count_subsets({lab: angles[lab] for lab in order}, counts)
    lab = np.asarray(labels)
    rows = []
    for k, subset in subsets.items():
        keep = np.flatnonzero(np.isin(lab, subset))
        sub_labels = [labels[i] for i in keep]
        sub_order = label_order(sub_labels, angles)
        m = _metrics(x[torch.as_tensor(keep)], sub_labels, sub_order, angles, polarity, n_init, seed, cd_pairs)
        rows.append({"count": int(k), "labels": list(subset), "n": int(keep.size),
                     "v_measure": float(m["v_measure"]), "cd_r": m["cd_r"]})
    return rows


def loss_metric_correlation(rows: Sequence[Mapping]) -> float | None:
    """Pearson(V-measure, CD-r) across runs (the paper's trade-off: about -0.6 to -0.8 per backbone over its
    six trained configurations). rows: mappings with "v_measure" and "cd_r"; rows whose cd_r is None are
    skipped. None when fewer than 3 usable rows remain or a column is constant (the correlation is then
    undefined or meaningless)."""
    from ...evaluation.metrics import pearson

    pts = []
    for i, r in enumerate(rows):
        if "v_measure" not in r or "cd_r" not in r:
            raise ValueError(f"rows[{i}] needs the keys 'v_measure' and 'cd_r', got {sorted(r)}")
        if r["cd_r"] is not None and r["v_measure"] is not None:
            v, c = float(r["v_measure"]), float(r["cd_r"])
            if math.isfinite(v) and math.isfinite(c):
                pts.append((v, c))
    if len(pts) < 3:
        return None
    a = np.array(pts)
    if np.ptp(a[:, 0]) == 0 or np.ptp(a[:, 1]) == 0:
        return None
    return pearson(a[:, 0], a[:, 1])
