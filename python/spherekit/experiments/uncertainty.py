"""The uncertainty a claim's check attaches to what it measured (claims.Measured interval / uncertainty).

    lo, hi, how = paired_bootstrap(per_query_a, per_query_b)        # mean(b - a) over the same evaluation items
    Measured.compare(mean_b - mean_a, ">", 0.0, text, interval=(lo, hi), uncertainty=how)

A paired bootstrap resamples the evaluation items (queries, pairs, texts) with replacement and recomputes the
statistic on both systems' values of the same items, so the interval reflects which items happened to be in the
test set, not the systems' own noise; the spread over seeds (runner.aggregate) covers the training noise.
"""

from __future__ import annotations

import numpy as np


def paired_bootstrap(a, b, *, n_resamples: int = 2000, confidence: float = 0.95,
                     seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of mean(b - a) over items resampled with replacement: (low, high, description).
    a and b are per-item values of two systems on the same items (same order)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D and of the same length, got shapes {a.shape} and {b.shape}")
    if a.size < 2:
        raise ValueError(f"a paired bootstrap needs at least 2 items, got {a.size}")
    if not 0 < confidence < 1 or n_resamples < 100:
        raise ValueError(f"need 0 < confidence < 1 and n_resamples >= 100, got {confidence} and {n_resamples}")
    diff = b - a
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(n_resamples, diff.size))
    means = diff[idx].mean(axis=1)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi), f"paired bootstrap over {diff.size:,} items, {confidence:.0%} interval"


__all__ = ["paired_bootstrap"]
