"""Clustering metrics of "Mapping the Circumplex of Affect" (arXiv:2601.06575) (section 4.2): V-measure with
spherical k-means, and CD-r (eq. 10-11).

spherical_kmeans (Dhillon & Modha 2001): rows and centroids live on the unit sphere; a point joins
the centroid of largest cosine; a centroid is the normalised sum of its points. Inertia is
sum_i (1 - cos(x_i, c_{a(i)})). Greedy k-means++ seeding with D(x) = 1 - max_c cos(x, c) (for unit vectors
1 - cos = ||x - c||^2 / 2, so this is k-means++'s squared-distance weighting). Run n_init times
(default 10) from seeded initialisations; the run with the minimum inertia wins.

V-measure (Rosenberg & Hirschberg 2007), classes C, clusters K:
    h = 1 - H(C|K) / H(C)   (1 if H(C) = 0),   c = 1 - H(K|C) / H(K)   (1 if H(K) = 0),
    V = (1 + beta) h c / (beta h + c)          (0 if h + c = 0)

CD-r: with e the L2-normalised embeddings and N_i the samples of label i,
    AvgCosSim(i, j) = (1 / (N_i N_j)) sum_{k in i} sum_{l in j} e_k . e_l  = mean_i(e) . mean_j(e)   (eq. 11)
    CD-r = Pearson( CD(i, j), 1 - AvgCosSim(i, j) ) over label pairs i < j                        (eq. 10)
(include_diagonal=True adds the pairs i = i.) CD is a label-distance matrix; circumplex_distance()
builds the paper's: CD(i, j) = C(polarity_i, polarity_j) + steps between i and j on the circle, with
C = 0 for equal polarities, 2 between neutral and positive/negative, 4 between positive and negative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from .geometry import check_embeddings
from .metrics import pearson


def _kmeanspp(x: Tensor, k: int, gen: torch.Generator) -> Tensor:
    """Greedy k-means++ (Arthur & Vassilvitskii 2007; the variant scikit-learn uses): each new centre is the
    best of 2 + floor(ln k) candidates drawn with probability proportional to D(x), the one that leaves the
    smallest potential sum_x D(x). Plain k-means++ (one candidate) often seeds two centres in one true
    cluster, and Lloyd's iterations cannot separate them again."""
    n = x.shape[0]
    trials = 2 + int(math.log(k))
    first = int(torch.randint(0, n, (1,), generator=gen))
    centers = [x[first]]
    dist = (1.0 - x @ x[first]).clamp_(min=0.0)
    for _ in range(1, k):
        total = float(dist.sum())
        if total <= 0:  # all remaining points coincide with a centre: pick uniformly
            cand = torch.randint(0, n, (trials,), generator=gen)
        else:
            cand = torch.multinomial(dist / total, trials, replacement=True, generator=gen)
        cand_dist = torch.minimum(dist[None, :], (1.0 - x[cand] @ x.T).clamp_(min=0.0))
        best = int(cand_dist.sum(dim=1).argmin())
        centers.append(x[int(cand[best])])
        dist = cand_dist[best]
    return torch.stack(centers)


def _lloyd(x: Tensor, centers: Tensor, max_iter: int, tol: float):
    """Alternate assignment and centroid update until the assignment no longer changes (a fixed point:
    every centroid is the normalised sum of its points), the relative inertia gain is <= tol, or max_iter."""
    prev_assign, prev_inertia = None, None
    for _ in range(max_iter):
        best, assign = (x @ centers.T).max(dim=1)
        inertia = float((1.0 - best).sum())
        if prev_assign is not None and torch.equal(assign, prev_assign):
            break
        if prev_inertia is not None and prev_inertia - inertia <= tol * max(prev_inertia, 1e-12):
            break
        sums = torch.zeros_like(centers).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=centers.shape[0])
        empty = (counts == 0).nonzero().flatten()
        if empty.numel():  # re-seed an empty cluster at the points worst served by their centroid
            sums[empty] = x[torch.argsort(best)[: empty.numel()]]
        centers = torch.nn.functional.normalize(sums, dim=1)
        prev_assign, prev_inertia = assign, inertia
    best, assign = (x @ centers.T).max(dim=1)
    return assign, centers, float((1.0 - best).sum())


