"""The uncertainty of the textbook's claims: the core's two-level bootstrap (api.uncertainty.two_level) over the
evaluation items a section kept (per_item: queries, pairs, near-miss items) and the section's seeds, on a unit's
own metrics: a section measures its alternatives inside one unit (one key each: "mnrl/R@10", "triplet/R@10"), so
every series of a claim comes from the runs of one condition, and seed s of every series is the same run (the
seeds are paired as the items are).

    series(s, "losses", "mnrl/R@10")                                  (seeds, items) per-item values, or None
    within_unit(s, "losses", [("triplet/R@10", "mnrl/R@10")], ">", 0.0, text)
        the rule  min over the pairs (a, b) of (metric(b) - metric(a))  op margin; on a draw (item multiplicities w,
        seed multiplicities v) each difference is  sum_i w_i (xbar_b,i - xbar_a,i) / n  with xbar_i = sum_s v_s x_si
        / m, and the smallest of them is the resample's value
    set_mean(s, "order", "role swaps/cosine", ">", 0.9, text, "role swaps")
        the rule  mean over the items of a series  op margin
    weighted_median(values (m, n), draw)                              the median of every seed's values, resampled
    two_sample(statistic, n_a, n_b)                                   two unpaired item sets (module thresholds)

frozen=True: the series were measured on the frozen backbone (listing 1's set, the frozen poolings, the role swaps;
the ANN sweep is unseeded): they are the same at every seed (the runs share them), so the seeds are not resampled
and the card says there is no training noise (FROZEN, or the reason given as `frozen`); their seed mean is the one
row resampled. The trained series (losses, mining,
fine-tuned poolings, the verifier) resample their seeds with the items: a unit with one run says its training noise
is unmeasured (the 1-seed card then borrows the seed std of the cpu-small card, spec.noise_preset).

Runs measured before per-item values were kept give the point estimate alone (claims.NO_ITEMS), as
claims.difference does. Whether the trainings a claim reads learned is the core's gate (paper.py: rests_on).
"""

from __future__ import annotations

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.uncertainty import CONFIDENCE, bootstrap, two_level

FROZEN = "frozen backbone: the same values at every seed, no training noise"


def series(s, condition: str, key: str) -> np.ndarray | None:
    """The (seeds, items) per-item values of `key` of every run of the unit (claims.Scope.series), or None when
    its runs kept none."""
    try:
        return s.series(condition, key)
    except NotRun:
        return None


def unit_noise(condition: str, arrays: list[np.ndarray], statistic, noun: str, *, frozen: bool | str = False) -> dict:
    """The keyword arguments of Measured.compare (interval, uncertainty, seed_std) of statistic(draw, arrays) ->
    (R,) over the unit's (seeds, items) arrays: two_level with the unit's seeds, or (frozen) over the items of the
    arrays' seed means alone (module docstring)."""
    if frozen:
        arrays = [a.mean(axis=0, keepdims=True) for a in arrays]
    n = arrays[0].shape[1]
    noise = two_level(lambda d: statistic(d, arrays), n, {condition: arrays[0].shape[0]}, items=noun)
    how = noise.uncertainty
    if frozen:
        how = f"bootstrap over {n:,} {noun}, {CONFIDENCE:.0%} interval ({FROZEN if frozen is True else frozen})"
    return {"interval": noise.interval, "uncertainty": how, "seed_std": None if frozen else noise.seed_std}


def within_unit(s, condition: str, pairs, op: str, margin: float, text: str, *, noun: str = "queries",
                frozen: bool = False) -> Measured:
    """The rule `min over (a, b) in pairs of metric(b) - metric(a)  op  margin` on one unit's metrics (the mean
    over its seeds), with the two-level bootstrap of the same minimum as its interval (module docstring)."""
    value = min(s.metric(condition, b) - s.metric(condition, a) for a, b in pairs)
    columns = [series(s, condition, k) for pair in pairs for k in pair]
    if any(x is None for x in columns):
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS)

    def smallest(d, arrays):
        return np.min([d.mean(condition, b) - d.mean(condition, a) for a, b in zip(arrays[::2], arrays[1::2])],
                      axis=0)

    return Measured.compare(value, op, margin, text, **unit_noise(condition, columns, smallest, noun, frozen=frozen))


def set_mean(s, condition: str, key: str, op: str, margin: float, text: str, noun: str, *,
             frozen: bool = False) -> Measured:
    """The rule `mean over the items of key (and the seeds)  op  margin`, with its two-level bootstrap."""
    x = s.series(condition, key)
    return Measured.compare(float(x.mean()), op, margin, text,
                            **unit_noise(condition, [x], lambda d, a: d.mean(condition, a[0]), noun, frozen=frozen))


def weighted_median(values: np.ndarray, draw, unit: str) -> np.ndarray:
    """(R,) medians of the (seeds, items) `values` pooled, element (s, i) taken v_s w_i times (draw.seeds[unit],
    draw.items): the mean of the lower and upper weighted medians (the first sorted element whose cumulative weight
    reaches half the total, and the first to pass it), so that all-ones weights give np.median of the values."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, axis=None, kind="stable")
    ranked = x.ravel()[order]
    weights = (draw.seeds[unit][:, :, None] * draw.items[:, None, :]).reshape(len(draw.items), -1)[:, order]
    cum = np.cumsum(weights, axis=1)
    half = cum[:, -1:] / 2
    lower, upper = np.argmax(cum >= half, axis=1), np.argmax(cum > half, axis=1)
    return (ranked[lower] + ranked[upper]) / 2


def two_sample(statistic, n_a: int, n_b: int, *, seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of statistic(idx_a, idx_b) over independent resamples of two unpaired item sets: the
    thresholds' held-out queries of the terms corpus and those of the example-sentence corpus are different queries
    (no item of one is an item of the other), so the paired two_level model, which draws one item multiplicity per
    item shared by every series, does not fit; each set is resampled with replacement on its own (a stratified
    bootstrap: resample r draws idx_a of n_a and idx_b of n_b). The section is frozen (no seeds to resample)."""
    rng = np.random.default_rng(seed + 1)
    lo, hi, _ = bootstrap(lambda idx: statistic(idx, rng.integers(0, n_b, size=n_b)), n_a, seed=seed)
    return lo, hi, (f"bootstrap over {n_a:,} + {n_b:,} queries of two corpora (unpaired: resampled independently), "
                    f"{CONFIDENCE:.0%} interval ({FROZEN})")
