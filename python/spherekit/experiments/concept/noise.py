"""The uncertainty of the concept claims where claims.difference (the two-level bootstrap of a difference of means
over items) does not apply. Whether the trainings a claim reads learned is the core's gate (claims declare rests_on).

ROC-AUC (stress rules, pair ROC-AUC against the hard negatives) is not a mean over items. Each run keeps, per test
pair i, cos(term, definition) p_i and cos(term, rule r's negative) n_ri (absent where r did not apply; evaluate.py
packs them into strings). With pair i taken w_i times, a run's ROC-AUC is the count-weighted one
(uncertainty.count_weighted_auc, ties 1/2)

    AUC_s(w) = sum_i sum_j w_i w_o(j) ([n_j < p_i] + [n_j = p_i] / 2) / (sum_i w_i * sum_j w_o(j))

over the positives i and negatives j (o(j): the pair negative j belongs to) of the rule (its pairs only) or of all
rules (pair ROC-AUC). A condition's ROC-AUC on a draw is its runs' AUCs averaged over the resampled seeds under the
same pair weights, sum_s v_s AUC_s(w) / m, and a claim's statistic is a linear combination of those (a difference of
two conditions, or one condition against a constant): uncertainty.two_level resamples the test pairs (the same for
every condition: paired) and every multi-seed condition's seeds together.

Geometry (anisotropy over 10,000 random pairs, effective rank of the test texts) is not a function of item weights:
each run keeps K bootstrap replicates of its statistic under common random numbers (the same resampled pairs and
rows for every condition and seed, evaluate.py), which stand for the items level. A claim's value is f(mean_c) of the
conditions' means (a difference, B3 - 2 B1, or a ratio, B1 / B0 - 1); its two-level bootstrap pairs every seed draw
of two_level's model (multiplicities v_c, the same draw for conditions of the same seed count) with every kept
replicate r, f({c: sum_s v_cs x_cs^(r) / m_c}), and its percentile interval is recentred so that the bootstrap's
median sits on the value (an effective rank of rows drawn with replacement sits below the statistic, duplicated rows
lowering it by about 2% on the cards' test texts: a shift that cancels in a ratio of two conditions but not against a
constant). Runs that kept no replicates resample their seeds alone. seed_std is two_level's: the sample std over j of
f on run j of every multi-seed condition (run 0 of the frozen ones).

Layers (paper._final_layer: the final layer against every earlier one, in B0 and each B1 seed): the smallest gap
over layers and runs, with a percentile interval (not recentred: the smallest of noisy gaps sits low, which makes
the interval conservative for "> 0"): for MRR the two-level model's items level over the test terms (the runs'
per-layer first relevant ranks on the same terms), for anisotropy the layers' replicates (the same resampled pairs
at every layer and in every run) differenced replicate by replicate. The seeds are not resampled: the rule is that
every run's final layer dominates, a conjunction over the seeds, not their mean (resampling the runs of a minimum
would drop the worst run from most draws). Runs that kept no per-layer items fall back to Hoeffding's inequality
(paper._smallest_gap).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.uncertainty import CONFIDENCE, RESAMPLES, Draw, count_weighted_auc, percentile_interval, two_level
from .evaluate import rank_key, replicates_key

TRUE_PAIR = "cosine (true pair)"


def unpacked(values) -> list:
    """Per-pair cosines as evaluate.packed wrote them (a string), or a list (None where a rule did not apply)."""
    if isinstance(values, str):
        return [None if t == "-" else float(t) for t in values.split()]
    return list(values)


def pair_auc(positive: list, negatives: list[list], *, rule_only: bool):
    """count_weighted_auc of one run's per-pair cosines: positive[i] against every non-None negatives[r][i] of pair i;
    rule_only: the positives are the pairs that have a negative (one rule's ROC-AUC). -> at(w (R, n)) -> (R,)."""
    neg, owner = [], []
    for column in negatives:
        for i, x in enumerate(column):
            if x is not None:
                neg.append(x)
                owner.append(i)
    keep = sorted(set(owner)) if rule_only else range(len(positive))
    return count_weighted_auc([positive[i] for i in keep], neg, positive_item=list(keep), negative_item=owner,
                              n_items=len(positive))


def _auc_runs(scope, condition: str, metric: str) -> list:
    """Each run's count-weighted ROC-AUC `metric` ("in-domain/ROC-AUC (lexical negation)" or "in-domain/pair ROC-AUC
    (hard negatives)") as a function of the pair weights, with the number of test pairs: [(at, n)]."""
    split, name = metric.split("/", 1)
    rule_only = not name.startswith("pair ")
    out = []
    for run in scope.runs(condition):
        items = run.get("per_item", {})
        positive = items.get(f"{split}/{TRUE_PAIR}")
        if positive is None:
            raise NotRun(f"{condition} ({metric}, per item)")
        if rule_only:
            columns = [items.get(f"{split}/cosine ({name[name.index('(') + 1:-1]})") or []]
        else:
            columns = [v for k, v in items.items() if k.startswith(f"{split}/cosine (") and k != f"{split}/{TRUE_PAIR}"]
        positive = unpacked(positive)
        out.append((pair_auc(positive, [unpacked(c) for c in columns], rule_only=rule_only), len(positive)))
    return out


def auc_compare(scope, terms: list[tuple[float, str]], metric: str, op: str, margin: float, text: str, *,
                constant: float = 0.0, label: str | None = None) -> Measured:
    """The rule `sum_c a_c AUC_c + constant op margin` for terms [(a_c, condition)], with the two-level bootstrap over
    the seeds and the test pairs (module docstring). Runs without per-item values give the point estimate alone."""
    value = sum(a * scope.metric(c, metric) for a, c in terms) + constant
    try:
        runs = {c: _auc_runs(scope, c, metric) for _, c in terms}
    except NotRun:
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS, label=label)
    n = {k for rs in runs.values() for _, k in rs}
    if len(n) != 1:
        raise ValueError(f"{metric}: the runs hold different numbers of test pairs {sorted(n)}")

    def statistic(d: Draw) -> np.ndarray:
        per_seed = {c: np.stack([at(d.items) for at, _ in rs], axis=1) for c, rs in runs.items()}  # (R, m_c)
        return sum(a * (d.seeds[c] * per_seed[c]).mean(1) for a, c in terms) + constant

    noise = two_level(statistic, n.pop(), {c: len(rs) for c, rs in runs.items()}, items="test pairs",
                      frozen=_frozen(scope, runs))
    return Measured.compare(value, op, margin, text, label=label, **noise.measured())


