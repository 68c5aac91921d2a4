"""Readings of the compositional runs shared by the claims (paper.py) and the card's tables (figures.py): Figure 1's
pooled cosines and Figure 3's verifier scores, as means and per pair, and whether a trained run learned.

Per pair: a run's Figure 1 record holds every held-out near-miss pair's cosine per family (and the reference
pairs'), its Figure 3 record every pair's verifier score on the near-miss and on the positive, per family (runs
measured before these were kept hold the means alone). fig1_pairs / fig3_pairs line them up as arrays (seeds x
pairs) over the seeds the units share, the families concatenated in FAMILIES order, for a bootstrap over pairs.

Learned (the rule for every claim that rests on a trained objective): a trained run learned when its final loss is
at least 5% below its starting loss (the experiment core's learning.fell; these records keep a start and a final
loss, not always a curve, so the core's noise test does not apply). Starting loss: the objective before the first update (an encoder's
MNRL on a few batches, a verifier's first step), recorded by models.py; runs measured before it was recorded use
their first logged loss (an encoder, already a few steps in) or, for a verifier, the chance level ln(B + 1) of its
MNRL over B in-batch positives and one near-miss (every candidate scored alike). Final loss: the last logged value
(an encoder's mean over its last logging window, a verifier's mean over its last 10% of steps; a verifier run
measured before that kept its last step's loss).
"""

from __future__ import annotations

import math

import numpy as np

from ..api import fmt
from ..api.learning import fell
from ..api.units import unit_runs
from .data import FAMILIES
from .spec import verifier_of



def records(unit: dict | None, key: str) -> list:
    """The per-seed records `key` ("figure1", "figure3") of a unit's runs."""
    return [r[key] for r in unit_runs(unit or {}) if key in r]


def fig1_means(unit: dict | None) -> dict[str, float]:
    """{family or "positive" / "negative": mean pooled cosine}, the mean over seeds of each seed's mean."""
    figs = records(unit, "figure1")
    return {k: float(np.mean([np.mean(f[k]) for f in figs])) for k in figs[0]} if figs else {}


def lowered_share(a: dict, b: dict, key: str, by: float) -> float:
    """The share of the pairs `key` whose cosine Model B (unit b) lowers by more than `by` from Model A's (unit a),
    pooled over the seeds."""
    pairs = [(x, y) for fa, fb in zip(records(a, "figure1"), records(b, "figure1")) for x, y in zip(fa[key], fb[key])]
    return sum(y < x - by for x, y in pairs) / max(1, len(pairs))


def fig3_means(units: dict) -> dict[str, dict]:
    """{verifier condition: {family: {"mean", "auc"}}} averaged over seeds."""
    out = {}
    for cond, unit in units.items():
        figs = records(unit, "figure3") if verifier_of(cond) else []
        if figs:
            out[cond] = {fam: {k: float(np.mean([f[fam][k] for f in figs])) for k in ("mean", "auc")}
                         for fam in figs[0]}
    return out


def spread(unit: dict, key: str) -> float | None:
    """The sample std over seeds of a unit's metric (None with one seed)."""
    return unit.get("spread", {}).get("std", {}).get(key)


# ---------------------------------------------------------------- per pair

def _shared_seeds(units: dict[str, dict], key: str) -> tuple[dict[str, dict], list]:
    """({condition: {seed: record `key`}}, the seeds every unit has a record of)."""
    by_seed = {c: {r["seed"]: r[key] for r in unit_runs(u) if key in r} for c, u in units.items()}
    seeds = set.intersection(*(set(runs) for runs in by_seed.values())) if by_seed else set()
    return by_seed, sorted(seeds, key=lambda s: (s is not None, s or 0))


def _family_index(lengths: dict[str, int]) -> np.ndarray:
    return np.concatenate([np.full(n, FAMILIES.index(f)) for f, n in lengths.items()])


def fig1_pairs(units: dict[str, dict]) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """Figure 1's near-miss cosines per pair: ({condition: array seeds x pairs}, each pair's family index), over
    the seeds every unit shares; None without a shared seed."""
    by_seed, seeds = _shared_seeds(units, "figure1")
    if not seeds:
        return None
    first = by_seed[next(iter(units))][seeds[0]]
    fams = [f for f in FAMILIES if f in first]
    values = {c: np.array([np.concatenate([runs[s][f] for f in fams]) for s in seeds], dtype=np.float64)
              for c, runs in by_seed.items()}
    return values, _family_index({f: len(first[f]) for f in fams})


