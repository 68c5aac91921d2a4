"""What "Mapping the Circumplex of Affect" prints (Table 1), its claims as checks, and where a run departs from it.

Table 1: V-measure and CD-r averaged over its four datasets (Emolit, Empathetic Dialogue, SuperEmotion, PersonaGen)
for three of its backbones: multilingual-e5-large fine-tuned (our "@unfrozen" conditions), Qwen3-Embedding-4B and
Llama-3.2-3B frozen (our "@frozen" ones). None of those backbones or datasets is available offline, so the
comparison is of directions (which loss gives the higher V, which the higher CD-r, nGPT vs GPT), not of values.

The claims are checked per group of the main grid (spec.GroupScope: one backbone in one regime, with Pretrained);
paper_claims_hold() checks them on the paper's own Table 1, a test that the rules can hold.
"""

from __future__ import annotations

import math

import numpy as np

from ..api.claims import NO_ITEMS, Claim, Measured, evaluate
from ..api.printed import Printed
from .spec import CD_R, PRETRAINED, TRAINED_RUNS, GroupScope, Run, V

# the paper's backbone whose Table 1 row sits next to ours, per regime (its fine-tuned and its frozen example)
NEXT_TO = {"unfrozen": "multilingual-e5-large", "frozen": "Qwen3-Embedding-4B"}

SOURCE = "Table 1 (average over four datasets)"
# the paper's backbones in Table 1, the regime they ran in, and their (V-measure, CD-r) per run
TABLE1 = {
    ("multilingual-e5-large", "unfrozen"): {
        PRETRAINED: (0.342, 0.574), "SINCERE-GPT": (0.760, 0.317), "SINCERE-nGPT": (0.744, 0.221),
        "SoftCSE-GPT": (0.755, 0.477), "SoftCSE-nGPT": (0.753, 0.499), "CircularCSE-GPT": (0.717, 0.757),
        "CircularCSE-nGPT": (0.720, 0.764)},
    ("Qwen3-Embedding-4B", "frozen"): {
        PRETRAINED: (0.495, 0.522), "SINCERE-GPT": (0.756, 0.305), "SINCERE-nGPT": (0.739, 0.545),
        "SoftCSE-GPT": (0.751, 0.552), "SoftCSE-nGPT": (0.723, 0.708), "CircularCSE-GPT": (0.643, 0.747),
        "CircularCSE-nGPT": (0.659, 0.753)},
    ("Llama-3.2-3B", "frozen"): {
        PRETRAINED: (0.094, 0.217), "SINCERE-GPT": (0.725, 0.358), "SINCERE-nGPT": (0.577, 0.425),
        "SoftCSE-GPT": (0.710, 0.548), "SoftCSE-nGPT": (0.516, 0.728), "CircularCSE-GPT": (0.579, 0.728),
        "CircularCSE-nGPT": (0.382, 0.708)},
}

PRINTED = [Printed(SOURCE, Run(run, None if run == PRETRAINED else regime).name, key, value, setting=backbone)
           for (backbone, regime), rows in TABLE1.items() for run, pair in rows.items()
           for key, value in zip((V, CD_R), pair)]


def paper_scopes() -> list[GroupScope]:
    """The paper's Table 1 as groups of units (one per backbone), to check the claims on the paper's own numbers."""
    out = []
    for backbone, regime in TABLE1:
        units: dict[str, dict] = {}
        for p in PRINTED:
            if p.setting == backbone:
                units.setdefault(p.condition, {"metrics": {}})["metrics"][p.metric] = p.value
        out.append(GroupScope(backbone, regime, units))
    return out


HEADS = ("GPT", "nGPT")
LOSS_NAMES = ("SINCERE", "SoftCSE", "CircularCSE")
NOISE = ("two-level bootstrap over the seeds and the test texts (V-measure of each run's fixed k-means assignment, "
         "CD-r from the resampled label-pair cosines, a unit's runs averaged over its resampled seeds: noise.py); "
         "inconclusive when a training it rests on did not learn (spherekit.experiments.api.learning.gate)")


