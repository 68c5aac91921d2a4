"""Did a training learn? One rule for every paper's claims: a claim that rests on a trained run whose objective did
not learn measures the initialisation, not the paper's idea, so it is "inconclusive" by rule (unless_learned).

With the logged training losses l_1..l_n and w = max(1, n // 4) (a quarter of the curve), start = mean(l_1..l_w),
final = mean(l_{n-w+1}..l_n):

    learned  <=>  final <= (1 - FALL) * start                    the loss fell by FALL (5%) or more
                  and start - final > 2 * SE  (when w >= 2)       beyond the batch-to-batch noise of the logged
                                                                  losses: SE = sqrt(var_first / w + var_last / w)
                  and final <= ceiling  (when a paper has one)    e.g. DefSent+: half the loss of a uniform softmax

A record without a curve but with a start and a final loss (e.g. the loss before the first update) is judged on the
first and last conditions alone (fell). Fewer than two logged losses and no start: None (nothing to judge).

A training record with a probe ("probe": [before, after], the training loss of the same fixed rows scored before and
after the training, in eval mode without gradient: judge_training) is judged by the probe: the logged curve scores a
new batch at every step, whose difficulty can vary more than a short fine-tuning of a pretrained encoder moves the
loss, while the probe has no batch-to-batch noise, so the fall alone decides (fell, with the ceiling).
"""

from __future__ import annotations

import math
from dataclasses import replace

from .claims import Measured

FALL = 0.05    # relative fall of the loss, last quarter against the first
WINDOW = 4     # the windows are a 1/WINDOW share of the curve
PROBE_ROWS = 64  # rows of a training's probe (training.train scores its first PROBE_ROWS rows before and after)

RULE = (f"a training learned when its loss fell by {FALL:.0%}: on its probe (the first {PROBE_ROWS} training rows "
        "scored before and after, eval mode, no gradient), or where a run kept no probe, on its logged losses (the "
        f"last quarter's mean {FALL:.0%} below the first quarter's and more than 2 standard errors below it; "
        "spherekit.experiments.learning.judge_training)")
"""judge_training's rule in one sentence, for the cards."""


def curve_of(run: dict) -> list[float]:
    """The finite logged training losses of a unit run's record ("training" -> "curve" -> "loss")."""
    curve = ((run.get("training") or {}).get("curve") or {}).get("loss") or []
    return [float(x) for x in curve if x is not None and math.isfinite(float(x))]


def fell(start: float | None, final: float | None, *, ceiling: float | None = None) -> bool | None:
    """final <= (1 - FALL) start (and final <= ceiling when given); None when a value is missing."""
    if start is None or final is None:
        return None
    return final <= (1 - FALL) * start and (ceiling is None or final <= ceiling)


def judge(curve, *, ceiling: float | None = None) -> tuple[bool | None, str]:
    """(learned, "start -> final (change)" with the reason when it did not) of a loss curve (module docstring)."""
    losses = [float(x) for x in curve or () if x is not None and math.isfinite(float(x))]
    if len(losses) < 2:
        return None, "no loss curve"
    w = max(1, len(losses) // WINDOW)
    first, last = losses[:w], losses[-w:]
    start, final = sum(first) / w, sum(last) / w
    noisy = w >= 2 and start - final <= 2 * math.sqrt(_var(first) / w + _var(last) / w)
    return _outcome(start, final, ceiling=ceiling, within_noise=noisy)


def judge_training(record: dict | None, *, ceiling: float | None = None) -> tuple[bool | None, str]:
    """(learned, why) of one training record: by its probe [loss of fixed rows before, after] when it has one (the
    module docstring), else by its logged curve ("curve" -> "loss", judge)."""
    record = record or {}
    probe = [float(x) for x in record.get("probe") or () if x is not None and math.isfinite(float(x))]
    if len(probe) == 2:
        before, after = probe
        return _outcome(before, after, ceiling=ceiling, label="probe ")
    return judge((record.get("curve") or {}).get("loss"), ceiling=ceiling)


def learned(curve, *, ceiling: float | None = None) -> bool | None:
    """judge(curve)[0]: True / False, or None when fewer than two losses were logged."""
    return judge(curve, ceiling=ceiling)[0]


def _outcome(start: float, final: float, *, ceiling: float | None, within_noise: bool = False,
             label: str = "") -> tuple[bool, str]:
    """(learned, "label start -> final (change)" with the first reason it did not learn: the fall, then the noise,
    then the ceiling)."""
    why = f"{label}{start:.3f} -> {final:.3f} ({(final - start) / abs(start) if start else math.inf:+.1%}"
    if not final <= (1 - FALL) * start:
        return False, why + f", a fall under {FALL:.0%})"
    if within_noise:
        return False, why + ", within 2 standard errors)"
    if ceiling is not None and final > ceiling:
        return False, why + f", above {ceiling:.3f})"
    return True, why + ")"


def _var(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def unless_learned(measured: Measured, stalled: list[str]) -> Measured:
    """`measured`, or the same record made inconclusive (holds None) naming the runs that did not learn."""
    if not stalled:
        return measured
    return replace(measured, text=f"{measured.text}; objective did not learn: {', '.join(stalled)}", holds=None)


__all__ = ["FALL", "PROBE_ROWS", "RULE", "WINDOW", "curve_of", "fell", "judge", "judge_training", "learned",
           "unless_learned"]
