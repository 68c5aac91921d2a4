"""Whether a trained verifier is undertrained: too briefly trained for a claim resting on it to be decided.

The released code trains each verifier for its step table's count (an encoder < 50M: frozen F3 375 / F4 1,500, end
to end F0-F2 825 / F3 412 / F4 1,125; released.py), the CPU presets for 20-60 steps. The core's gate
(spherekit.experiments.api.learning) asks whether a training's loss fell; a verifier's can fall by 80% in 60 steps
and still leave it unable to do what the claims read. A verifier run that trained (a "verifier" training record with
steps > 0: frozen F3 / F4 and every end-to-end run; frozen F0-F2 have no parameters and do not train) is
undertrained when either

- its near-miss ROC-AUC (positives vs near-misses over every held-out pair, Figure 3's "overall") has a 95% interval
  that contains 0.5: it does not tell a near-miss from a positive (the two-level bootstrap over its seeds and the
  pairs, the AUCs recomputed per resample, as C8 / C9 compute theirs: readings.auc_noise), or
- its re-ranked nDCG@10 falls below its own stage 1's (the pooled-cosine ranking it re-ranks: the untuned encoder
  frozen, the jointly trained one end to end) by more than the noise: the 95% interval of the difference (the
  two-level bootstrap over its seeds and the queries) lies wholly below 0, re-ranking with it makes the ranking
  worse.

A verifier trained for at least the released code's count for its encoder's size (the size of a backbone in
released.PARAMETERS_M; the count at the released batches and its 4-minute budget) is never undertrained: it
trained as long as the paper's verifiers did, so its numbers decide the claims, a near-miss ROC-AUC at chance or a
re-ranking below stage 1 included (a result on this data, not a training length; the card's departures say so and
name the batch it trained at). Without that exemption a claim such as C8 ("F3 / F4 separate near-misses") could
never fail: a verifier that does not separate them would always be "undertrained". A backbone whose size is not in
the table has no released count here, and the two criteria apply at any length.

A claim resting on an undertrained verifier (the verifier conditions its rests_on names) is inconclusive
(the core's gate asks why(), through Experiment.undertrained), whichever side of the claim's comparison the
verifier is on and whichever way the claim's own interval points: its verdict would be decided by the training
length, not by the verifier. Its measured text says "undertrained" with each verifier's numbers. A criterion
whose series a run did not keep (per-pair scores, per-query values, the stage-1 scores) is not applied; a claim
reading those runs has no interval of its own and is inconclusive anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api import fmt
from ..api.claims import NotRun
from ..api.learning import trainings
from ..api.uncertainty import two_level
from . import released
from .readings import auc_noise
from .run import VERIFIER
from .spec import released_verifier_steps, verifier_of

UNDERTRAINED = "undertrained"
CHANCE = 0.5
RULE = ("a trained verifier it reads (frozen F3 / F4, every end-to-end run) is undertrained: the 95% interval of "
        "its near-miss ROC-AUC contains 0.5, or its re-ranked nDCG@10 falls below its own stage 1's beyond the 95% "
        "interval of the difference (two-level bootstrap over its seeds and the held-out pairs / queries), while it "
        "trained for fewer steps than the released code's count (a verifier trained that long is judged on its "
        "numbers; spherekit.experiments.compositional.undertrained)")
"""The rule in one clause, for the card ("... inconclusive when <RULE>")."""


@dataclass(frozen=True)
class Check:
    """What the two criteria measured on one trained verifier condition: steps (its runs' step counts), released
    (the released code's count for it, None when the encoder's size is not in the table), auc / auc_interval (its
    near-miss ROC-AUC), gain / gain_interval (re-ranked minus stage-1 nDCG@10), reranked / stage1 (the two means);
    None where the runs did not keep the series."""

    condition: str
    steps: tuple[int, ...]
    released: int | None = None
    auc: float | None = None
    auc_interval: tuple[float, float] | None = None
    gain: float | None = None
    gain_interval: tuple[float, float] | None = None
    reranked: float | None = None
    stage1: float | None = None

    @property
    def chance(self) -> bool:
        """The near-miss ROC-AUC's interval contains 0.5."""
        return self.auc_interval is not None and self.auc_interval[0] <= CHANCE <= self.auc_interval[1]

    @property
    def hurts(self) -> bool:
        """The re-ranked nDCG@10 is below its own stage 1's beyond the noise (the interval wholly below 0)."""
        return self.gain_interval is not None and self.gain_interval[1] < 0

    @property
    def at_released(self) -> bool:
        """Every run trained for at least the released code's count."""
        return self.released is not None and min(self.steps) >= self.released

    @property
    def failed(self) -> bool:
        """A criterion fires (at chance or hurting), whatever the training length."""
        return self.chance or self.hurts

    @property
    def undertrained(self) -> bool:
        return self.failed and not self.at_released

    def text(self) -> str:
        steps = "/".join(f"{n:,}" for n in sorted(set(self.steps))) + " steps"
        parts = []
        if self.chance:
            lo, hi = self.auc_interval
            parts.append(f"near-miss ROC-AUC {fmt.num(self.auc)}, interval [{fmt.num(lo)}, {fmt.num(hi)}] contains "
                         "0.5")
        if self.hurts:
            parts.append(f"re-ranked nDCG@10 {fmt.num(self.reranked)} below its own stage 1's {fmt.num(self.stage1)} "
                         f"({fmt.signed(self.gain)}, interval {fmt.interval(*self.gain_interval)})")
        if self.at_released:
            return f"{self.condition} at {steps}, the released count: {'; '.join(parts)}"
        return f"{self.condition} at {steps} ({'; '.join(parts)})"


def trained(scope, condition: str) -> tuple[int, ...]:
    """The step counts of the condition's verifier trainings that ran (steps > 0); () when the condition is not a
    verifier, did not run here, or did not train (frozen F0-F2)."""
    if not verifier_of(condition) or not scope.has(condition):
        return ()
    steps = tuple(int((trainings(r).get(VERIFIER) or {}).get("steps") or 0) for r in scope.runs(condition))
    return steps if any(steps) else ()


def released_count(scope, condition: str) -> int | None:
    """The released code's step count for the verifier condition on the scope's backbone (released.verifier_steps at
    the released batches and its 4-minute budget, whatever this config's time_budget_s); None when the backbone's
    size is not in the table."""
    millions = released.PARAMETERS_M.get(scope.name)
    if millions is None:
        return None
    regime, name = condition.split("_", 1)
    return released_verifier_steps(int(millions * 1e6), regime, name)


def check(scope, condition: str) -> Check | None:
    """The two criteria on a trained verifier condition of the scope (None: it did not train)."""
    steps = trained(scope, condition)
    if not steps:
        return None
    out = {"released": released_count(scope, condition)}
    auc = auc_noise({condition: scope.unit(condition)}, "overall", lambda m: m[condition])
    if auc is not None:
        out.update(auc=auc.value, auc_interval=auc.interval)
    try:
        x, first = scope.series(condition, "nDCG@10"), scope.series(condition, "stage-1/nDCG@10")
    except NotRun:
        x = None
    if x is not None and x.shape == first.shape and x.shape[1] >= 2:
        gain = two_level(lambda d: d.mean(condition, x) - d.mean(condition, first), x.shape[1], {condition: len(x)})
        out.update(gain=gain.value, gain_interval=gain.interval, reranked=float(x.mean()), stage1=float(first.mean()))
    return Check(condition, steps, **out)


def undertrained(scope, conditions) -> list[Check]:
    """The undertrained verifiers among `conditions` (module docstring), in their order."""
    found = [check(scope, c) for c in dict.fromkeys(conditions)]
    return [c for c in found if c is not None and c.undertrained]


def why(scope, condition: str) -> str | None:
    """Experiment.undertrained of this paper: the numbers of an undertrained verifier condition, else None."""
    found = check(scope, condition)
    return found.text() if found is not None and found.undertrained else None


__all__ = ["CHANCE", "Check", "RULE", "UNDERTRAINED", "check", "released_count", "trained", "undertrained", "why"]
