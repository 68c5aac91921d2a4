"""The noise model: the uncertainty a claim's check attaches to what it measured (claims.Measured interval,
uncertainty, seed_std).

    noise = two_level(statistic, n_items, {"B0": 1, "B1": 3})     # seeds and items resampled together
    Measured.compare(noise.value, ">", 0.0, text, **noise.measured())

A claim's value is a statistic of several units' per-item series: unit u has m_u runs (seeds) and every run holds
one value per evaluation item (query, pair, text) in the same item order ("per_item": {metric key: [value per
item]}). Its noise has two sources, and a two-level bootstrap resamples both at once: each resample draws the items
with replacement (multiplicities w_i, summing to n: the same items for every unit, so conditions are paired) and,
for every unit with several seeds, its seeds with replacement (multiplicities v_us, summing to m_u: the same seed
draw for units of the same seed count, common random numbers across conditions), and recomputes

    statistic(Draw(items=w, seeds={u: v_u}))      e.g. mean_i w_i (sum_s v_bs x_bsi / m_b - sum_s v_as x_asi / m_a)

Its percentile interval is the claim's interval; resamples are drawn in chunks (CHUNK_BYTES) so memory stays bounded
whatever the number of items. A unit with one seed adds no training noise: the card says it is unmeasured
(two_level's description), and the claim's seed_std (the sample std over seeds j of the statistic on run j of every
unit, from a preset with 3 seeds) is what a 1-seed card borrows to decide whether its value clears the margin by
more than twice the training noise (claims.evaluate). The statistics a paper needs: mean (a mean over items of a
unit's seed-mean series), count_weighted_auc (a ROC-AUC when each item is taken w_i times), and anything a paper
computes from the draw's weights (circumplex's contingency-table V-measure, defsent's stratified Spearman).
`hoeffding_interval` bounds a mean of bounded items whose values were not kept; `bootstrap` is the items-only
bootstrap of any statistic of resampled item indices (for a unit whose items cannot be weighted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

PER_ITEM = "per_item"
RESAMPLES, CONFIDENCE = 2000, 0.95
CHUNK_BYTES = 32 << 20  # the item weights of one chunk of resamples (float64), times the units' series


def _check(n_resamples: int, confidence: float, n_items: int) -> None:
    if not 0 < confidence < 1 or n_resamples < 100:
        raise ValueError(f"need 0 < confidence < 1 and n_resamples >= 100, got {confidence} and {n_resamples}")
    if n_items < 2:
        raise ValueError(f"a bootstrap needs at least 2 items, got {n_items}")


def bootstrap(statistic: Callable[[np.ndarray], float], n_items: int, *, n_resamples: int = RESAMPLES,
              confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of statistic(indices) over resamples of the item indices 0..n_items-1 with replacement:
    (low, high, description)."""
    _check(n_resamples, confidence, n_items)
    rng = np.random.default_rng(seed)
    values = np.array([statistic(rng.integers(0, n_items, size=n_items)) for _ in range(n_resamples)])
    tail = (1 - confidence) / 2
    lo, hi = np.nanquantile(values, [tail, 1 - tail])
    return float(lo), float(hi), f"bootstrap over {n_items:,} items, {confidence:.0%} interval"


