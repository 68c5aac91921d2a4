"""The noise of the DefSent+ claims: a paired, stratified bootstrap over the evaluation items, seeds averaged, and
the rule that decides whether a run's objective learned at all.

Items. A run keeps, for the metrics the claims compare, one value per evaluation item ("per_item": a similarity
pair's cosine, a query's reciprocal rank x 100, a definition's hit x 100, a probe sentence's correctness x 100) and
what the statistic needs beside them ("items": {key: {"kind", "strata", "gold"}}, the same for every run of the
same data). A statistic is the mean over strata (noun / verb pairs, the STS sets, the probe tasks) of

    kind "mean"       the mean of the stratum's values (MRR, Acc@k, probe accuracy)
    kind "spearman"   100 x Spearman's rho of the stratum's values against its gold (ties: average ranks)

which is how the metric itself is computed. A comparison `metric(b) - metric(a)` resamples each stratum's items with
replacement (the same items for both units: paired), recomputes the statistic of every seed's run of each unit,
averages it over the unit's seeds and takes the 2.5% / 97.5% quantiles of the difference (2,000 resamples): the
interval covers which items happened to be in the test set, with the seeds' noise averaged in. Runs measured before
items were kept compare their means alone (claims.NO_ITEMS).

Learned. Eq. 1 over E classes at the uniform softmax has the loss ln E. A run's objective learned when its loss fell
by the experiment core's rule (spherekit.experiments.api.learning: the last quarter of the logged curve at least 5% and
two standard errors below the first quarter) and its final loss (the last quarter's mean) is at most half of ln E,
i.e. the right entry's geometric-mean probability is at least 1 / sqrt(E) (E = 220,034: 1 in 469; uniform: 1 / E). A claim that compares a trained unit whose runs did not all learn is
"inconclusive": it would compare perturbations of the starting encoder, not the method.
"""

from __future__ import annotations

import math

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.learning import curve_of, learned, unless_learned
from ..api.uncertainty import CONFIDENCE, PER_ITEM, RESAMPLES

ITEMS = "items"
KINDS = ("mean", "spearman")
LEARNED_FRACTION = 0.5  # final loss <= this x ln E
CHUNK = 250             # resamples per block (bounds the memory of an (R, n) block)


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


def _rank_rows(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x, axis=1)


def _row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(1, keepdims=True)
    y = y - y.mean(1, keepdims=True)
    den = np.sqrt((x * x).sum(1) * (y * y).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (x * y).sum(1) / den, np.nan)


def statistic(values: np.ndarray, meta: dict, index: list[np.ndarray]) -> np.ndarray:
    """The statistic (see the module docstring) of `values` (n,) on resamples: index[s] is an (R, n_s) array of
    item positions of stratum s. Returns (R,)."""
    gold = None if meta["gold"] is None else np.asarray(meta["gold"], dtype=np.float64)
    per_stratum = []
    for idx in index:
        v = values[idx]
        if meta["kind"] == "mean":
            per_stratum.append(v.mean(1))
        else:
            per_stratum.append(100.0 * _row_pearson(_rank_rows(v), _rank_rows(gold[idx])))
    stacked = np.vstack(per_stratum)
    counts = (~np.isnan(stacked)).sum(0)
    return np.where(counts > 0, np.nansum(stacked, 0) / np.maximum(counts, 1), np.nan)  # NaN strata left out


def _resamples(meta: dict, n_resamples: int, rng) -> list[list[np.ndarray]]:
    """Blocks of stratified resamples: [[(r, n_s) positions per stratum], ...]."""
    offsets, start = [], 0
    for _, n in meta["strata"]:
        offsets.append((start, n))
        start += n
    blocks = []
    for first in range(0, n_resamples, CHUNK):
        r = min(CHUNK, n_resamples - first)
        blocks.append([o + rng.integers(0, n, size=(r, n)) for o, n in offsets])
    return blocks


def _unit_items(scope, condition: str, key: str):
    """(per-run values (runs, n), meta) of a unit; NotRun when its runs kept no items for `key`."""
    runs = scope.runs(condition)
    values = [r.get(PER_ITEM, {}).get(key) for r in runs]
    metas = [r.get(ITEMS, {}).get(key) for r in runs]
    if not runs or any(v is None for v in values) or any(m is None for m in metas):
        raise NotRun(f"{condition} ({key}, per item)")
    if any(m != metas[0] for m in metas[1:]) or len({len(v) for v in values}) != 1:
        raise ValueError(f"{condition}: the runs hold different evaluation items for {key}")
    return np.asarray(values, dtype=np.float64), metas[0]


