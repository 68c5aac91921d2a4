"""The uncertainty of the concept claims where claims.difference (a paired bootstrap of a mean over items) does
not apply, and the rule that decides whether a trained condition learned.

ROC-AUC (stress rules, pair ROC-AUC against the hard negatives) is not a mean over items. Each run keeps, per test
pair i, cos(term, definition) p_i and cos(term, rule r's negative) n_ri (absent where r did not apply; evaluate.py
packs them into strings).
With c_i the number of times pair i is drawn in a resample of the test pairs (uncertainty.bootstrap),

    AUC = sum_i sum_j c_i c_o(j) ([n_j < p_i] + [n_j = p_i] / 2) / (sum_i c_i * sum_j c_o(j))

over the positives i and negatives j (o(j): the pair negative j belongs to) of the rule (its pairs only) or of all
rules (pair ROC-AUC). The negatives are sorted once, so a resample costs O(pairs + negatives). A condition's
statistic is the mean over its runs (seeds) on the same resample; a claim's is a linear combination of those (a
difference of two conditions, or one condition against a constant), so both sides see the same pairs (paired).

Geometry (anisotropy over 10,000 random pairs, effective rank of the test texts) is a function value = f(mean_c)
of the conditions' means (a difference, B3 - 2 B1, or a ratio, B1 / B0 - 1), with two intervals where the runs
allow, and the verdict reads their hull (decided only when both clear the margin):
  - evaluation items: each run keeps bootstrap replicates of its statistic under common random numbers (the same
    resampled pairs and rows for every condition and seed, evaluate.py); f of the condition's replicates averaged
    over its seeds, replicate by replicate, is a paired bootstrap of value: its percentile interval, recentred so
    that the replicates' median sits on value (the bootstrap gives the spread; an effective rank of rows drawn with
    replacement sits below the statistic, duplicated rows lowering it by about 2% on the cards' test texts, a shift
    that cancels in a ratio of two conditions but not against a constant);
  - seeds: value +- t(0.975, m - 1) sqrt(sum_c g_c^2 s_c^2 / n_c), g_c = df/dmean_c at the means (the delta
    method; exact for a linear f), s_c the sample std over condition c's n_c seeds and m the smallest n_c of the
    conditions with several seeds; a frozen condition (one run) adds no spread.
Layers (paper._final_layer: the final layer against every earlier one, in B0 and each B1 seed): the smallest gap
over layers and runs, with a percentile interval (not recentred: the smallest of noisy gaps sits low, which makes
the interval conservative for "> 0"): for MRR a paired bootstrap over the test terms of the runs' per-layer first
relevant ranks (the same terms in every run); for anisotropy, the layers' replicates (the same resampled pairs at
every layer and in every run) differenced replicate by replicate. Runs that kept no per-layer items fall back to
Hoeffding's inequality (paper._smallest_gap).

Learned: a trained condition learned when, in every seed, its training loss fell by the experiment core's rule
(spherekit.experiments.api.learning.judge_training: its probe by 5%, or where a run kept no probe, its logged losses'
last quarter against the first, at least 5% and beyond the noise); a claim
that reads a condition that did not learn is inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.learning import judge_training
from ..api.uncertainty import CONFIDENCE, bootstrap, percentile_interval
from .evaluate import rank_key, replicates_key
from .spec import SETUPS

AUC_RESAMPLES = 1000
TRUE_PAIR = "cosine (true pair)"


class _AUCItems:
    """One run's per-pair cosines for one ROC-AUC (one rule's, or the pair ROC-AUC over all rules)."""

    def __init__(self, positive: list, negatives: list[list]):
        self.n = len(positive)
        self.p = np.asarray(positive, dtype=np.float64)
        owner, values = [], []
        for column in negatives:
            for i, x in enumerate(column):
                if x is not None:
                    owner.append(i)
                    values.append(x)
        order = np.argsort(values, kind="stable")
        self.neg = np.asarray(values, dtype=np.float64)[order]
        self.owner = np.asarray(owner, dtype=np.int64)[order]
        self.has_negative = np.bincount(self.owner, minlength=self.n) > 0
        self.left = np.searchsorted(self.neg, self.p, "left")
        self.right = np.searchsorted(self.neg, self.p, "right")

    def auc(self, counts: np.ndarray, rule_only: bool) -> float:
        """ROC-AUC with pair i drawn counts[i] times (rule_only: positives are the pairs that have a negative)."""
        w_pos = counts * self.has_negative if rule_only else counts
        w_neg = counts[self.owner]
        cum = np.concatenate(([0.0], np.cumsum(w_neg)))
        below, ties = cum[self.left], cum[self.right] - cum[self.left]
        total = w_pos.sum() * cum[-1]
        return float((w_pos * (below + 0.5 * ties)).sum() / total) if total else math.nan


def unpacked(values) -> list:
    """Per-pair cosines as evaluate.packed wrote them (a string), or a list (None where a rule did not apply)."""
    if isinstance(values, str):
        return [None if t == "-" else float(t) for t in values.split()]
    return list(values)


def _auc_runs(scope, condition: str, metric: str) -> tuple[list[_AUCItems], bool]:
    """Each run's items of the ROC-AUC `metric` ("in-domain/ROC-AUC (lexical negation)" or "in-domain/pair ROC-AUC
    (hard negatives)"), and whether it is one rule's."""
    split, name = metric.split("/", 1)
    rule_only = not name.startswith("pair ")
    out = []
    for run in scope.runs(condition):
        items = run.get("per_item", {})
        positive = items.get(f"{split}/{TRUE_PAIR}")
        if positive is None:
            raise NotRun(f"{condition} ({metric}, per item)")
        if rule_only:
            title = name[name.index("(") + 1:-1]
            columns = [items.get(f"{split}/cosine ({title})") or []]
        else:
            columns = [v for k, v in items.items() if k.startswith(f"{split}/cosine (") and k != f"{split}/{TRUE_PAIR}"]
        out.append(_AUCItems(unpacked(positive), [unpacked(c) for c in columns]))
    return out, rule_only


