"""Ranking metrics over ranked candidate lists (vectorised; no Python loop over the ranked matrix), and
score metrics (ROC-AUC, Spearman, Pearson; at the end of this file). Geometry metrics (anisotropy,
effective rank) live in spherekit.evaluation.geometry; V-measure, spherical k-means and CD-r in
spherekit.evaluation.clustering.

Inputs shared by every function:

    ranked_ids : integer tensor (Q, K), candidate ids best first. Negative ids (e.g. -1) are padding
                 for queries with fewer than K candidates and are never relevant. A repeated id in a
                 row counts only at its first (best) position.
    relevant   : list of length Q; entry q is a dict {doc_id: gain > 0} or a set of doc ids (gain 1).
                 Every query needs at least one relevant id (a metric over no relevant ids is undefined).
    reduction  : "mean" -> float (mean over queries); "none" -> float64 tensor (Q,) of per-query values.

With g_q(r) the gain of the candidate at 1-based rank r (0 if not relevant) and R_q the relevant set:

    Recall@k  = |R_q ∩ top-k| / |R_q|
    MRR@k     = 1 / (first rank r <= k with g_q(r) > 0), 0 if none        (k=None: all K ranks)
    nDCG@k    = DCG@k / IDCG@k,  DCG@k = sum_{r<=k} g_q(r) / log2(r + 1),
                IDCG@k = the DCG of the gains of R_q sorted in decreasing order (linear gain, as trec_eval)
    Acc@1     = 1[g_q(1) > 0]

k larger than K uses all K candidates (nothing below rank K was retrieved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

__all__ = ["accuracy_at_1", "mrr", "ndcg_at_k", "pearson", "recall_at_k", "roc_auc", "spearman"]


def _check_ranked(ranked_ids) -> Tensor:
    if not isinstance(ranked_ids, Tensor):
        try:
            ranked_ids = torch.as_tensor(ranked_ids)
        except Exception as exc:
            raise TypeError(f"ranked_ids must be an integer tensor (Q, K), got {type(ranked_ids).__name__}") from exc
    if ranked_ids.dtype.is_floating_point or ranked_ids.dtype.is_complex or ranked_ids.dtype == torch.bool:
        raise TypeError(f"ranked_ids must have an integer dtype, got {ranked_ids.dtype}")
    if ranked_ids.dim() != 2:
        raise ValueError(f"ranked_ids must have 2 dimensions (Q, K), got shape {tuple(ranked_ids.shape)}")
    if ranked_ids.shape[0] == 0 or ranked_ids.shape[1] == 0:
        raise ValueError(f"ranked_ids is empty (shape {tuple(ranked_ids.shape)}); need Q >= 1 queries and K >= 1")
    return ranked_ids.detach().to("cpu", torch.int64)


def _flatten_relevant(relevant, n_queries: int) -> tuple[Tensor, Tensor, Tensor]:
    """-> (query index, doc id, gain) of every relevant pair, as flat tensors."""
    if not isinstance(relevant, Sequence) or isinstance(relevant, (str, bytes)):
        raise TypeError(f"relevant must be a list of dicts or sets (one per query), got {type(relevant).__name__}")
    if len(relevant) != n_queries:
        raise ValueError(f"relevant must have one entry per query: expected {n_queries} (ranked_ids.shape[0]), got {len(relevant)}")
    qs: list[int] = []
    ids: list[int] = []
    gains: list[float] = []
    for q, rel in enumerate(relevant):
        if isinstance(rel, Mapping):
            items = rel.items()
        elif isinstance(rel, (set, frozenset, list, tuple)):
            items = ((d, 1.0) for d in rel)
        else:
            raise TypeError(f"relevant[{q}] must be a dict {{doc_id: gain}} or a set of doc ids, got {type(rel).__name__}")
        n_before = len(ids)
        for d, g in items:
            g = float(g)
            if not g > 0:
                raise ValueError(f"relevant[{q}][{d!r}] must be a gain > 0, got {g}")
            try:
                d_int = int(d)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"relevant[{q}] doc ids must be integers (as in ranked_ids), got {d!r}") from exc
            if d_int < 0:
                raise ValueError(f"relevant[{q}] doc ids must be >= 0 (negative ids are padding), got {d_int}")
            qs.append(q)
            ids.append(d_int)
            gains.append(g)
        if len(ids) == n_before:
            raise ValueError(f"relevant[{q}] is empty; every query needs at least one relevant id")
    return (torch.tensor(qs, dtype=torch.int64), torch.tensor(ids, dtype=torch.int64), torch.tensor(gains, dtype=torch.float64))


def _first_occurrence(ranked: Tensor) -> Tensor:
    """Bool (Q, K): True where the id has not appeared earlier in its row."""
    sorted_ids, order = torch.sort(ranked, dim=1, stable=True)
    repeat = torch.zeros_like(sorted_ids, dtype=torch.bool)
    repeat[:, 1:] = sorted_ids[:, 1:] == sorted_ids[:, :-1]
    first = torch.empty_like(repeat)
    first.scatter_(1, order, ~repeat)
    return first


def _gain_matrix(ranked: Tensor, rel_q: Tensor, rel_id: Tensor, rel_gain: Tensor) -> Tensor:
    """Float64 (Q, K): the gain of each ranked candidate (0 if not relevant, padding or a repeat)."""
    n_q, n_k = ranked.shape
    uniq, inv = torch.unique(torch.cat([ranked.reshape(-1), rel_id]), return_inverse=True)
    width = uniq.numel()
    key_ranked = torch.arange(n_q).repeat_interleave(n_k) * width + inv[: n_q * n_k]
    key_rel = rel_q * width + inv[n_q * n_k :]
    key_rel, order = torch.sort(key_rel)
    gain_sorted = rel_gain[order]
    if key_rel.numel() > 1 and bool((key_rel[1:] == key_rel[:-1]).any()):
        raise ValueError("relevant lists a doc id twice for the same query (e.g. 1 and 1.0); use unique ids")
    pos = torch.searchsorted(key_rel, key_ranked).clamp_(max=key_rel.numel() - 1)
    hit = key_rel[pos] == key_ranked
    gains = torch.where(hit, gain_sorted[pos], torch.zeros((), dtype=torch.float64)).view(n_q, n_k)
    return gains * _first_occurrence(ranked)  # negative (padding) ids never match: relevant ids are >= 0


def _check_k(k, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {k!r}")
    return k


def _reduce(values: Tensor, reduction: str):
    if reduction == "mean":
        return float(values.mean())
    if reduction == "none":
        return values
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def _prepare(ranked_ids, relevant, k: int | None):
    ranked = _check_ranked(ranked_ids)
    rel_q, rel_id, rel_gain = _flatten_relevant(relevant, ranked.shape[0])
    if k is not None:
        ranked = ranked[:, : _check_k(k)]
    return ranked, rel_q, rel_gain, _gain_matrix(ranked, rel_q, rel_id, rel_gain)


def recall_at_k(ranked_ids, relevant, k: int, *, reduction: str = "mean"):
    """Recall@k = |relevant ∩ top-k| / |relevant| per query (see the module docstring)."""
    ranked, rel_q, _, gains = _prepare(ranked_ids, relevant, k)
    n_rel = torch.bincount(rel_q, minlength=ranked.shape[0]).to(torch.float64)
    return _reduce((gains > 0).sum(1).to(torch.float64) / n_rel, reduction)


def mrr(ranked_ids, relevant, k: int | None = None, *, reduction: str = "mean"):
    """Mean reciprocal rank of the first relevant candidate within the top k (k=None: all K)."""
    _, _, _, gains = _prepare(ranked_ids, relevant, k)
    hit = gains > 0
    ranks = torch.arange(1, hit.shape[1] + 1, dtype=torch.float64)
    recip = torch.where(hit, 1.0 / ranks, torch.zeros((), dtype=torch.float64))
    return _reduce(recip.max(dim=1).values, reduction)


def accuracy_at_1(ranked_ids, relevant, *, reduction: str = "mean"):
    """Acc@1: 1 if the top-ranked candidate is relevant, else 0."""
    _, _, _, gains = _prepare(ranked_ids, relevant, 1)
    return _reduce((gains[:, 0] > 0).to(torch.float64), reduction)


def ndcg_at_k(ranked_ids, relevant, k: int = 10, *, reduction: str = "mean"):
    """nDCG@k with linear gains and log2(rank + 1) discounts (see the module docstring)."""
    ranked, rel_q, rel_gain, gains = _prepare(ranked_ids, relevant, k)
    n_q, width = ranked.shape
    discount = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64))
    dcg = (gains * discount[:width]).sum(1)
    # ideal: each query's gains sorted in decreasing order, truncated to k
    order = torch.argsort(rel_q * 0.0 - rel_gain, stable=True)  # by decreasing gain ...
    order = order[torch.argsort(rel_q[order], stable=True)]  # ... then grouped by query
    q_sorted = rel_q[order]
    starts = torch.searchsorted(q_sorted, q_sorted, right=False)
    rank_in_q = torch.arange(q_sorted.numel()) - starts
    keep = rank_in_q < k
    idcg = torch.zeros(n_q, dtype=torch.float64)
    idcg.index_add_(0, q_sorted[keep], rel_gain[order][keep] * discount[rank_in_q[keep]])
    return _reduce(dcg / idcg, reduction)


# ----------------------------------------------------------------------------------------------
# Score metrics: ROC-AUC, Spearman, Pearson (numpy / scipy; inputs are 1-D tensors, arrays or lists)


def _as_1d(name: str, x):
    import numpy as np

    if isinstance(x, Tensor):
        x = x.detach().to("cpu", torch.float64).numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


def roc_auc(scores, labels) -> float:
    """Area under the ROC curve = P(score of a random positive > score of a random negative),
    ties counting 1/2 (the Mann-Whitney U statistic over n_pos * n_neg). labels: 1/True positive, 0/False negative."""
    import numpy as np
    from scipy.stats import rankdata

    s = _as_1d("scores", scores)
    y = _as_1d("labels", labels)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels must have the same length, got {s.shape[0]} and {y.shape[0]}")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"labels must be 0/1 (or bool), got values {sorted(set(y.tolist()))[:5]}")
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"roc_auc needs both classes, got {n_pos} positives and {n_neg} negatives")
    ranks = rankdata(s)  # average ranks for ties
    u = ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def pearson(x, y) -> float:
    """Pearson correlation r = cov(x, y) / (std(x) std(y))."""
    import numpy as np

    a, b = _as_1d("x", x), _as_1d("y", y)
    if a.shape != b.shape:
        raise ValueError(f"x and y must have the same length, got {a.shape[0]} and {b.shape[0]}")
    if a.size < 2:
        raise ValueError(f"correlation needs at least 2 points, got {a.size}")
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    if den == 0:
        raise ValueError("correlation is undefined: x or y is constant")
    return float((a * b).sum() / den)


def spearman(x, y) -> float:
    """Spearman's rho: the Pearson correlation of the (tie-averaged) ranks of x and y."""
    from scipy.stats import rankdata

    a, b = _as_1d("x", x), _as_1d("y", y)
    return pearson(rankdata(a), rankdata(b))
