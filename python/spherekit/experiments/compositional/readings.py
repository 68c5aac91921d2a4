"""Readings of the compositional runs shared by the claims (paper.py) and the card's tables (figures.py): Figure 1's
pooled cosines and Figure 3's verifier scores, as means and per pair.

Per pair: a run's Figure 1 record holds every held-out near-miss pair's cosine per family (and the reference
pairs'), its Figure 3 record every pair's verifier score on the near-miss and on the positive, per family (runs
measured before these were kept hold the means alone). fig1_pairs / fig3_pairs line them up as arrays (seeds x
pairs) over the seeds the units share, the families concatenated in FAMILIES order: the series of the claims'
two-level bootstrap over seeds and pairs (spherekit.experiments.api.uncertainty.two_level); auc_noise is that
bootstrap for a statistic of the units' ROC-AUCs (C8, C9 and the undertrained rule, undertrained.py).

Whether a trained run learned is the experiment core's gate (spherekit.experiments.api.learning), on the run's
training records (models.py).
"""

from __future__ import annotations

import numpy as np

from ..api.uncertainty import Noise, count_weighted_auc, two_level
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


def auc_noise(units: dict[str, dict], family: str, statistic) -> Noise | None:
    """The two-level bootstrap of statistic({condition: (R,) ROC-AUCs}) -> (R,) over the units' shared seeds and
    the held-out pairs of `family` ("overall": every pair): a run's ROC-AUC (positives vs near-misses) with pair i
    taken w_i times (uncertainty.count_weighted_auc), averaged over the resampled seeds, sum_s v_s AUC_s(w) / m;
    None when a run kept no per-pair scores (fig3_pairs)."""
    got = fig3_pairs(units)
    if got is None:
        return None
    values, fam = got
    keep = np.arange(fam.size) if family == "overall" else np.flatnonzero(fam == FAMILIES.index(family))
    per_seed = {c: [count_weighted_auc(p[keep], n[keep]) for n, p in zip(near, pos)]
                for c, (near, pos) in values.items()}

    def resampled(d):
        return statistic({c: (d.seeds[c] * np.stack([at(d.items) for at in ats], axis=1)).mean(1)
                          for c, ats in per_seed.items()})

    return two_level(resampled, keep.size, {c: len(ats) for c, ats in per_seed.items()})


__all__ = ["auc_noise", "fig1_means", "fig1_pairs", "fig3_means", "fig3_pairs", "lowered_share", "records",
           "spread"]
