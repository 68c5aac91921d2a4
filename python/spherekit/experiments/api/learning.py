"""Did a training learn? One gate for every paper's claims: a claim declares the conditions it rests on
(claims.Claim(..., rests_on=...)), and when a training of one of their runs did not learn, the claim measures the
initialisation, not the paper's idea, so it is "inconclusive" by rule (gate), with one phrasing on every card.

A run's trainings are one record each under run["training"] ({name: record}: "encoder" for the model of
UnitContext.train_or_load, and whatever else the unit trains through UnitContext.record_training: a verifier, a
bank, a section's fine-tuning); trainings(run) reads them. A record holds "steps", a "curve" ({"step": [...],
"loss": [...]}), and where the training kept them a "probe" [before, after], "start" and "final" (the loss before the
first update and after the last; "start_from" says where a start came from) and a "ceiling" (a loss the final must
reach, e.g. DefSent+'s half of a uniform softmax's).

With the logged training losses l_1..l_n and w = max(1, n // 4) (a quarter of the curve), start = mean(l_1..l_w),
final = mean(l_{n-w+1}..l_n):

    learned  <=>  final <= (1 - FALL) * start                    the loss fell by FALL (5%) or more
                  and start - final > 2 * SE  (when w >= 2)       beyond the batch-to-batch noise of the logged
                                                                  losses: SE = sqrt(var_first / w + var_last / w)
                  and final <= ceiling  (when a paper has one)    e.g. DefSent+: half the loss of a uniform softmax

where var_first and var_last are the variances of a window's losses around the straight line fitted through them
(ddof 2; with w = 2, the plain variance): the batch-to-batch noise, not the trend (a steep first quarter is the
loss falling, not noise).

A record without a curve but with a start and a final loss (e.g. the loss before the first update) is judged on the
first and last conditions alone. Fewer than two logged losses and no start: None (nothing to judge).

Graded (grade_training): "learned"; "barely moved" (the loss fell, but by less than FALL or within the noise: the
card gives the measured change); "did not learn" (the loss did not fall, or stayed above its ceiling). Both of the
last two make a claim resting on the training inconclusive.

A training record with a probe ("probe": [before, after], the training loss of the same fixed rows scored before and
after the training, in eval mode without gradient: judge_training) is judged by the probe: the logged curve scores a
new batch at every step, whose difficulty can vary more than a short fine-tuning of a pretrained encoder moves the
loss, while the probe has no batch-to-batch noise, so the fall alone decides (with the ceiling).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from ...training.trainer import PROBE_ROWS

LEARNED, BARELY_MOVED, DID_NOT_LEARN = "learned", "barely moved", "did not learn"
ENCODER = "encoder"  # the name of the model's own training (UnitContext.train_or_load)
_RECORD_KEYS = ("steps", "curve", "probe", "start")

FALL = 0.05    # relative fall of the loss, last quarter against the first
WINDOW = 4     # the windows are a 1/WINDOW share of the curve

RULE = (f"a training learned when its loss fell by {FALL:.0%}: on its probe (the first {PROBE_ROWS} training rows "
        "scored before and after, eval mode, no gradient), or where a run kept no probe, on its logged losses (the "
        f"last quarter's mean {FALL:.0%} below the first quarter's and more than 2 standard errors below it), or on "
        "its loss before the first update and after the last; a loss that fell by less, or within its noise, "
        "\"barely moved\"; one that did not fall, or stayed above its ceiling, \"did not learn\"; a claim resting on "
        "either is inconclusive (spherekit.experiments.api.learning.gate)")
"""judge_training's rule in one sentence, for the cards."""


def trainings(run: dict) -> dict[str, dict]:
    """{name: training record} of a run (run["training"]); a run written before the records were named holds its
    encoder's record there directly: {"encoder": it}."""
    training = run.get("training") or {}
    if any(k in training for k in _RECORD_KEYS):
        return {ENCODER: training}
    return {name: record for name, record in training.items() if isinstance(record, dict)}


def _finite(values) -> list[float]:
    """The finite numbers of `values` (None and NaN / Inf left out; None or empty: [])."""
    return [float(x) for x in values or () if x is not None and math.isfinite(float(x))]


def curve_of(run: dict, name: str = ENCODER) -> list[float]:
    """The finite logged training losses of a run's training `name` ("curve" -> "loss")."""
    return _finite(((trainings(run).get(name) or {}).get("curve") or {}).get("loss"))


def judge(curve, *, ceiling: float | None = None) -> tuple[bool | None, str]:
    """(learned, "start -> final (change)" with the reason when it did not) of a loss curve (module docstring)."""
    losses = _finite(curve)
    if len(losses) < 2:
        return None, "no loss curve"
    grade, why = _graded_curve(losses, ceiling=ceiling)
    return grade == LEARNED, why


