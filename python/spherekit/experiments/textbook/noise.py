"""The uncertainty of the textbook's claims: bootstrap intervals over the evaluation items a section kept
(per_item: queries, pairs, near-miss items), and the "learned" rule on the trainings a claim rests on.

    within_unit(s, "losses", [("triplet/R@10", "mnrl/R@10")], ">", 0.0, text)
        the rule  min over the pairs of (metric(b) - metric(a))  op margin, with a paired bootstrap over the unit's
        items (each item averaged over the unit's seeds; the smallest difference recomputed on every resample)
    unless_learned(measured, {"mnrl (seed 0)": training record, ...})
        the same measurement, made "inconclusive" when one of the trainings did not learn (the core's rule,
        spherekit.experiments.api.learning.judge_training: a record's probe, the training loss of its first rows before
        and after, decides; a record without one, e.g. the order verifier's, is judged on its logged losses)

Runs measured before per-item values were kept give the point estimate alone (claims.NO_ITEMS), as
claims.difference does. The core's claims.difference compares two conditions on one key; a section of this
paper measures its alternatives inside one unit (one key each), hence within_unit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..api.claims import NO_ITEMS, Measured, NotRun
from ..api.learning import judge_training
from ..api.learning import unless_learned as core_unless_learned
from ..api.uncertainty import CONFIDENCE, bootstrap, paired_bootstrap


def items(s, condition: str, key: str) -> np.ndarray | None:
    """The unit's per-item values of `key` (averaged over its seeds), or None when its runs kept none."""
    try:
        return np.asarray(s.items(condition, key), dtype=np.float64)
    except NotRun:
        return None


def within_unit(s, condition: str, pairs, op: str, margin: float, text: str, *, seed: int = 0) -> Measured:
    """The rule `min over (a, b) in pairs of metric(b) - metric(a)  op  margin` on one unit's metrics (the mean
    over its seeds), with a paired bootstrap over its items as the interval (module docstring)."""
    value = min(s.metric(condition, b) - s.metric(condition, a) for a, b in pairs)
    columns = [(items(s, condition, a), items(s, condition, b)) for a, b in pairs]
    if any(x is None or y is None for x, y in columns):
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS)
    if len(columns) == 1:
        lo, hi, how = paired_bootstrap(*columns[0], seed=seed)
    else:
        diffs = [y - x for x, y in columns]
        lo, hi, _ = bootstrap(lambda idx: min(float(d[idx].mean()) for d in diffs), len(diffs[0]), seed=seed)
        how = (f"paired bootstrap over {len(diffs[0]):,} items of the smallest of the {len(diffs)} differences, "
               f"{CONFIDENCE:.0%} interval")
    return Measured.compare(value, op, margin, text, interval=(lo, hi), uncertainty=how)


def two_sample(statistic, n_a: int, n_b: int, *, seed: int = 0) -> tuple[float, float, str]:
    """Percentile interval of statistic(idx_a, idx_b) over independent resamples of two item sets (two corpora):
    the core's bootstrap resamples the first set, each of its resamples draws its own resample of the second."""
    rng = np.random.default_rng(seed + 1)
    lo, hi, _ = bootstrap(lambda idx: statistic(idx, rng.integers(0, n_b, size=n_b)), n_a, seed=seed)
    return lo, hi, (f"bootstrap over {n_a:,} + {n_b:,} items of two corpora (resampled independently), "
                    f"{CONFIDENCE:.0%} interval")


def not_learned(trainings: dict) -> list[str]:
    """"<name>: <why>" of each training ({name: training record}) that did not learn (learning.judge_training)."""
    judged = {name: judge_training(record) for name, record in trainings.items()}
    return [f"{name}: {why}" for name, (ok, why) in judged.items() if ok is False]


def unless_learned(measured: Measured, trainings: dict) -> Measured:
    """`measured`, or the same record made "inconclusive" (holds None) when a training it rests on did not learn;
    the text names them, or says that none of them kept a training record."""
    failed = not_learned(trainings)
    if failed:
        return core_unless_learned(measured, failed)
    if trainings and all(judge_training(x)[0] is None for x in trainings.values()):
        return dataclasses.replace(measured, text=f"{measured.text}; no training record to check learning")
    return measured


def run_trainings(s, condition: str, read) -> dict:
    """{"<name> (seed <s>)": training record} of every run of the unit: read(run) -> {name: training record}."""
    out = {}
    for run in s.runs(condition):
        for name, record in (read(run) or {}).items():
            out[f"{name} (seed {run.get('seed')})"] = record
    return out
