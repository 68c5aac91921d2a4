"""The noise of the DefSent+ claims: the experiment core's two-level bootstrap (uncertainty.two_level: the evaluation
items and every unit's seeds resampled together, the same items for both units: paired) of each metric computed as
the metric itself is computed, and the ceiling a training's loss must reach to have learned.

Items. A run keeps, for the metrics the claims compare, one value per evaluation item under "per_item" (a similarity
pair's cosine, a query's reciprocal rank x 100, a definition's hit x 100, a probe sentence's correctness x 100) and,
under "item_strata", what the metric needs beside them: {key: {"kind", "strata", "gold"}}, strata [[name, n], ...]
in the order of the values (the same for every run of the same data: the evaluation's design, not a measurement of
the run). With item i taken w_i times (a row of draw.items; all ones: the metric itself), one run's metric is the
mean over its strata S (noun / verb pairs, the STS sets, the probe tasks) of

    kind "mean"       sum_{i in S} w_i x_i / sum_{i in S} w_i                          (MRR, Acc@k, probe accuracy)
    kind "spearman"   100 x the w-weighted Pearson correlation, over S, of the average ranks of x and of gold, the
                      rank of item i being W_<(i) + (W_=(i) + 1) / 2 with W_<(i) = sum_{j in S: x_j < x_i} w_j and
                      W_=(i) = sum_{j in S: x_j = x_i} w_j

which is Spearman's rho (ties: average ranks) of the resample that repeats item i w_i times, computed without
repeating anything: one sort per stratum, then O(R n) for R resamples. A stratum without weight or with constant
ranks is NaN and left out of the mean. A unit's value is the mean of its runs' metrics over its resampled seeds,
sum_s v_s metric_s(w) / m (at v = 1: the card's metric, a mean over seeds of each seed's metric).

A comparison `metric(b) - metric(a)` takes the 2.5% / 97.5% quantiles of that difference over 2,000 resamples. The
items are resampled as one pool, not stratum by stratum: a stratum's size varies from resample to resample, which
adds the noise of its weight in the mean to that of its metric. Runs measured before items were kept compare their
means alone (claims.NO_ITEMS).

Learned. Eq. 1 over E classes at the uniform softmax has the loss ln E. Every trained run's encoder record carries
the ceiling CEILING_FRACTION x ln E (run.py): the final loss must reach half the uniform softmax's, i.e. the right
entry's geometric-mean probability at least 1 / sqrt(E) (E = 220,034: 1 in 469; uniform: 1 / E). The core's gate
(spherekit.experiments.api.learning) applies it with its rule of a falling loss to every training a claim rests
on (paper.CLAIMS' rests_on).
"""

from __future__ import annotations

import math

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.uncertainty import two_level

STRATA = "item_strata"
KINDS = ("mean", "spearman")
CEILING_FRACTION = 0.5  # a training learned only when its final loss is <= this x ln E


def ceiling(n_classes: int) -> float:
    """The loss a training over n_classes must reach to have learned: CEILING_FRACTION x ln E."""
    if n_classes < 2:
        raise ValueError(f"need >= 2 classes, got {n_classes}")
    return CEILING_FRACTION * math.log(n_classes)