def fig3_pairs(units: dict[str, dict]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray] | None:
    """Figure 3's verifier scores per pair: ({condition: (near-miss scores, positive scores), arrays seeds x
    pairs}, each pair's family index), over the seeds every unit shares; None when a run kept no per-pair scores
    (measured before they were) or no seed is shared."""
    by_seed, seeds = _shared_seeds(units, "figure3")
    if not seeds:
        return None
    first = by_seed[next(iter(units))][seeds[0]]
    fams = [f for f in FAMILIES if f in first]
    if not all("scores" in runs[s][f] for runs in by_seed.values() for s in seeds for f in fams):
        return None
    values = {c: tuple(np.array([np.concatenate([runs[s][f]["scores"][k] for f in fams]) for s in seeds],
                                dtype=np.float64) for k in ("near_miss", "positive"))
              for c, runs in by_seed.items()}
    return values, _family_index({f: len(first[f]["scores"]["near_miss"]) for f in fams})


def auc_of_counts(positive: np.ndarray, near_miss: np.ndarray):
    """counts -> the ROC-AUC of the pairs' positive scores against their near-miss scores when pair i is taken
    counts[i] times (a bootstrap resample's multiplicities; all ones: evaluation.metrics.roc_auc), ties counting
    1/2: sum_i c_i (sum_j c_j [near_j < pos_i] + 1/2 sum_j c_j [near_j = pos_i]) / (sum c)^2; one per row of
    `positive` / `near_miss` (seeds x pairs, or one row). The sort is done once; each call is linear in the pairs."""
    positive, near_miss = np.atleast_2d(positive), np.atleast_2d(near_miss)
    order = np.argsort(near_miss, axis=1, kind="stable")
    ranked = np.take_along_axis(near_miss, order, 1)
    left = np.array([np.searchsorted(r, p, "left") for r, p in zip(ranked, positive)])
    right = np.array([np.searchsorted(r, p, "right") for r, p in zip(ranked, positive)])

    def at(counts: np.ndarray) -> np.ndarray:
        below = np.zeros((len(order), order.shape[1] + 1))
        below[:, 1:] = np.cumsum(counts[order], axis=1)
        lo, hi = np.take_along_axis(below, left, 1), np.take_along_axis(below, right, 1)
        return (counts * (lo + 0.5 * (hi - lo))).sum(1) / counts.sum() ** 2

    return at


# ---------------------------------------------------------------- learned

def losses(scope, condition: str, train: dict) -> tuple[float | None, float | None, str]:
    """(starting loss, final loss, where the start comes from) of a run's training record (see the module
    docstring); the chance level needs the condition's verifier batch from the scope's config."""
    curve = (train.get("curve") or {}).get("loss") or []
    final = train.get("final_loss", curve[-1] if curve else None)
    if train.get("start_loss") is not None:
        return train["start_loss"], final, "before the first update"
    if curve:
        return curve[0], final, f"first logged, step {train['curve']['step'][0]}"
    name = verifier_of(condition)
    batch = scope.config.get("verifier_batch_heavy" if name in ("F3", "F4") else "verifier_batch_light")
    return (math.log(batch + 1) if name and batch else None), final, "chance level ln(B + 1)"


def not_learned(scope, conditions) -> list[str]:
    """The trained runs among `conditions` (those in the scope) whose loss did not fall (learning.fell), each as
    "condition seed s (start -> final)"."""
    out = []
    for cond in (c for c in conditions if c in scope.units):
        for run in scope.runs(cond):
            train = run.get("train") or {}
            if not train.get("steps"):
                continue
            start, final, where = losses(scope, cond, train)
            if not fell(start, final):
                out.append(f"{cond} seed {run['seed']} (loss {fmt.num(start)} ({where}) -> {fmt.num(final)})")
    return out


__all__ = ["auc_of_counts", "fig1_means", "fig1_pairs", "fig3_means", "fig3_pairs", "losses",
           "lowered_share", "not_learned", "records", "spread"]