def _frozen(scope, conditions) -> list[str]:
    """The conditions that train nothing (their runs unseeded: no training noise to measure or to call unmeasured)."""
    return [c for c in conditions if scope.frozen(c)]


_RESAMPLED = {"anisotropy": "random pairs", "effective rank": "test texts"}


def geometry_compare(scope, combine: Callable[[dict], float], conditions: list[str], metric: str, op: str,
                     margin: float, text: str, *, label: str | None = None, n_resamples: int = RESAMPLES,
                     seed: int = 0) -> Measured:
    """The rule `combine({condition: mean metric}) op margin` for a geometry metric, with the two-level bootstrap of
    the seeds and the kept replicates (module docstring). combine must work on numbers and, element-wise, on numpy
    arrays."""
    means = {c: scope.metric(c, metric) for c in conditions}
    value = float(combine(means))
    runs = {c: np.array([r["metrics"][metric] for r in scope.runs(c)], dtype=np.float64) for c in conditions}
    try:
        reps = {c: scope.series(c, replicates_key(metric)) for c in conditions}  # (m_c, K)
    except NotRun:
        reps = None
    many = sorted({len(x) for x in runs.values() if len(x) > 1})
    seeds = ", ".join(f"{c} {len(x)}" for c, x in runs.items() if len(x) > 1)
    frozen = _frozen(scope, conditions)
    single = ", ".join(c for c, x in runs.items() if len(x) == 1 and c not in frozen)
    if reps is None and not many:
        return Measured.compare(value, op, margin, text, label=label, uncertainty="no bootstrap replicates kept by "
                                "these runs" + (f"; training noise unmeasured: 1 run of {single}" if single else ""))
    draws = n_resamples if many else 1
    rng = np.random.default_rng(seed)
    by_count = {m: rng.multinomial(m, np.full(m, 1.0 / m), size=draws).astype(np.float64) for m in many}
    draw = Draw(np.ones((draws, 1)), {c: by_count[len(x)] if len(x) > 1 else np.ones((draws, 1))
                                      for c, x in runs.items()})
    series = reps if reps is not None else {c: x[:, None] for c, x in runs.items()}
    values = np.asarray(combine({c: draw.seed_mean(c, series[c]) for c in conditions}), dtype=np.float64)
    tail = (1 - CONFIDENCE) / 2
    lo, mid, hi = np.quantile(values, [tail, 0.5, 1 - tail])
    if reps is not None:
        items = _RESAMPLED.get(metric.split("/", 1)[-1], "items")
        k = len(next(iter(reps.values()))[0])
        if many:
            how = (f"two-level bootstrap over seeds ({seeds}) and the {k:,} kept replicates of the {items} (every "
                   "seed draw with every replicate)" + (f"; 1 run of {single}" if single else ""))
        else:
            how = (f"paired bootstrap over the {items} ({k:,} replicates, the same resamples for every condition)"
                   + (f"; training noise unmeasured: 1 run of {single}" if single else ""))
        lo, hi = lo - mid + value, hi - mid + value  # recentred on the point value (module docstring)
        how += f", {CONFIDENCE:.0%} interval recentred on the value"
    else:
        how = (f"no bootstrap replicates kept by these runs: bootstrap over seeds ({seeds}) alone"
               + (f"; 1 run of {single}" if single else "") + f", {CONFIDENCE:.0%} interval")
    return Measured.compare(value, op, margin, text, interval=(float(lo), float(hi)), uncertainty=how, label=label,
                            seed_std=_seed_std(combine, runs))