def auc_compare(scope, terms: list[tuple[float, str]], metric: str, op: str, margin: float, text: str, *,
                constant: float = 0.0, label: str | None = None) -> Measured:
    """The rule `sum_c a_c AUC_c + constant op margin` for terms [(a_c, condition)], with a bootstrap over the test
    pairs (module docstring). Runs without per-item values give the point estimate alone."""
    value = sum(a * scope.metric(c, metric) for a, c in terms) + constant
    try:
        runs = {c: _auc_runs(scope, c, metric) for _, c in terms}
    except NotRun:
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS, label=label)
    n = {items.n for rs, _ in runs.values() for items in rs}
    if len(n) != 1:
        raise ValueError(f"{metric}: the runs hold different numbers of test pairs {sorted(n)}")
    n_items = n.pop()

    def statistic(idx):
        counts = np.bincount(idx, minlength=n_items).astype(np.float64)
        return sum(a * np.mean([r.auc(counts, runs[c][1]) for r in runs[c][0]]) for a, c in terms) + constant

    lo, hi, how = bootstrap(statistic, n_items, n_resamples=AUC_RESAMPLES)
    return Measured.compare(value, op, margin, text, interval=(lo, hi), uncertainty=how.replace("items", "test pairs"),
                            label=label)


_RESAMPLED = {"anisotropy": "random pairs", "effective rank": "test texts"}


def geometry_compare(scope, combine: Callable[[dict], float], conditions: list[str], metric: str, op: str,
                     margin: float, text: str, *, label: str | None = None) -> Measured:
    """The rule `combine({condition: mean metric}) op margin` for a geometry metric, with the hull of the items' and
    the seeds' intervals (module docstring). combine must work on numbers and, element-wise, on numpy arrays."""
    means = {c: scope.metric(c, metric) for c in conditions}
    value = float(combine(means))
    intervals, hows = [], []
    try:
        reps = {c: np.asarray(scope.items(c, replicates_key(metric)), dtype=np.float64) for c in conditions}
    except NotRun:
        hows.append("no bootstrap replicates kept by these runs")
    else:
        tail = (1 - CONFIDENCE) / 2
        lo, mid, hi = np.quantile(combine(reps), [tail, 0.5, 1 - tail])
        lo, hi = lo - mid + value, hi - mid + value  # recentred on the point value (module docstring)
        seeds = " vs ".join(str(len(scope.runs(c))) for c in conditions)
        items = _RESAMPLED.get(metric.split("/", 1)[-1], "items")
        intervals.append((float(lo), float(hi)))
        hows.append(f"paired bootstrap over the {items} ({len(next(iter(reps.values()))):,} replicates; {seeds} "
                    f"seed(s) averaged), {CONFIDENCE:.0%} interval recentred on the value")
    spread = _seed_interval(scope, combine, means, metric)
    if spread is None:
        hows.append("one run per condition: no spread over seeds")
    else:
        intervals.append(spread[:2])
        hows.append(spread[2])
    if not intervals:
        return Measured.compare(value, op, margin, text, uncertainty="; ".join(hows), label=label)
    hull = (min(lo for lo, _ in intervals), max(hi for _, hi in intervals))
    how = "; ".join(hows) + ("; the verdict reads the hull of both" if len(intervals) == 2 else "")
    return Measured.compare(value, op, margin, text, interval=hull, uncertainty=how, label=label)