def interval(scope, a: str, b: str, key: str, *, n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
             seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of statistic(b) - statistic(a) (each the mean over the unit's seeds) under the paired,
    stratified bootstrap; NotRun when a unit kept no items; ValueError when the units hold different items."""
    va, meta = _unit_items(scope, a, key)
    vb, meta_b = _unit_items(scope, b, key)
    if meta_b != meta or va.shape[1] != vb.shape[1]:
        raise ValueError(f"{a} and {b} hold different evaluation items for {key}: no paired bootstrap")
    rng = np.random.default_rng(seed)
    diffs = []
    for block in _resamples(meta, n_resamples, rng):
        sa = np.mean([statistic(v, meta, block) for v in va], axis=0)
        sb = np.mean([statistic(v, meta, block) for v in vb], axis=0)
        diffs.append(sb - sa)
    diff = np.concatenate(diffs)
    tail = (1 - confidence) / 2
    lo, hi = np.nanquantile(diff, [tail, 1 - tail])
    n_items = va.shape[1]
    strata = "/".join(name for name, _ in meta["strata"])
    seeds = f"{len(va)} vs {len(vb)} seed(s) averaged"
    return (float(lo), float(hi), f"paired bootstrap over {n_items:,} items (strata {strata}; {seeds}), "
                                  f"{confidence:.0%} interval")


def compare(scope, a: str, b: str, key: str, op: str, margin: float, *, text: str, label: str | None = None,
            shift: float = 0.0) -> Measured:
    """The rule `metric(b) - metric(a) - shift op margin` with the bootstrap interval of the difference (shifted
    alike); the point estimate alone (and NO_ITEMS) for runs measured before items were kept."""
    value = scope.metric(b, key) - scope.metric(a, key) - shift
    try:
        lo, hi, how = interval(scope, a, b, key)
    except NotRun:
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS, label=label)
    return Measured.compare(value, op, margin, text, interval=(lo - shift, hi - shift), uncertainty=how, label=label)


# ------------------------------------------------------------------ did the objective learn?

def objective_record(curve: list[float], n_classes: int, pooler: str = "backbone") -> dict:
    """A run's objective against the uniform softmax: ln E, the first logged loss, the final loss (mean of the last
    quarter of the curve), the pooler it trained and whether it learned (the module docstring's rule)."""
    if not curve or n_classes < 2:
        raise ValueError(f"need a loss curve and >= 2 classes, got {len(curve or [])} points and {n_classes}")
    ln_e = math.log(n_classes)
    tail = curve[-max(1, len(curve) // 4):]
    return {"classes": int(n_classes), "ln_E": ln_e, "start_loss": float(curve[0]), "final_loss": float(np.mean(tail)),
            "pooler": pooler, "learned": learned(curve, ceiling=LEARNED_FRACTION * ln_e) is True}


def run_objective(run: dict) -> dict | None:
    """The run's objective record under the current rule: rebuilt from its loss curve and its bank's entries when the
    run kept them, else the one it recorded (None for an untrained run)."""
    stored = run.get("objective") or {}
    curve = curve_of(run)
    entries = (run.get("bank") or {}).get("entries") or stored.get("classes")
    if curve and entries:
        return objective_record(curve, entries, stored.get("pooler", "backbone"))
    return stored or None


def not_learned(scope, *conditions: str) -> list[str]:
    """The conditions (of those given) some of whose runs' objectives did not learn, with their losses."""
    out = []
    for c in conditions:
        records = [run_objective(r) for r in scope.runs(c)]
        bad = [o for o in records if o is not None and not o["learned"]]
        if bad:
            final = np.mean([o["final_loss"] for o in bad])
            start = np.mean([o["start_loss"] for o in bad])
            out.append(f"{c} (loss {start:.2f} -> {final:.2f} vs ln E {bad[0]['ln_E']:.2f}; learned needs <= "
                       f"{LEARNED_FRACTION * bad[0]['ln_E']:.2f} and a fall)")
    return out


def gated(measured: Measured, scope, *conditions: str) -> Measured:
    """`measured`, or "inconclusive" (holds None) when one of the trained units' objectives did not learn."""
    return unless_learned(measured, not_learned(scope, *conditions))


__all__ = ["ITEMS", "LEARNED_FRACTION", "compare", "gated", "interval", "item_meta", "not_learned",
           "objective_record", "run_objective", "statistic"]