def item_meta(kind: str, strata, gold=None) -> dict:
    """What a statistic needs beside the values: kind, strata [[name, n], ...] (values in that order), gold (for
    "spearman", aligned with the values)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    strata = [[str(name), int(n)] for name, n in strata]
    if gold is not None:
        gold = [float(g) for g in gold]
        if len(gold) != sum(n for _, n in strata):
            raise ValueError(f"gold has {len(gold)} values for {sum(n for _, n in strata)} items")
    elif kind == "spearman":
        raise ValueError("a spearman statistic needs gold values")
    return {"kind": kind, "strata": strata, "gold": gold}


def weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(R, n): the average rank of each x_i (n,) in the resamples that take item i w[r, i] times (module docstring:
    W_< + (W_= + 1) / 2; all ones: scipy's rankdata)."""
    order = np.argsort(x, kind="stable")
    ranked = x[order]
    below = np.zeros((w.shape[0], x.size + 1))
    below[:, 1:] = np.cumsum(w[:, order], axis=1)
    lo = below[:, np.searchsorted(ranked, x, "left")]
    hi = below[:, np.searchsorted(ranked, x, "right")]
    return lo + (hi - lo + 1) / 2


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(R,): the Pearson correlation of rows x and y (R, n) with item weights w (R, n); NaN without spread."""
    total = w.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - (w * x).sum(1, keepdims=True) / total
        dy = y - (w * y).sum(1, keepdims=True) / total
        vx, vy = (w * dx * dx).sum(1), (w * dy * dy).sum(1)
        spread = (vx > 1e-12 * (w * x * x).sum(1)) & (vy > 1e-12 * (w * y * y).sum(1))
        return np.where(spread, (w * dx * dy).sum(1) / np.sqrt(vx * vy), np.nan)


def statistic(values, meta: dict, weights) -> np.ndarray:
    """The metric of one run (module docstring) at item weights (R, n): (R,)."""
    values = np.asarray(values, dtype=np.float64)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    gold = None if meta["gold"] is None else np.asarray(meta["gold"], dtype=np.float64)
    per_stratum, start = [], 0
    for _, n in meta["strata"]:
        x, ws = values[start:start + n], w[:, start:start + n]
        if meta["kind"] == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                per_stratum.append((ws * x).sum(1) / ws.sum(1))
        else:
            g = gold[start:start + n]
            per_stratum.append(100.0 * _weighted_pearson(weighted_ranks(x, ws), weighted_ranks(g, ws), ws))
        start += n
    stacked = np.vstack(per_stratum)
    counts = (~np.isnan(stacked)).sum(0)
    return np.where(counts > 0, np.nansum(stacked, 0) / np.maximum(counts, 1), np.nan)  # NaN strata left out


def unit_value(draw, unit: str, series: np.ndarray, meta: dict) -> np.ndarray:
    """(R,): the unit's metric on the draw, the mean of its runs' metrics (series (m, n), one row per seed) over the
    draw's seeds of the unit (module docstring)."""
    per_seed = np.stack([statistic(row, meta, draw.items) for row in series], axis=1)  # (R, m)
    v = draw.seeds[unit]
    return np.where(v > 0, v * per_seed, 0.0).sum(1) / v.shape[1]


def _unit_items(scope, condition: str, key: str) -> tuple[np.ndarray, dict]:
    """(per-run values (runs, n), meta) of a unit; NotRun when its runs kept no items for `key`."""
    values = scope.series(condition, key)
    metas = [(r.get(STRATA) or {}).get(key) for r in scope.runs(condition)]
    if any(m is None for m in metas):
        raise NotRun(f"{condition} ({key}, per item)")
    if any(m != metas[0] for m in metas[1:]):
        raise ValueError(f"{condition}: the runs hold different evaluation items for {key}")
    return values, metas[0]


def compare(scope, a: str, b: str, key: str, op: str, margin: float, *, text: str, label: str | None = None,
            shift: float = 0.0, seed: int = 0) -> Measured:
    """The rule `metric(b) - metric(a) - shift op margin` with the two-level interval of the difference (shifted
    alike); the point estimate alone (and NO_ITEMS) for runs measured before items were kept; ValueError when the
    units hold different items."""
    value = scope.metric(b, key) - scope.metric(a, key) - shift
    try:
        (xa, meta), (xb, meta_b) = _unit_items(scope, a, key), _unit_items(scope, b, key)
    except NotRun:
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS, label=label)
    if meta_b != meta or xa.shape[1] != xb.shape[1]:
        raise ValueError(f"{a} and {b} hold different evaluation items for {key}: no paired bootstrap")
    strata = "/".join(name for name, _ in meta["strata"])
    noise = two_level(lambda d: unit_value(d, b, xb, meta) - unit_value(d, a, xa, meta) - shift, xa.shape[1],
                      {a: len(xa), b: len(xb)}, seed=seed, items=f"items ({strata})")
    return Measured.compare(value, op, margin, text, label=label, **noise.measured())


__all__ = ["CEILING_FRACTION", "STRATA", "ceiling", "compare", "item_meta", "statistic", "unit_value",
           "weighted_ranks"]