def _f(x: float) -> str:
    return f"{x:.3f}"


def _check(s, runs, statistic, op: str, text, *, margin: float = 0.0) -> Measured:
    """The rule `statistic op margin` on the units' means (the card's metrics), with the two-level bootstrap over
    the seeds and test texts as its interval (noise.measure). runs: the run names statistic reads (Pretrained
    included); statistic(value) with value(run, key) a run's metric as an array (one entry per resample) returns
    an array; text(value): the measurement in words (value: the card's metric)."""
    from .noise import measure

    conditions = {run: s.condition(run) for run in runs}

    def on(get):
        return statistic(lambda run, key: get(conditions[run], key))

    point = float(on(lambda c, key: np.array([s.metric(c, key)]))[0])
    words = text(lambda run, key: s.metric(conditions[run], key))
    noise = measure(s, [(c, "") for c in conditions.values()], lambda get: on(lambda c, key: get(c, key)))
    if noise is None:
        return Measured.compare(point, op, margin, words, uncertainty=NO_ITEMS)
    return Measured.compare(point, op, margin, words, **noise.measured())


def _trained(runs):
    """The claim's rests_on: the scope's conditions of the trained runs among `runs` (Pretrained trains nothing)."""
    return lambda scope, label: [scope.condition(r) for r in runs if r != PRETRAINED]


def _of(head: str) -> list[str]:
    return [f"{loss}-{head}" for loss in LOSS_NAMES]


def _v_order(head: str):
    runs = _of(head)

    def stat(v):
        return np.minimum(v(runs[0], V), v(runs[1], V)) - v(runs[2], V)

    return lambda s: _check(s, runs, stat, ">", lambda v: ", ".join(f"{r.split('-')[0]} {_f(v(r, V))}"
                                                                    for r in runs))


def _cd_order(head: str):
    runs = [f"SINCERE-{head}", f"CircularCSE-{head}"]
    return lambda s: _check(s, runs, lambda v: v(runs[1], CD_R) - v(runs[0], CD_R), ">",
                            lambda v: f"CircularCSE {_f(v(runs[1], CD_R))} vs SINCERE {_f(v(runs[0], CD_R))}")


CIRCULAR = [r for r in TRAINED_RUNS if r.startswith("CircularCSE")]


def _best_cd(s):
    others = [r for r in TRAINED_RUNS if r not in CIRCULAR]

    def stat(v):
        return np.max([v(r, CD_R) for r in CIRCULAR], axis=0) - np.max([v(r, CD_R) for r in others], axis=0)

    def text(v):
        best = max(TRAINED_RUNS, key=lambda r: v(r, CD_R))  # the first of Table 1's order on a tie
        other = max(others, key=lambda r: v(r, CD_R))
        return f"highest: {best} {_f(v(best, CD_R))}; best other than CircularCSE: {other} {_f(v(other, CD_R))}"

    return _check(s, TRAINED_RUNS, stat, ">", text)