def _seed_interval(scope, combine, means: dict, metric: str) -> tuple[float, float, str] | None:
    """The delta-method t-interval over seeds of combine(means) (module docstring); None without a condition that
    has several seeds."""
    from scipy.stats import t as student

    value, var, dof = float(combine(means)), 0.0, []
    for c, mean in means.items():
        values = [r["metrics"][metric] for r in scope.runs(c) if r.get("metrics", {}).get(metric) is not None]
        if len(values) < 2:
            continue
        h = 1e-6 * max(1.0, abs(mean))
        slope = (combine({**means, c: mean + h}) - combine({**means, c: mean - h})) / (2 * h)
        var += slope * slope * float(np.var(values, ddof=1)) / len(values)
        dof.append(len(values) - 1)
    if not dof:
        return None
    half = float(student.ppf(0.5 + CONFIDENCE / 2, min(dof))) * math.sqrt(var)
    return value - half, value + half, f"t-interval over seeds (n = {min(dof) + 1}), {CONFIDENCE:.0%}"


def smallest_layer_gap(runs, split: str, measure: str) -> tuple[float, float, str] | None:
    """Interval of the smallest final-layer gap over runs [(run, final layer, earlier layers)] (module docstring):
    measure "MRR" (1/rank_final - 1/rank_l per test term) or "anisotropy" (anisotropy_l - anisotropy_final per
    replicate); None when a run kept no per-layer items."""
    per_run = []
    for run, last, earlier in runs:
        kept = run.get("per_item") or {}
        keys = [rank_key(split, layer) if measure == "MRR" else replicates_key(f"{split}/anisotropy (layer {layer})")
                for layer in (last, *earlier)]
        if any(k not in kept for k in keys):
            return None
        per_run.append([np.asarray(unpacked(kept[k]), dtype=np.float64) for k in keys])
    lengths = {len(v) for values in per_run for v in values}
    if len(lengths) != 1:
        raise ValueError(f"per-layer {measure} items of different lengths: {sorted(lengths)} (layers or runs "
                         f"evaluated on different test splits)")
    if measure == "MRR":  # ranks -> reciprocal ranks; the final layer's MRR above the earlier layers'
        gaps = [1.0 / values[0] - 1.0 / v for values in per_run for v in values[1:]]
    else:  # the final layer's anisotropy below the earlier layers'
        gaps = [v - values[0] for values in per_run for v in values[1:]]
    gaps = np.stack(gaps, axis=1)  # (terms or replicates, gaps)
    if measure == "MRR":
        lo, hi, _ = bootstrap(lambda idx: float(gaps[idx].mean(0).min()), gaps.shape[0])
        return lo, hi, (f"paired bootstrap over {gaps.shape[0]:,} test terms of the smallest of the {gaps.shape[1]} "
                        f"gaps (every layer and run on the same terms), {CONFIDENCE:.0%} interval")
    lo, hi = percentile_interval(gaps.min(axis=1))
    return lo, hi, (f"paired bootstrap over the random pairs of the smallest of the {gaps.shape[1]} gaps "
                    f"({gaps.shape[0]:,} replicates, the same resamples at every layer and run), {CONFIDENCE:.0%} "
                    f"interval")


def not_learned(scope, conditions) -> list[str]:
    """The trained conditions among `conditions` that did not learn (learning.judge_training: the probe, else the
    logged curve), each seed with its losses."""
    out = []
    for c in conditions:
        if not SETUPS[c.split("@")[0]].trained:
            continue
        for run in scope.runs(c):
            ok, why = judge_training(run.get("training"))
            if ok is False:
                out.append(f"{c} seed {run['seed']} (loss {why})")
    return out


__all__ = ["AUC_RESAMPLES", "auc_compare", "geometry_compare", "not_learned"]