def percentile_interval(replicates, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central `confidence` percentile interval of bootstrap replicates of a statistic (kept replicates
    differenced replicate by replicate, say, under common random numbers)."""
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(np.asarray(replicates, dtype=np.float64), [tail, 1 - tail])
    return float(lo), float(hi)


def seed_interval(values, *, confidence: float = CONFIDENCE) -> tuple[float, float, str] | None:
    """Student-t interval of the mean of per-seed values: (low, high, description), or None for fewer than 2 seeds
    (one run has no spread to measure)."""
    from scipy.stats import t as student

    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be 1-D (one per seed), got shape {x.shape}")
    if x.size < 2:
        return None
    half = float(student.ppf(0.5 + confidence / 2, x.size - 1)) * float(x.std(ddof=1)) / np.sqrt(x.size)
    return float(x.mean() - half), float(x.mean() + half), f"t-interval over {x.size} seeds, {confidence:.0%}"


def hoeffding_interval(value: float, n_items: int, item_range: float, *,
                       confidence: float = CONFIDENCE) -> tuple[float, float, str]:
    """Distribution-free interval of a mean of n_items independent draws, each inside an interval of width
    item_range (Hoeffding's inequality, P(|mean - E mean| >= t) <= 2 exp(-2 n t^2 / range^2)):

        value +- item_range sqrt(ln(2 / (1 - confidence)) / (2 n_items))

    Wider than a bootstrap, but it needs no per-item values: for a mean whose items were not kept (anisotropy's
    random pairs, say), where only their number and range are known. (low, high, description)."""
    if not 0 < confidence < 1:
        raise ValueError(f"need 0 < confidence < 1, got {confidence}")
    if n_items < 1 or not item_range > 0:
        raise ValueError(f"need n_items >= 1 and item_range > 0, got {n_items} and {item_range}")
    half = item_range * float(np.sqrt(np.log(2 / (1 - confidence)) / (2 * n_items)))
    return (float(value) - half, float(value) + half,
            f"Hoeffding bound over {n_items:,} independent items of range {item_range:g}, {confidence:.0%} interval")


@dataclass(frozen=True)
class Draw:
    """One chunk of R resamples: items (R, n_items) multiplicities of the evaluation items (each row sums to
    n_items; all ones for the point value), seeds {unit: (R, m_u) multiplicities of its seeds} (each row sums to
    m_u)."""

    items: np.ndarray
    seeds: Mapping[str, np.ndarray]

    def seed_mean(self, unit: str, series) -> np.ndarray:
        """(R, n_items): the unit's per-item values averaged over its resampled seeds, sum_s v_us x_usi / m_u, from
        `series` (m_u, n_items), one row per seed."""
        x = np.asarray(series, dtype=np.float64)
        v = self.seeds[unit]
        if x.ndim != 2 or x.shape[0] != v.shape[1]:
            raise ValueError(f"{unit}: series must be (seeds={v.shape[1]}, items), got shape {x.shape}")
        return v @ x / v.shape[1]

    def seed_average(self, unit: str, per_seed) -> np.ndarray:
        """(R,): a statistic computed once per run of the unit (per_seed (R, m_u): run s's value on resample r, e.g.
        its ROC-AUC under the resample's item weights) averaged over the resampled seeds, sum_s v_us y_rs / m_u."""
        y = np.asarray(per_seed, dtype=np.float64)
        v = self.seeds[unit]
        if y.shape != v.shape:
            raise ValueError(f"{unit}: per_seed must be (resamples, seeds) = {v.shape}, got shape {y.shape}")
        return (v * y).sum(1) / v.shape[1]

    def mean(self, unit: str, series) -> np.ndarray:
        """(R,): the weighted mean over items of the unit's seed-mean series, sum_i w_i xbar_ui / n."""
        return (self.seed_mean(unit, series) * self.items).sum(1) / self.items.sum(1)


@dataclass(frozen=True)
class Noise:
    """What two_level measured: value (the statistic on every item and seed once), interval (percentile, or None
    when nothing could be resampled), uncertainty (the estimator and what it resampled, for the card), seed_std (the
    sample std over seeds of the per-seed statistic; None with fewer than 2 seeds in every unit), seeds_measured
    (whether seeds were resampled)."""

    value: float
    interval: tuple[float, float] | None
    uncertainty: str
    seed_std: float | None
    seeds_measured: bool

    def measured(self) -> dict:
        """The keyword arguments of claims.Measured.compare that carry this noise."""
        return {"interval": self.interval, "uncertainty": self.uncertainty, "seed_std": self.seed_std}


def _multiplicities(rng, rows: int, n: int) -> np.ndarray:
    """(rows, n) counts of n draws with replacement from n things (multinomial, equal probabilities)."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=rows).astype(np.float64)


def two_level(statistic: Callable[[Draw], np.ndarray], n_items: int, n_seeds: Mapping[str, int], *,
              n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = 0,
              chunk_bytes: int = CHUNK_BYTES, items: str = "items", frozen=()) -> Noise:
    """The two-level bootstrap of `statistic` (module docstring): statistic(draw) -> (R,) values of R resamples.
    n_seeds: {unit: its number of runs}; units with one run are not seed-resampled. items: what the evaluation
    items are, for the card ("queries", "test pairs"). frozen: units that train nothing (one unseeded run: no
    training noise to measure, and the card does not call it unmeasured)."""
    _check(n_resamples, confidence, n_items)
    bad = {u: m for u, m in n_seeds.items() if int(m) < 1}
    if bad or not n_seeds:
        raise ValueError(f"n_seeds needs at least one unit, each with at least 1 seed, got {dict(n_seeds)}")
    ones = Draw(np.ones((1, n_items)), {u: np.ones((1, m)) for u, m in n_seeds.items()})
    value = float(np.asarray(statistic(ones)).reshape(-1)[0])
    many = sorted({m for m in n_seeds.values() if m > 1})
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, chunk_bytes // (8 * n_items * (1 + len(n_seeds)))))
    values = []
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        weights = _multiplicities(rng, rows, n_items)
        by_count = {m: _multiplicities(rng, rows, m) for m in many}
        seeds = {u: by_count[m] if m > 1 else np.ones((rows, 1)) for u, m in n_seeds.items()}
        values.append(np.asarray(statistic(Draw(weights, seeds)), dtype=np.float64).reshape(rows))
    lo, hi = np.nanquantile(np.concatenate(values), [(1 - confidence) / 2, (1 + confidence) / 2])
    interval = None if np.isnan(lo) or np.isnan(hi) else (float(lo), float(hi))
    frozen = set(frozen)
    single = sorted(u for u, m in n_seeds.items() if m == 1 and u not in frozen)
    if many:
        resampled = ", ".join(f"{u} {m}" for u, m in n_seeds.items() if m > 1)
        seeds_text = f"seeds ({resampled}) and {n_items:,} {items}"
        how = f"two-level bootstrap over {seeds_text} resampled together"
    else:
        how = f"bootstrap over {n_items:,} {items}"
    if single:
        how += f"; {'training noise unmeasured: ' if not many else ''}1 run of {', '.join(single)}"
    how += f", {confidence:.0%} interval"
    return Noise(value, interval, how, _seed_std(statistic, n_items, n_seeds), bool(many))


def _seed_std(statistic, n_items: int, n_seeds: Mapping[str, int]) -> float | None:
    """The sample std over j of the statistic on run j of every unit with several seeds (run 0 of the others): the
    training noise of the claim's value at one seed; j runs over the smallest seed count among them."""
    m = min((k for k in n_seeds.values() if k > 1), default=1)
    if m < 2:
        return None
    seeds = {u: (np.eye(m, k) * k if k > 1 else np.ones((m, 1))) for u, k in n_seeds.items()}
    per_seed = np.asarray(statistic(Draw(np.ones((m, n_items)), seeds)), dtype=np.float64).reshape(m)
    return float(np.std(per_seed, ddof=1))


def count_weighted_auc(positive, negative, *, positive_item=None, negative_item=None, n_items: int | None = None):
    """The ROC-AUC of `positive` scores against `negative` scores when evaluation item i is taken w_i times: ->
    at(weights (R, n_items)) -> (R,). positive_item / negative_item: the item each score belongs to (default: score k
    is item k). With ties counting 1/2,

        AUC(w) = sum_p sum_q w_i(p) w_i(q) ([neg_q < pos_p] + [neg_q = pos_p] / 2) / (sum_p w_i(p) sum_q w_i(q))

    (all ones: evaluation.metrics.roc_auc). The negatives are sorted once; each resample costs O(scores)."""
    pos, neg = np.asarray(positive, dtype=np.float64).ravel(), np.asarray(negative, dtype=np.float64).ravel()
    p_item = np.arange(pos.size) if positive_item is None else np.asarray(positive_item, dtype=np.int64)
    q_item = np.arange(neg.size) if negative_item is None else np.asarray(negative_item, dtype=np.int64)
    if p_item.shape != pos.shape or q_item.shape != neg.shape:
        raise ValueError("positive_item / negative_item must have one entry per positive / negative score")
    n_items = int(n_items if n_items is not None else max(p_item.max(initial=-1), q_item.max(initial=-1)) + 1)
    order = np.argsort(neg, kind="stable")
    ranked, owner = neg[order], q_item[order]
    left, right = np.searchsorted(ranked, pos, "left"), np.searchsorted(ranked, pos, "right")

    def at(weights) -> np.ndarray:
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != n_items:
            raise ValueError(f"weights must have {n_items} columns (items), got shape {w.shape}")
        below = np.zeros((w.shape[0], ranked.size + 1))
        below[:, 1:] = np.cumsum(w[:, owner], axis=1)
        lo, hi = below[:, left], below[:, right]
        w_pos = w[:, p_item]
        total = w_pos.sum(1) * below[:, -1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, (w_pos * (lo + 0.5 * (hi - lo))).sum(1) / total, np.nan)

    return at


def per_item(values, digits: int = 6) -> list[float]:
    """Per-item values as stored in a run's "per_item" (rounded: the card stays small, the bootstrap unchanged at
    the precision the card reports)."""
    return [round(float(v), digits) for v in np.asarray(values, dtype=np.float64).ravel()]


__all__ = ["CHUNK_BYTES", "CONFIDENCE", "Draw", "Noise", "PER_ITEM", "RESAMPLES", "bootstrap", "count_weighted_auc",
           "hoeffding_interval", "per_item", "percentile_interval", "seed_interval", "two_level"]
