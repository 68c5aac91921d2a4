"""The noise of the circumplex claims: the experiment core's two-level bootstrap (spherekit.experiments.api.uncertainty
.two_level: the test texts and every multi-seed unit's seeds resampled together) of statistics that are not means
over texts. On a draw with text weights w (R, n) and seed multiplicities v_u (R, m_u), a unit's metric is the mean of
its runs' statistics over the resampled seeds, sum_s v_us x_s(w) / m_u (the card's metric, a mean over seeds, at
w = 1, v = 1), with x_s(w) for the run of seed s:

    V-measure  of the run's fixed k-means assignment on the texts taken w_k times: the V-measure (beta = 1) of the
               weighted (labels x clusters) contingency table N(w)[i, c] = sum_k w_k [label_k = i, cluster_k = c]
               (k-means is not run again: the interval covers which texts were tested and which seeds trained,
               not the clustering's restarts)
    CD-r       Pearson over the label pairs of (CD(i, j), 1 - A'(i, j)) with the resampled label-pair cosines
                   A'(i, j) = M'(i, j) + M'(j, i) - A(i, j),   M'(i, j) = w-weighted mean of e_k . m_j over the texts
                                                                         k of label i (m_j: label j's mean embedding)
               the first-order (linearised) resample of the bilinear AvgCosSim(i, j) = m_i . m_j: exact up to the
               product of two labels' mean shifts (second order); at the full sample A' = A.

A draw that leaves a label without texts gives NaN for CD-r (two_level's quantiles skip it).

A run keeps what this needs under "per_item" (record_of, from evaluate_embeddings' per_item): "label" (index into
details.label_order) and "cluster" (one int per test text), and per label j "cosine/<j>" (by name: "cosine/love"; the
texts' e_k . m_j, 4 decimals: a text's rounding error of 5e-5 averages out over a label's texts); its details keep
the E x E "circumplex_distance" and the "cd_pairs" of CD-r. The Pretrained run keeps the same for the backbone's own
sentence embedding under "backbone pooling/cluster" and "backbone pooling/cosine/<j>". Every run of a scope tests the
same texts in the same order (the draw's item weights are shared: paired).

Whether the trainings a claim compares learned is the core's gate (claims declare rests_on).
"""

from __future__ import annotations

import numpy as np

from ..api.uncertainty import PER_ITEM, Noise, per_item, two_level
from .evaluate import _pair_index
from .spec import CD_R, V

OWN = "backbone pooling"  # the Pretrained run's second embedding: the backbone's own sentence embedding
CD, PAIRS = "circumplex_distance", "cd_pairs"  # the run's details: the CD matrix and CD-r's pair set


def record_of(items: dict, order, prefix: str = "") -> dict:
    """The run's "per_item" entries of evaluate_embeddings' per_item (module docstring; order: the label order;
    prefix: e.g. "backbone pooling/" for a second embedding of the same texts, which keeps its "cluster" and
    "cosine/<j>" only)."""
    cosine = np.asarray(items["cosine"], dtype=np.float64)
    out = {f"{prefix}cluster": [int(c) for c in items["cluster"]],
           **{f"{prefix}cosine/{label}": per_item(cosine[:, j], 4) for j, label in enumerate(order)}}
    return out if prefix else {"label": [int(i) for i in items["label"]], **out}


class Texts:
    """One run's per-text arrays: label (n,), cluster (n,), cosine (n, E), cd (E, E), the pair index, and A (the
    label-pair cosines at the full sample). Its statistics take text weights w (R, n) and return one value per row."""

    def __init__(self, run: dict, prefix: str = ""):
        items, details = run[PER_ITEM], run["details"]
        order = details["label_order"]
        self.label = np.asarray(items["label"], dtype=np.int64)
        self.cluster = np.asarray(items[f"{prefix}cluster"], dtype=np.int64)
        self.cosine = np.array([items[f"{prefix}cosine/{label}"] for label in order], dtype=np.float64).T
        self.cd = np.asarray(details[CD], dtype=np.float64)
        self.n, self.e = self.cosine.shape
        self.k = int(self.cluster.max()) + 1
        self.onehot = np.eye(self.e)[self.label]
        self.cells = np.eye(self.e * self.k)[self.label * self.k + self.cluster]  # (n, E K): a text's (label, cluster)
        self.by_label = (self.onehot[:, :, None] * self.cosine[:, None, :]).reshape(self.n, -1)  # (n, E E)
        self.pairs = _pair_index(self.e, details[PAIRS])
        self.a = self.mean_cosine(np.ones((1, self.n)))[0]

    def mean_cosine(self, w: np.ndarray) -> np.ndarray:
        """M (R, E, E): M[r, i, j] the w[r]-weighted mean of cosine[k, j] over the texts k of label i (NaN rows:
        no weight)."""
        sums = (w @ self.by_label).reshape(-1, self.e, self.e)
        counts = w @ self.onehot
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / counts[:, :, None]

    def v_measure(self, w: np.ndarray) -> np.ndarray:
        """V-measure (beta = 1) of the fixed assignment under each row of weights w (R, n)."""
        return _v_from_contingency((w @ self.cells).reshape(-1, self.e, self.k))

    def cd_r(self, w: np.ndarray) -> np.ndarray:
        """CD-r from the linearised resampled label-pair cosines (the module docstring), per row of w."""
        m = self.mean_cosine(w)
        a = m + m.transpose(0, 2, 1) - self.a
        ii, jj = self.pairs
        return _pearson(self.cd[ii, jj], 1.0 - a[:, ii, jj])