def _graded_curve(losses: list[float], *, ceiling: float | None) -> tuple[str, str]:
    w = max(1, len(losses) // WINDOW)
    first, last = losses[:w], losses[-w:]
    start, final = sum(first) / w, sum(last) / w
    noisy = w >= 2 and start - final <= 2 * math.sqrt(_noise_var(first) / w + _noise_var(last) / w)
    return _graded(start, final, ceiling=ceiling, within_noise=noisy)


def judge_training(record: dict | None, *, ceiling: float | None = None) -> tuple[bool | None, str]:
    """(learned, why) of one training record: by its probe [loss of fixed rows before, after] when it has one (the
    module docstring), else by its logged curve ("curve" -> "loss", judge), else by its start and final losses.
    The ceiling is the record's own "ceiling" unless given."""
    grade, why = grade_training(record, ceiling=ceiling)
    return (None if grade is None else grade == LEARNED), why


def grade_training(record: dict | None, *, ceiling: float | None = None) -> tuple[str | None, str]:
    """(LEARNED / BARELY_MOVED / DID_NOT_LEARN or None: nothing to judge, why) of one training record (the module
    docstring)."""
    record = record or {}
    ceiling = record.get("ceiling") if ceiling is None else ceiling
    probe = _finite(record.get("probe"))
    if len(probe) == 2:
        before, after = probe
        return _graded(before, after, ceiling=ceiling, label="probe ")
    curve = _finite((record.get("curve") or {}).get("loss"))
    if len(curve) >= 2:
        return _graded_curve(curve, ceiling=ceiling)
    start, final = record.get("start"), record.get("final", curve[-1] if curve else None)
    if start is None or final is None:
        return None, "no loss curve"
    where = f" ({record['start_from']})" if record.get("start_from") else ""
    return _graded(float(start), float(final), ceiling=ceiling, label=f"start{where} ")


def learned(curve, *, ceiling: float | None = None) -> bool | None:
    """judge(curve)[0]: True / False, or None when fewer than two losses were logged."""
    return judge(curve, ceiling=ceiling)[0]


def _graded(start: float, final: float, *, ceiling: float | None, within_noise: bool = False,
            label: str = "") -> tuple[str, str]:
    """(grade, "label start -> final (change)" with the first reason it did not learn: no fall, the ceiling, a fall
    under FALL, the noise)."""
    why = f"{label}{start:.3f} -> {final:.3f} ({(final - start) / abs(start) if start else math.inf:+.1%}"
    if not final < start:
        return DID_NOT_LEARN, why + ", no fall)"
    if ceiling is not None and final > ceiling:
        return DID_NOT_LEARN, why + f", above {ceiling:.3f})"
    if not final <= (1 - FALL) * start:
        return BARELY_MOVED, why + f", a fall under {FALL:.0%})"
    if within_noise:
        return BARELY_MOVED, why + ", within 2 standard errors)"
    return LEARNED, why + ")"


def _noise_var(xs: list[float]) -> float:
    """The variance of xs around the least-squares line through (k, x_k), ddof 2: the window's noise without its
    trend (two values: their plain variance, ddof 1)."""
    n = len(xs)
    if n < 3:
        m = sum(xs) / n
        return sum((x - m) ** 2 for x in xs) / (n - 1)
    k_mean, x_mean = (n - 1) / 2, sum(xs) / n
    sxx = sum((k - k_mean) ** 2 for k in range(n))
    slope = sum((k - k_mean) * (x - x_mean) for k, x in enumerate(xs)) / sxx
    return sum((x - x_mean - slope * (k - k_mean)) ** 2 for k, x in enumerate(xs)) / (n - 2)


def stalled(scope, conditions: Iterable[str]) -> dict[str, list[str]]:
    """{grade: ["condition seed s name (start -> final (change, reason))"]} of the trainings of the runs of
    `conditions` (those in the scope) that did not learn, BARELY_MOVED and DID_NOT_LEARN (empty: every training
    learned, or there was nothing to judge)."""
    out: dict[str, list[str]] = {}
    for condition in dict.fromkeys(c for c in conditions if scope.has(c)):
        for run in scope.runs(condition):
            for name, record in trainings(run).items():
                grade, why = grade_training(record)
                if grade in (BARELY_MOVED, DID_NOT_LEARN):
                    seed = "" if run.get("seed") is None else f" seed {run['seed']}"
                    out.setdefault(grade, []).append(f"{condition}{seed} {name} ({why})")
    return out


def gate(measured, scope, conditions: Iterable[str], undertrained=None):
    """`measured` (claims.Measured), or the same record made inconclusive (holds None) when a condition among
    `conditions` is undertrained (undertrained(scope, condition) -> why, or None: the paper's own test of whether a
    trained condition can speak at all, Experiment.undertrained) or a training of its runs did not learn, naming
    each with its numbers: the one phrasing of every card."""
    conditions = list(dict.fromkeys(conditions))
    notes = [why for c in conditions if undertrained and scope.has(c) and (why := undertrained(scope, c))]
    if notes:
        measured = replace(measured, holds=None, text=f"{measured.text}; rests on undertrained runs, which cannot "
                                                      f"decide it: {', '.join(notes)}")
    found = stalled(scope, conditions)
    if not found:
        return measured
    parts = [f"{grade}: {', '.join(found[grade])}" for grade in (DID_NOT_LEARN, BARELY_MOVED) if grade in found]
    return replace(measured, text=f"{measured.text}; rests on trainings that did not learn ({'; '.join(parts)})",
                   holds=None)


__all__ = ["BARELY_MOVED", "DID_NOT_LEARN", "ENCODER", "FALL", "LEARNED", "PROBE_ROWS", "RULE", "WINDOW", "curve_of",
           "gate", "grade_training", "judge", "judge_training", "learned", "stalled", "trainings"]