def _pearson(v) -> np.ndarray:
    """Pearson(V-measure, CD-r) over the six trained runs, per resample (value arrays); NaN where undefined (a
    constant column)."""
    a = np.array([np.atleast_1d(v(r, V)) for r in TRAINED_RUNS], dtype=np.float64)
    b = np.array([np.atleast_1d(v(r, CD_R)) for r in TRAINED_RUNS], dtype=np.float64)
    a, b = a - a.mean(0), b - b.mean(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(0) / np.sqrt((a * a).sum(0) * (b * b).sum(0))
    return np.where(np.isfinite(r), r, np.nan)


def pearson_v_cd(s) -> float | None:
    """Pearson(V-measure, CD-r) over the six trained runs of a scope's units; None where it is undefined."""
    r = float(_pearson(lambda run, key: s.metric(s.condition(run), key))[0])
    return None if math.isnan(r) else r


def _tradeoff(s):
    r = pearson_v_cd(s)
    if r is None:  # no correlation to be negative
        return Measured.decided(None, "Pearson(V, CD-r) undefined (a constant column)")
    return _check(s, TRAINED_RUNS, _pearson, "<", lambda v: f"Pearson(V, CD-r) over the six runs {r:+.2f}")


def _pretrained_lowest(head: str):
    runs = _of(head)

    def text(v):
        lowest = min(runs, key=lambda r: v(r, V))
        return f"Pretrained {_f(v(PRETRAINED, V))}; lowest {head}: {lowest} {_f(v(lowest, V))}"

    return lambda s: _check(s, [PRETRAINED, *runs], lambda v: np.min([v(r, V) for r in runs], axis=0)
                            - v(PRETRAINED, V), ">", text)


def _paper_pearsons() -> str:
    return ", ".join(f"{s.backbone} {pearson_v_cd(s):+.2f}" for s in paper_scopes())


def _per_head(cid: str, statement: str, rule: str, check, runs) -> list[Claim]:
    return [Claim(f"{cid}-{head}", statement.format(head=head), "Table 1", f"{rule.format(head=head)}; {NOISE}",
                  check(head), rests_on=_trained(runs(head))) for head in HEADS]


CLAIMS = [
    *_per_head("C1", "V-measure: SINCERE and SoftCSE cluster the labels better than CircularCSE, {head} head (every "
               "backbone, e.g. multilingual-e5-large GPT 0.760 / 0.755 vs 0.717, nGPT 0.744 / 0.753 vs 0.720)",
               "the lower V-measure of SINCERE-{head} and SoftCSE-{head} minus CircularCSE-{head}'s > 0", _v_order,
               _of),
    *_per_head("C2", "CD-r: CircularCSE orders the labels around the circle better than SINCERE, {head} head (every "
               "backbone, e.g. multilingual-e5-large GPT 0.757 vs 0.317, nGPT 0.764 vs 0.221)",
               "CircularCSE-{head}'s CD-r minus SINCERE-{head}'s > 0", _cd_order,
               lambda head: [f"SINCERE-{head}", f"CircularCSE-{head}"]),
    Claim("C3", "The highest CD-r of the six runs is a CircularCSE run (multilingual-e5-large 0.764 and "
          "Qwen3-Embedding-4B 0.753, CircularCSE-nGPT; Llama-3.2-3B: SoftCSE-nGPT 0.728 ties CircularCSE-GPT)",
          "Table 1", "the best CircularCSE CD-r minus the best of the other four runs > 0 (a tie does not hold); "
          + NOISE, _best_cd, rests_on=_trained(TRAINED_RUNS)),
    Claim("C4", "Trade-off: V-measure and CD-r are negatively correlated across the six runs (Pearson over Table "
          f"1's six runs: {_paper_pearsons()})", "Table 1",
          "Pearson(V-measure, CD-r) over the six trained runs < 0 (undefined, e.g. a constant V column: "
          "inconclusive); " + NOISE, _tradeoff, rests_on=_trained(TRAINED_RUNS)),
    *_per_head("C5", "Every trained {head} head clusters better than the pretrained embedding (Pretrained V 0.342 / "
               "0.495 / 0.094)", "the lowest V-measure of the three {head} runs minus Pretrained's > 0 (Pretrained "
               "pooled as the heads are: config pretrained_pooling)", _pretrained_lowest, _of),
]


def paper_claims_hold() -> dict[str, list[bool]]:
    """{claim id: [holds on each of Table 1's backbones]}: the claims checked on the paper's own numbers."""
    out: dict[str, list[bool]] = {}
    for record in evaluate(CLAIMS, paper_scopes()):
        out.setdefault(record["id"], []).append(record["point"] == "holds")  # printed numbers: no noise to weigh
    return out


def departures(results: dict) -> list[str]:
    """Where the run departs from the paper (departures.py)."""
    from .departures import departures as listed

    return listed(results)


__all__ = ["CLAIMS", "PRINTED", "TABLE1", "departures", "paper_claims_hold", "paper_scopes"]
