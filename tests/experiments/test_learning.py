"""The experiment core's "learned" rule (spherekit.experiments.learning), which every paper's claims use: a claim on
a trained run whose loss did not fall measurably is inconclusive."""

import pytest

from spherekit.experiments.claims import Measured
from spherekit.experiments.learning import curve_of, fell, judge, judge_training, learned, unless_learned

FALLING = [5.0 - 0.1 * i + 0.01 * (i % 2) for i in range(30)]  # -58 %, far beyond its noise
FLAT = [5.0 + 0.02 * (i % 3) for i in range(30)]                # 0 %


def test_learned_rule():
    assert learned(FALLING) is True
    ok, why = judge(FLAT)
    assert ok is False and "a fall under 5%" in why
    jumpy = [6.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 2.5, 6.5]  # quarters 5.0 -> 4.5: -10 %, inside its noise
    ok, why = judge(jumpy)
    assert ok is False and "within 2 standard errors" in why and why.startswith("5.000 -> 4.500 (-10.0%")
    assert learned([2.0, 1.9]) is True and learned([2.0, 1.91]) is False  # one value per window: the fall alone
    assert learned([]) is None and learned([1.0]) is None and learned(None) is None
    assert learned([3.0, 1.0], ceiling=0.5) is False and learned([3.0, 0.4], ceiling=0.5) is True
    assert judge([3.0, 1.0], ceiling=0.5)[1].endswith("above 0.500)")


def test_records_and_gating():
    assert curve_of({"training": {"curve": {"loss": [2.0, None, float("nan"), 1.0]}}}) == [2.0, 1.0]
    assert curve_of({"seed": None}) == []
    assert fell(2.0, 1.8) is True and fell(2.0, 1.95) is False and fell(None, 1.0) is None
    assert fell(2.0, 1.0, ceiling=0.9) is False
    m = Measured.compare(0.3, ">", 0.0, "B1 0.5 -> 0.8")
    assert unless_learned(m, []) is m
    gated = unless_learned(m, ["B1 seed 0 (loss 5.000 -> 4.990)"])
    assert gated.holds is None and gated.value == pytest.approx(0.3) and "did not learn: B1 seed 0" in gated.text


def test_a_training_record_is_judged_by_its_probe_when_it_has_one():
    # the probe scores the same rows before and after: no batch noise, so the fall alone decides, whatever the curve
    noisy = [2.6, 2.9, 2.2, 2.7, 2.5, 2.4, 2.1, 2.9]  # -7 % on the curve, inside its noise
    assert judge(noisy)[0] is False
    ok, why = judge_training({"curve": {"loss": noisy}, "probe": [2.672, 2.028]})
    assert ok is True and why == "probe 2.672 -> 2.028 (-24.1%)"
    ok, why = judge_training({"curve": {"loss": FALLING}, "probe": [2.0, 1.95]})  # the curve fell, the probe did not
    assert ok is False and why == "probe 2.000 -> 1.950 (-2.5%, a fall under 5%)"
    assert judge_training({"probe": [3.0, 1.0]}, ceiling=0.5) == (False, "probe 3.000 -> 1.000 (-66.7%, above 0.500)")
    # no probe (or a broken one): the logged curve
    assert judge_training({"curve": {"loss": FALLING}}) == judge(FALLING)
    assert judge_training({"curve": {"loss": FLAT}, "probe": [2.0, float("nan")]}) == judge(FLAT)
    assert judge_training({}) == (None, "no loss curve") and judge_training(None) == (None, "no loss curve")
