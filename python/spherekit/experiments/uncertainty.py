"""The uncertainty a claim's check attaches to what it measured (claims.Measured interval / uncertainty).

    lo, hi, how = paired_bootstrap(per_query_a, per_query_b)        # mean(b - a) over the same evaluation items
    Measured.compare(mean_b - mean_a, ">", 0.0, text, interval=(lo, hi), uncertainty=how)

A paired bootstrap resamples the evaluation items (queries, pairs, texts) with replacement and recomputes the
statistic on both systems' values of the same items, so the interval reflects which items happened to be in the
test set, not the systems' own noise; the spread over seeds (units.aggregate) covers the training noise.
`bootstrap(statistic, n_items)` does the same for any statistic of a resample (a difference of two ROC-AUCs
recomputed on the resampled pairs, say). `hoeffding_interval` bounds a mean of bounded items whose values were not
kept. Runs keep their per-item values under "per_item" ({metric key: [value per item, in a fixed item order]});
claims.Scope.items reads them, averaged over a unit's seeds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

PER_ITEM = "per_item"
RESAMPLES, CONFIDENCE = 2000, 0.95


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


def paired_bootstrap(a, b, *, n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
                     seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of mean(b - a) over items resampled with replacement: (low, high, description).
    a and b are per-item values of two systems on the same items (same order)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D and of the same length, got shapes {a.shape} and {b.shape}")
    _check(n_resamples, confidence, a.size)
    diff = b - a
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(n_resamples, diff.size))].mean(axis=1)
    lo, hi = percentile_interval(means, confidence)
    return lo, hi, f"paired bootstrap over {diff.size:,} items, {confidence:.0%} interval"


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


def per_item(values, digits: int = 6) -> list[float]:
    """Per-item values as stored in a run's "per_item" (rounded: the card stays small, the bootstrap unchanged at
    the precision the card reports)."""
    return [round(float(v), digits) for v in np.asarray(values, dtype=np.float64).ravel()]


__all__ = ["CONFIDENCE", "PER_ITEM", "RESAMPLES", "bootstrap", "hoeffding_interval", "paired_bootstrap", "per_item",
           "percentile_interval", "seed_interval"]