def spherical_kmeans(x, k: int, *, n_init: int = 10, max_iter: int = 300, tol: float = 1e-7, seed: int = 0):
    """-> (labels LongTensor (n,), centroids (k, d) unit rows, inertia float) of the best of n_init runs."""
    x = check_embeddings("x", x).double()
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= x.shape[0]:
        raise ValueError(f"k must be an integer in [1, n={x.shape[0]}], got {k!r}")
    if n_init < 1 or max_iter < 1:
        raise ValueError(f"n_init and max_iter must be >= 1, got n_init={n_init}, max_iter={max_iter}")
    x = torch.nn.functional.normalize(x, dim=1)
    gen = torch.Generator().manual_seed(int(seed))
    best = None
    for _ in range(n_init):
        run = _lloyd(x, _kmeanspp(x, k, gen), max_iter, tol)
        if best is None or run[2] < best[2]:
            best = run
    return best


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def v_measure(labels_true, labels_pred, beta: float = 1.0) -> float:
    """V-measure of a clustering against class labels (see the module docstring)."""
    t = np.asarray(labels_true.cpu() if isinstance(labels_true, Tensor) else labels_true)
    p = np.asarray(labels_pred.cpu() if isinstance(labels_pred, Tensor) else labels_pred)
    if t.ndim != 1 or p.ndim != 1 or t.shape != p.shape or t.size == 0:
        raise ValueError(f"labels_true and labels_pred must be non-empty 1-D of equal length, got {t.shape} and {p.shape}")
    _, ti = np.unique(t, return_inverse=True)
    _, pi = np.unique(p, return_inverse=True)
    cont = np.zeros((ti.max() + 1, pi.max() + 1))
    np.add.at(cont, (ti, pi), 1.0)
    n = cont.sum()
    h_c, h_k = _entropy(cont.sum(1)), _entropy(cont.sum(0))
    nz = cont > 0
    # H(C|K) = -sum_{c,k} n_ck/n log(n_ck / n_k);  H(K|C) likewise with n_c
    h_c_given_k = float(-(cont[nz] / n * np.log(cont[nz] / np.broadcast_to(cont.sum(0), cont.shape)[nz])).sum())
    h_k_given_c = float(-(cont[nz] / n * np.log(cont[nz] / np.broadcast_to(cont.sum(1)[:, None], cont.shape)[nz])).sum())
    hom = 1.0 if h_c == 0 else 1.0 - h_c_given_k / h_c
    com = 1.0 if h_k == 0 else 1.0 - h_k_given_c / h_k
    if hom + com == 0:
        return 0.0
    return float((1 + beta) * hom * com / (beta * hom + com))


def _label_ids(labels, label_order: Sequence | None):
    """labels -> (ids into order, order). Default order: the distinct labels sorted by their own ordering
    (numbers numerically, strings alphabetically); labels of mixed types need an explicit label_order."""
    vals = labels.tolist() if isinstance(labels, (Tensor, np.ndarray)) else list(labels)
    if label_order is not None:
        order = list(label_order)
    else:
        try:
            order = sorted(set(vals))
        except TypeError:
            kinds = sorted({type(v).__name__ for v in vals})
            raise ValueError(f"labels mix types {kinds} that have no common order: pass label_order") from None
    index = {lab: i for i, lab in enumerate(order)}
    missing = sorted({v for v in vals if v not in index}, key=str)
    if missing:
        raise ValueError(f"labels contain values not in label_order: {missing[:5]}")
    return torch.tensor([index[v] for v in vals], dtype=torch.long), order


