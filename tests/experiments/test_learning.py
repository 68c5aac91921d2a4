"""The experiment core's "learned" rule (spherekit.experiments.api.learning), which every paper's claims use: a claim on
a trained run whose loss did not fall measurably is inconclusive."""


from spherekit.experiments.api.claims import Claim, Measured, Scope, evaluate
from spherekit.experiments.api.learning import (BARELY_MOVED, DID_NOT_LEARN, LEARNED, curve_of, gate,
                                                grade_training, judge, judge_training, learned, trainings)

FALLING = [5.0 - 0.1 * i + 0.01 * (i % 2) for i in range(30)]  # -58 %, far beyond its noise
FLAT = [5.0 + 0.02 * (i % 3) for i in range(30)]                # 0 %


def test_learned_rule():
    assert learned(FALLING) is True
    ok, why = judge(FLAT)
    assert ok is False and "no fall" in why
    assert judge([5.0] * 10 + [4.9] * 10)[1].endswith("a fall under 5%)")
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
    assert grade_training({"start": 2.0, "final": 1.8})[0] == LEARNED
    assert grade_training({"start": 2.0, "final": 1.95})[0] == BARELY_MOVED
    assert grade_training({"final": 1.0}) == (None, "no loss curve")
    assert grade_training({"start": 2.0, "final": 1.0, "ceiling": 0.9})[0] == DID_NOT_LEARN


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


def test_graded_wording():
    assert grade_training({"curve": {"loss": FALLING}})[0] == LEARNED
    assert grade_training({"probe": [2.0, 1.95]}) == (BARELY_MOVED, "probe 2.000 -> 1.950 (-2.5%, a fall under 5%)")
    assert grade_training({"probe": [2.0, 2.1]}) == (DID_NOT_LEARN, "probe 2.000 -> 2.100 (+5.0%, no fall)")
    assert grade_training({"probe": [3.0, 1.0], "ceiling": 0.5})[0] == DID_NOT_LEARN  # the record's own ceiling
    # a record with a start (the loss before the first update, or a chance level) and a final loss
    grade, why = grade_training({"start": 2.0, "start_from": "chance level ln(B + 1)", "final": 1.0})
    assert grade == LEARNED and why == "start (chance level ln(B + 1)) 2.000 -> 1.000 (-50.0%)"
    assert grade_training({"steps": 0}) == (None, "no loss curve")


def test_a_run_names_its_trainings():
    old = {"training": {"steps": 3, "curve": {"loss": [2.0, 1.0]}}}  # written before the records were named
    assert trainings(old) == {"encoder": old["training"]}
    new = {"training": {"encoder": {"probe": [2.0, 1.0]}, "verifier": {"start": 1.0, "final": 1.2}}}
    assert trainings(new) == new["training"] and trainings({}) == {}
    assert curve_of(old) == [2.0, 1.0] and curve_of(new, "verifier") == []


def _scope(*runs):
    unit = {"metrics": {"m": 0.5}, "runs": list(runs)}
    return Scope("b", {"B1": unit, "B0": {"metrics": {"m": 0.4}, "runs": [{"seed": None}]}})


def test_the_gate_makes_a_claim_inconclusive_with_one_phrasing():
    stalled = _scope({"seed": 0, "training": {"encoder": {"probe": [2.0, 1.0]}, "verifier": {"probe": [2.0, 1.97]}}},
                     {"seed": 1, "training": {"encoder": {"probe": [2.0, 2.2]}}})
    m = Measured.compare(0.3, ">", 0.0, "B1 beats B0", exact=True)
    gated = gate(m, stalled, ["B1", "B0", "missing"])
    assert gated.holds is None and gated.value == m.value
    assert gated.text == ("B1 beats B0; rests on trainings that did not learn (did not learn: B1 seed 1 encoder "
                          "(probe 2.000 -> 2.200 (+10.0%, no fall)); barely moved: B1 seed 0 verifier (probe 2.000 -> "
                          "1.970 (-1.5%, a fall under 5%)))")
    learned_ = _scope({"seed": 0, "training": {"encoder": {"probe": [2.0, 1.0]}}})
    assert gate(m, learned_, ["B1"]) is m
    # through the claim: rests_on names the conditions (or computes them from the scope and the record's label)
    claims = [Claim("X", "s", "src", "r", lambda s: m, rests_on=("B1",)),
              Claim("Y", "s", "src", "r", lambda s: [m], rests_on=lambda s, label: ["B1"]),
              Claim("Z", "s", "src", "r", lambda s: m)]
    records = evaluate(claims, [stalled])
    assert [r["verdict"] for r in records] == ["inconclusive", "inconclusive", "holds"]
    assert "rests on trainings that did not learn" in records[0]["measured"]
    assert [r["verdict"] for r in evaluate(claims, [learned_])] == ["holds"] * 3


def test_a_steep_first_quarter_is_the_trend_not_noise():
    # a loss that falls fast then flattens (compositional's Model A, steps 10-120): the first quarter's spread is its
    # trend; around its line the batch noise is small, so the -27% fall is beyond it (a plain variance said it was not)
    curve = [0.716, 0.501, 0.424] + [0.40 + 0.003 * (-1) ** k for k in range(9)]
    assert grade_training({"curve": {"loss": curve}}) == (LEARNED, "0.547 -> 0.401 (-26.7%)")
    # a window with a real spread around its line stays "barely moved"
    noisy = [0.716, 0.301, 0.624] + [0.40 + 0.15 * (-1) ** k for k in range(9)]
    assert grade_training({"curve": {"loss": noisy}})[0] == BARELY_MOVED


def test_the_gate_asks_the_paper_whether_a_trained_condition_can_speak():
    scope = _scope({"seed": 0, "training": {"encoder": {"probe": [2.0, 1.0]}}})  # learned
    m = Measured.compare(0.3, ">", 0.0, "B1 beats B0", exact=True)
    at_chance = lambda s, c: "B1 at chance (AUC 0.50)" if c == "B1" else None  # noqa: E731
    gated = gate(m, scope, ["B1", "B0"], at_chance)
    assert gated.holds is None and gated.text == ("B1 beats B0; rests on undertrained runs, which cannot decide it: "
                                                  "B1 at chance (AUC 0.50)")
    assert gate(m, scope, ["B0"], at_chance) is m
    claims = [Claim("X", "s", "src", "r", lambda s: m, rests_on=("B1",))]
    assert evaluate(claims, [scope], undertrained=at_chance)[0]["verdict"] == "inconclusive"
    assert evaluate(claims, [scope])[0]["verdict"] == "holds"