def _seed_std(combine, runs: dict) -> float | None:
    """two_level's seed_std of combine: the sample std over j of combine on run j of every condition with several
    runs (run 0 of the others), j over the smallest such run count; None without one."""
    m = min((len(x) for x in runs.values() if len(x) > 1), default=1)
    if m < 2:
        return None
    per_seed = combine({c: x[:m] if len(x) > 1 else np.full(m, x[0]) for c, x in runs.items()})
    return float(np.std(np.asarray(per_seed, dtype=np.float64), ddof=1))


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
        gaps = np.stack([1.0 / values[0] - 1.0 / v for values in per_run for v in values[1:]])  # (gaps, terms)
        noise = two_level(lambda d: (d.items @ gaps.T / d.items.sum(1, keepdims=True)).min(1), gaps.shape[1],
                          {"runs": 1})
        return (*noise.interval, f"bootstrap over {gaps.shape[1]:,} test terms of the smallest of the {gaps.shape[0]} "
                f"gaps (every layer and run on the same terms; each run checked, its seeds not resampled), "
                f"{CONFIDENCE:.0%} interval")
    gaps = np.stack([v - values[0] for values in per_run for v in values[1:]], axis=1)  # the final layer's below
    lo, hi = percentile_interval(gaps.min(axis=1))
    return lo, hi, (f"paired bootstrap over the random pairs of the smallest of the {gaps.shape[1]} gaps "
                    f"({gaps.shape[0]:,} replicates, the same resamples at every layer and run), {CONFIDENCE:.0%} "
                    f"interval")


__all__ = ["auc_compare", "geometry_compare", "pair_auc", "smallest_layer_gap", "unpacked"]