def clustering_v_measure(embeddings, labels, *, n_init: int = 10, seed: int = 0, k: int | None = None) -> float:
    """Spherical k-means with k = number of distinct labels (10 inits, minimum inertia) -> V-measure."""
    vals = labels.tolist() if isinstance(labels, (Tensor, np.ndarray)) else list(labels)
    ids, order = _label_ids(vals, list(dict.fromkeys(vals)))  # V-measure does not depend on the label order
    x = check_embeddings("embeddings", embeddings)
    if x.shape[0] != ids.numel():
        raise ValueError(f"embeddings has {x.shape[0]} rows but labels has {ids.numel()} entries")
    pred, _, _ = spherical_kmeans(x, k or len(order), n_init=n_init, seed=seed)
    return v_measure(ids, pred)


def label_cosine_matrix(embeddings, labels, label_order: Sequence | None = None):
    """AvgCosSim (E, E) of eq. 11 (mean cosine between the samples of two labels) and the label order."""
    x = torch.nn.functional.normalize(check_embeddings("embeddings", embeddings).double(), dim=1)
    ids, order = _label_ids(labels, label_order)
    if x.shape[0] != ids.numel():
        raise ValueError(f"embeddings has {x.shape[0]} rows but labels has {ids.numel()} entries")
    counts = torch.bincount(ids, minlength=len(order))
    if bool((counts == 0).any()):
        absent = [order[i] for i in (counts == 0).nonzero().flatten().tolist()]
        raise ValueError(f"labels in label_order without samples: {absent}")
    means = torch.zeros(len(order), x.shape[1], dtype=x.dtype).index_add_(0, ids, x) / counts[:, None]
    return means @ means.T, order


def cd_r(embeddings, labels, label_distance, label_order: Sequence | None = None, *, include_diagonal: bool = False) -> float:
    """Pearson(CD(i, j), 1 - AvgCosSim(i, j)) over label pairs (eq. 10). label_distance: (E, E) in label_order
    (default: the distinct labels sorted, numbers numerically: 0, 1, 2, ..., 10, 11)."""
    avg, order = label_cosine_matrix(embeddings, labels, label_order)
    cd = torch.as_tensor(np.asarray(label_distance, dtype=np.float64))
    if cd.shape != (len(order), len(order)):
        raise ValueError(f"label_distance must have shape ({len(order)}, {len(order)}) (one row per label), got {tuple(cd.shape)}")
    if len(order) < 2 + (0 if include_diagonal else 1):
        raise ValueError(f"CD-r needs at least 3 labels (2 with include_diagonal), got {len(order)}")
    iu = torch.triu_indices(len(order), len(order), offset=0 if include_diagonal else 1)
    return pearson(cd[iu[0], iu[1]], 1.0 - avg[iu[0], iu[1]])


POLARITY_DISTANCE = {("positive", "positive"): 0, ("negative", "negative"): 0, ("neutral", "neutral"): 0,
                     ("neutral", "positive"): 2, ("negative", "neutral"): 2, ("negative", "positive"): 4}


def circumplex_distance(positions: Sequence[int], polarities: Sequence[str], n_steps: int = 12) -> np.ndarray:
    """CD(i, j) = C(polarity_i, polarity_j) + circular steps between positions i and j on an n_steps circle."""
    if len(positions) != len(polarities):
        raise ValueError(f"positions and polarities must have equal length, got {len(positions)} and {len(polarities)}")
    bad = sorted({p for p in polarities if p not in ("positive", "negative", "neutral")})
    if bad:
        raise ValueError(f"polarities must be 'positive', 'negative' or 'neutral', got {bad}")
    pos = np.asarray(positions, dtype=np.int64) % n_steps
    diff = np.abs(pos[:, None] - pos[None, :])
    steps = np.minimum(diff, n_steps - diff)
    pol = np.array([[POLARITY_DISTANCE[tuple(sorted((a, b)))] for b in polarities] for a in polarities])
    return (pol + steps).astype(np.float64)