STATISTICS = {V: Texts.v_measure, CD_R: Texts.cd_r}


def _entropy(p: np.ndarray, axes) -> np.ndarray:
    """-sum p log p over `axes` (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(axis=axes)


def _v_from_contingency(cont: np.ndarray) -> np.ndarray:
    """V-measure of each (classes x clusters) contingency table of cont (R, E, K) (Rosenberg and Hirschberg 2007):
    h = 1 - H(C|K) / H(C), c = 1 - H(K|C) / H(K), V = 2 h c / (h + c), with H(C|K) = H(C, K) - H(K)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = cont / cont.sum(axis=(1, 2), keepdims=True)
        h_c, h_k, h_ck = _entropy(p.sum(2), 1), _entropy(p.sum(1), 1), _entropy(p, (1, 2))
        hom = np.where(h_c == 0, 1.0, 1.0 - (h_ck - h_k) / h_c)
        com = np.where(h_k == 0, 1.0, 1.0 - (h_ck - h_c) / h_k)
        return np.where(hom + com == 0, 0.0, 2.0 * hom * com / (hom + com))


def _pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson(a, b[r]) per row r of b (R, P); NaN for a row with a non-finite entry or no spread."""
    a, b = a - a.mean(), b - b.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (b @ a) / np.sqrt((a * a).sum() * (b * b).sum(axis=1))
    return np.where(np.isfinite(b).all(axis=1) & np.isfinite(r), r, np.nan)


def texts(scope, condition: str, prefix: str = "") -> list[Texts] | None:
    """The Texts of the condition's runs, or None when a run kept no per-item values (measured before they were)."""
    runs = scope.runs(condition)
    ok = runs and all(f"{prefix}cluster" in (r.get(PER_ITEM) or {}) for r in runs)
    return [Texts(r, prefix) for r in runs] if ok else None


def measure(scope, needs, statistic) -> Noise | None:
    """two_level of statistic(value), value(condition, key, prefix="") -> (R,): the condition's metric V or CD-r on
    the draw, its runs' statistics averaged over the resampled seeds (prefix "backbone pooling/": the Pretrained run's
    second embedding). needs: the (condition, prefix) pairs statistic reads. None when a run kept no per-item
    values."""
    runs = {need: texts(scope, *need) for need in dict.fromkeys(needs)}
    if any(r is None for r in runs.values()):
        return None
    first, *rest = [t for ts in runs.values() for t in ts]
    if any(t.n != first.n or not np.array_equal(t.label, first.label) for t in rest):
        raise ValueError(f"{scope.name}: the runs of {[c for c, _ in runs]} hold different test sets")
    n = first.n

    def on(draw):
        memo = {}

        def value(condition, key, prefix=""):
            if (condition, key, prefix) not in memo:
                per_seed = np.stack([STATISTICS[key](t, draw.items) for t in runs[(condition, prefix)]], axis=1)
                v = draw.seeds[condition]
                memo[(condition, key, prefix)] = (v * per_seed).sum(1) / v.shape[1]
            return memo[(condition, key, prefix)]

        return statistic(value)

    return two_level(on, n, {c: len(ts) for (c, _), ts in runs.items()}, items="test texts")


__all__ = ["CD", "OWN", "PAIRS", "STATISTICS", "Texts", "measure", "record_of", "texts"]
