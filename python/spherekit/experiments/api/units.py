"""The card's unit: one (backbone, condition) with the runs of its seeds aggregated one way.

    unit = {"backbone", "condition", "seeds": [0, 1, 2],
            "metrics": {...},     the mean over seeds (with one seed: the run's own values)
            "spread": {"estimator", "n", "std": {...}},     the sample standard deviation over seeds (ddof = 1),
                                  only with several seeds
            "seconds": {...},     summed over the runs
            "shared": {...},      what every run recorded identically (e.g. a bank built once for all seeds),
                                  only with several seeds
            "runs": [{"seed", "metrics", "seconds", ...}]}   each run's own record, without the shared keys

unit_runs(unit) gives the runs with the shared keys put back.
"""

from __future__ import annotations

import numpy as np

ESTIMATOR = "mean over seeds; spread: sample standard deviation over seeds (ddof = 1)"
OWN = ("seed", "metrics", "seconds", "training")  # never shared: what differs by design from run to run


def seed_order(run: dict):
    """Runs by seed, the unseeded one (seed None) first."""
    return (run["seed"] is not None, run["seed"] or 0)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shared(records: list[dict]) -> dict:
    """The keys (other than OWN) that every record holds with the same value."""
    first = records[0]
    return {k: v for k, v in first.items() if k not in OWN and all(k in r and r[k] == v for r in records[1:])}


def aggregate(backbone: str, condition: str, runs: list[dict]) -> dict:
    """The card's unit from its runs (one per seed; see the module docstring). A metric that is not a number in
    every run has no mean: it is kept when every run has the same value, else None."""
    runs = sorted(runs, key=seed_order)
    records = [{k: v for k, v in r.items() if k not in ("backbone", "condition")} for r in runs]
    seconds: dict[str, float] = {}
    for r in runs:
        for stage, s in r.get("seconds", {}).items():
            seconds[stage] = round(seconds.get(stage, 0.0) + s, 2)
    unit = {"backbone": backbone, "condition": condition, "seeds": [r["seed"] for r in runs]}
    if len(runs) == 1:
        return {**unit, "metrics": dict(runs[0]["metrics"]), "seconds": seconds, "runs": records}
    shared = _shared(records)
    records = [{k: v for k, v in r.items() if k not in shared} for r in records]
    metrics, std = {}, {}
    for key in dict.fromkeys(k for r in runs for k in r["metrics"]):
        values = [r["metrics"].get(key) for r in runs]
        if all(_is_number(v) for v in values):
            arr = np.asarray(values, dtype=np.float64)
            metrics[key], std[key] = float(arr.mean()), float(arr.std(ddof=1))
        else:
            metrics[key] = values[0] if all(v == values[0] for v in values) else None
    spread = {"estimator": ESTIMATOR, "n": len(runs), "std": std}
    return {**unit, "metrics": metrics, "spread": spread, "seconds": seconds, "shared": shared, "runs": records}


def unit_runs(unit: dict) -> list[dict]:
    """The unit's runs, each with the unit's shared keys put back."""
    shared = unit.get("shared", {})
    return [{**shared, **run} for run in unit.get("runs", [])]


__all__ = ["ESTIMATOR", "aggregate", "seed_order", "unit_runs"]
