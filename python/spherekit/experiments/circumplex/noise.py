"""The noise of the circumplex claims: a bootstrap over the test texts, and whether a run's objective learned.

V-measure and CD-r are not means over texts, so a claim's interval is spherekit.experiments.api.uncertainty.bootstrap
(statistic, n_texts): each resample draws the n test texts with replacement (one draw shared by every run the claim
compares, so the comparison is paired) and recomputes each run's statistic on it:

    V-measure  of the run's fixed k-means assignment on the resampled texts (k-means is not run again: the interval
               covers which texts were tested, not the clustering's restarts)
    CD-r       Pearson over the label pairs of (CD(i, j), 1 - A'(i, j)) with the resampled label-pair cosines
                   A'(i, j) = M'(i, j) + M'(j, i) - A(i, j),   M'(i, j) = mean of e_k . m_j over the resampled texts k
                                                                         of label i (m_j: label j's mean embedding)
               the first-order (linearised) resample of the bilinear AvgCosSim(i, j) = m_i . m_j: exact up to the
               product of two labels' mean shifts (second order); at the full sample A' = A.

A unit with several seeds gives, on each resample, the mean of its seeds' statistics (the card's metric is the mean
over seeds). A resample that leaves a label without texts gives NaN (the bootstrap's quantiles skip it).

A run keeps what this needs as "per_text" (record_of(evaluate_embeddings' per_text); compact strings, one line each
in results.json): "label" and "cluster" (one int per test text, label = index into details.label_order), "cosine"
(per label j, the texts' e_k . m_j with 4 decimals: a text's rounding error of 5e-5 averages out over a label's
texts), "circumplex distance" (the E x E CD matrix) and "pairs" (the CD-r pair set). The Pretrained run keeps the
same for the backbone's own sentence embedding under "backbone pooling/cluster" and "backbone pooling/cosine".

Learned: an objective learned when its training loss fell by the experiment core's rule
(spherekit.experiments.api.learning.judge_training: its probe, the loss of the first rows before and after, by 5%; where
a run kept no probe, the logged losses' last quarter mean at least 5% below the first quarter's, beyond two standard
errors of the two means). A claim that compares a run whose objective did not learn (in any seed) is inconclusive
by rule: it would measure the head's initialisation.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..api.learning import judge_training
from ..api.uncertainty import RESAMPLES, bootstrap
from .evaluate import _pair_index
from .spec import CD_R, V

PER_TEXT = "per_text"
OWN = "backbone pooling"  # the Pretrained run's second embedding: the backbone's own sentence embedding


# ---------------------------------------------------------------- the run record

def _ints(values) -> str:
    return " ".join(str(int(v)) for v in values)


def _floats(values) -> str:
    return " ".join(f"{float(v):.4f}" for v in values)


def record_of(per_text: dict, cd, pairs: str, prefix: str = "") -> dict:
    """The compact "per_text" record of evaluate_embeddings' per_text (prefix: e.g. "backbone pooling/" for a
    second embedding of the same texts, which keeps only its "cluster" and "cosine")."""
    out = {f"{prefix}cluster": _ints(per_text["cluster"]),
           f"{prefix}cosine": [_floats(col) for col in np.asarray(per_text["cosine"]).T]}
    if not prefix:
        out = {"label": _ints(per_text["label"]), **out, "circumplex distance": [_ints(r) for r in np.asarray(cd)],
               "pairs": pairs}
    return out


class Texts:
    """One run's per-text arrays: label (n,), cluster (n,), cosine (n, E), cd (E, E), the pair index, and A (the
    label-pair cosines at the full sample). Its statistics take resample weights W (R, n): row r holds how often
    resample r drew each text; they return one value per row."""

    def __init__(self, record: dict, prefix: str = ""):
        self.label = np.array(record["label"].split(), dtype=np.int64)
        self.cluster = np.array(record[f"{prefix}cluster"].split(), dtype=np.int64)
        self.cosine = np.array([c.split() for c in record[f"{prefix}cosine"]], dtype=np.float64).T
        self.cd = np.array([r.split() for r in record["circumplex distance"]], dtype=np.float64)
        self.n, self.e = self.cosine.shape
        self.k = int(self.cluster.max()) + 1
        self.onehot = np.eye(self.e)[self.label]
        self.cells = np.eye(self.e * self.k)[self.label * self.k + self.cluster]  # (n, E K): a text's (label, cluster)
        self.by_label = (self.onehot[:, :, None] * self.cosine[:, None, :]).reshape(self.n, -1)  # (n, E E)
        self.pairs = _pair_index(self.e, record["pairs"])
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


# ---------------------------------------------------------------- a scope's resamples

class Resampler:
    """Per condition of a scope, its runs' Texts; value(condition, key, idx) is the seed-mean statistic on the
    resample idx. The statistics of all RESAMPLES resamples are computed at once, on the draws
    uncertainty.bootstrap makes (its seeded generator, one rng.integers(0, n, n) per resample): every claim of a
    scope then looks its resamples up; a resample drawn otherwise is computed on its own."""

    def __init__(self, scope):
        self.scope, self._texts, self._draws, self._values = scope, {}, {}, {}

    def texts(self, condition: str, prefix: str = "") -> list[Texts] | None:
        """The condition's runs' Texts, or None when a run kept no per-text values (measured before they were)."""
        key = (condition, prefix)
        if key not in self._texts:
            records = [r.get(PER_TEXT) for r in self.scope.runs(condition)]
            ok = records and all(r and f"{prefix}cluster" in r for r in records)
            self._texts[key] = [Texts(r, prefix) for r in records] if ok else None
        return self._texts[key]

    def n_texts(self, needs) -> int | None:
        """The shared number of test texts of the (condition, prefix) pairs, or None when one lacks them."""
        sets = [self.texts(c, prefix) for c, prefix in needs]
        if any(s is None for s in sets):
            return None
        sizes = {t.n for s in sets for t in s}
        if len(sizes) != 1:
            raise ValueError(f"{self.scope.name}: the runs of {[c for c, _ in needs]} hold different test sets")
        return sizes.pop()

    def _rows(self, n: int) -> tuple[dict, np.ndarray]:
        """({draw bytes: row}, weights (RESAMPLES, n)) of bootstrap's draws over n texts."""
        if n not in self._draws:
            rng = np.random.default_rng(0)
            draws = [rng.integers(0, n, size=n) for _ in range(RESAMPLES)]
            weights = np.stack([np.bincount(d, minlength=n) for d in draws]).astype(np.float64)
            self._draws[n] = ({d.tobytes(): i for i, d in enumerate(draws)}, weights)
        return self._draws[n]

    def value(self, condition: str, key: str, idx: np.ndarray, prefix: str = "") -> float:
        texts = self.texts(condition, prefix)
        stat = {V: Texts.v_measure, CD_R: Texts.cd_r}[key]
        rows, weights = self._rows(texts[0].n)
        row = rows.get(np.asarray(idx, dtype=np.int64).tobytes())
        if row is None:
            w = np.bincount(idx, minlength=texts[0].n).astype(np.float64)[None]
            return float(np.mean([stat(t, w)[0] for t in texts]))
        memo = (condition, key, prefix)
        if memo not in self._values:
            self._values[memo] = np.mean([stat(t, weights) for t in texts], axis=0)
        return float(self._values[memo][row])


_RESAMPLERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def resampler(scope) -> Resampler:
    """The scope's Resampler (one per scope object)."""
    if scope not in _RESAMPLERS:
        _RESAMPLERS[scope] = Resampler(scope)
    return _RESAMPLERS[scope]


def interval(scope, needs, statistic) -> tuple[tuple[float, float] | None, str]:
    """((low, high), how) of statistic(value) over bootstrap resamples of the test texts; value(condition, key,
    prefix="") is a condition's seed-mean metric on the resample (prefix "backbone pooling/": the Pretrained run's
    second embedding). needs: the (condition, prefix) pairs statistic reads. (None, why) when a run kept no
    per-text values."""
    from ..api.claims import NO_ITEMS

    r = resampler(scope)
    n = r.n_texts(list(needs))
    if n is None:
        return None, NO_ITEMS

    def stat(idx):
        return statistic(lambda c, key, prefix="": r.value(c, key, idx, prefix))

    lo, hi, how = bootstrap(stat, n)
    return (lo, hi), how.replace("items", "test texts")


# ---------------------------------------------------------------- did the objective learn?

def not_learned(scope, conditions) -> list[str]:
    """The conditions whose objective did not learn in some seed, each with those seeds: "<condition> (seeds
    42, 43)"."""
    out = []
    for c in conditions:
        seeds = [str(run.get("seed")) for run in scope.runs(c) if judge_training(run.get("training"))[0] is False]
        if seeds:
            out.append(f"{c} (seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)})")
    return out


__all__ = ["OWN", "PER_TEXT", "Resampler", "Texts", "interval", "not_learned", "record_of", "resampler"]
