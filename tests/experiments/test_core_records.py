"""The experiment core's records: claim verdicts (with margins and intervals), printed numbers next to ours, the
metric vocabulary, the shared formatters and the aggregation of seeds."""

import math

import numpy as np
import pytest

from spherekit.experiments.api import fmt
from spherekit.experiments.api.claims import Claim, Measured, NotRun, Scope, counts, evaluate, render, verdict
from spherekit.experiments.api.metrics import MetricName, invalid_keys, lookup, parse
from spherekit.experiments.api.printed import Printed, comparison, grid
from spherekit.experiments.api.units import ESTIMATOR, aggregate, unit_runs


EXACT = "exact"  # a measurement without sampling noise: the point value decides


@pytest.mark.parametrize("value, op, margin, interval, expected", [
    (0.05, ">", 0.0, EXACT, "holds"),
    (-0.05, ">", 0.0, EXACT, "does not hold"),
    (0.05, ">", 0.0, None, "inconclusive"),                # no interval and not exact: the noise is unknown
    (-0.05, ">", 0.0, None, "inconclusive"),
    (0.05, ">", 0.0, (0.01, 0.09), "holds"),
    (0.05, ">", 0.0, (-0.01, 0.09), "inconclusive"),       # the interval straddles the margin
    (-0.05, ">", 0.0, (-0.09, -0.01), "does not hold"),
    (0.02, ">=", 0.02, EXACT, "holds"),
    (0.02, ">", 0.02, EXACT, "does not hold"),
    (0.01, "<", 0.02, (0.0, 0.03), "inconclusive"),
    (0.01, "within", 0.02, (-0.015, 0.019), "holds"),      # "unchanged" is symmetric
    (-0.042, "within", 0.02, EXACT, "does not hold"),      # a drop fails an "unchanged" rule as a rise would
    (-0.042, "within", 0.02, None, "inconclusive"),
    (0.01, "within", 0.02, (-0.01, 0.03), "inconclusive"),
    (0.05, "within", 0.02, (0.03, 0.07), "does not hold"),
    (float("nan"), ">", 0.0, EXACT, "inconclusive"),
    (-0.05, ">", 0.0, (None, -0.01), "does not hold"),     # one-sided: bounded above, below the margin
    (0.05, ">", 0.0, (None, 0.09), "inconclusive"),        # an open lower end never passes: cannot hold
    (0.05, ">", 0.0, (0.01, None), "holds"),
    (0.01, "<", 0.02, (None, 0.015), "holds"),
    (0.01, "within", 0.02, (None, 0.015), "inconclusive"),
    (0.05, "within", 0.02, (0.03, None), "does not hold"),
])
def test_verdicts(value, op, margin, interval, expected):
    exact = interval == EXACT
    m = Measured.compare(value, op, margin, "x", interval=None if exact else interval, exact=exact)
    assert verdict(m) == expected


def test_a_sanity_check_is_decided_on_its_point_value():
    m = Measured.compare(0.05, ">", 0.0, "x")
    assert verdict(m) == "inconclusive" and verdict(m, sanity=True) == "holds"
    assert verdict(Measured.compare(-0.05, ">", 0.0, "x"), sanity=True) == "does not hold"


def test_decided_and_bad_op():
    assert verdict(Measured.decided(True, "x", exact=True)) == "holds"
    assert verdict(Measured.decided(False, "x", exact=True)) == "does not hold"
    assert verdict(Measured.decided(True, "x")) == "inconclusive"  # an ordering whose noise was not measured
    assert verdict(Measured.decided(None, "x")) == "inconclusive"
    with pytest.raises(ValueError, match="op must be one of"):
        Measured.compare(1.0, "!=", 0.0, "x")
    with pytest.raises(ValueError, match="needs at least one end"):
        Measured.compare(1.0, ">", 0.0, "x", interval=(None, None))


def _units():
    return {"A": {"metrics": {"R@10": 0.5, "cosine": 0.3}, "runs": [{"seed": 0}]},
            "B": {"metrics": {"R@10": 0.6}, "runs": [{"seed": 0}]}}


CLAIMS = [
    Claim("C1", "B beats A", "Table 1", "B's R@10 above A's",
          lambda s: Measured.compare(s.metric("B", "R@10") - s.metric("A", "R@10"), ">", 0.0, "B - A",
                                     interval=(0.01, 0.2), uncertainty="paired bootstrap over 10 queries")),
    Claim("C2", "Z exists", "section 2", "Z's R@10 above 0", lambda s: Measured.compare(s.metric("Z", "R@10"), ">", 0,
                                                                                        "z")),
    Claim("C3", "per condition", "Table 2", "cosine below 1",
          lambda s: [Measured.compare(s.metric(c, "cosine"), "<", 1.0, c, label=c) for c in ("A",)]),
    Claim("S1", "a sanity check", "listing 1", "always", lambda s: Measured.decided(True, "ok"), sanity=True),
    Claim("C4", "needs a file", "section 3", "...", lambda s: (_ for _ in ()).throw(NotRun("the file (--data-dir)"))),
]


def test_evaluate_records_render_and_count():
    records = evaluate(CLAIMS, [Scope("bb", _units())])
    by_id = {r["id"]: r for r in records}
    assert by_id["C1"]["verdict"] == "holds" and by_id["C1"]["interval"] == [0.01, 0.2]
    assert by_id["C1"]["value"] == pytest.approx(0.1) and by_id["C1"]["op"] == ">" and by_id["C1"]["margin"] == 0.0
    assert by_id["C2"]["verdict"] == "not run" and by_id["C2"]["measured"] == "needs Z"
    # no interval and not exact: the point value passes, but its noise is unknown, and the record says both
    assert by_id["C3 (A)"]["verdict"] == "inconclusive" and by_id["C3 (A)"]["exact"] is False
    assert by_id["C3 (A)"]["measured"] == ("A (the point value alone passes the rule; its noise was not measured, "
                                          "so the verdict is inconclusive)")
    assert by_id["S1"]["verdict"] == "holds" and by_id["S1"]["measured"] == "ok"  # sanity: decided as measured
    assert by_id["C4"]["measured"] == "needs the file (--data-dir)"
    assert counts(records) == {"holds": 1, "does not hold": 0, "inconclusive": 1, "not run": 2}  # S1 not counted
    text = render(records, scope="bb")
    assert "| C1 | B beats A | Table 1 | B - A | B's R@10 above A's; paired bootstrap over 10 queries [+0.010, " \
           "+0.200] | **holds** |" in text
    assert "Sanity checks" in text and text.index("S1") > text.index("Sanity checks")


def test_scope_metric_and_get():
    s = Scope("bb", _units())
    assert s.metric("A", "R@10") == 0.5 and s.get("A", "nope") is None and s.get("Q", "R@10", 1) == 1
    with pytest.raises(NotRun, match="A \\(nope\\)"):
        s.metric("A", "nope")
    assert s.has("A", "B") and not s.has("A", "Z") and s.runs("A") == [{"seed": 0}]


def test_printed_comparison_and_grid():
    printed = [Printed("Table 1", "A", "R@10", 0.7, setting="big model"),
               Printed("text", "B", "R@10", 0.8, setting="big model", note="derived: A + 0.1")]
    scope = Scope("bb", _units())
    rows = comparison(printed, [scope])
    assert rows[0] == {"source": "Table 1", "condition": "A", "metric": "R@10", "setting": "big model",
                       "paper": 0.7, "paper_std": None, "note": "", "ours": {"bb": 0.5}}
    table = grid(scope, ["A", "B", "Z"], [("R@10", "R@10"), ("cosine", "cos", 2)], printed)
    assert table.splitlines() == ["| condition | R@10 | cos |", "|---|---|---|",
                                  "| A | 0.500 (0.700) | 0.30 |", "| B | 0.600 (0.800*) | - |"]


def test_metric_grammar_and_vocabulary():
    key = parse("in-domain/R@10 (term to definition)")
    assert (key.scope, key.name, key.k, key.qualifier) == (("in-domain",), "R", 10, "term to definition")
    assert parse("nDCG@10").scope == () and parse("frozen/cls/R@10").scope == ("frozen", "cls")
    assert parse("in-domain/effective rank").name == "effective rank"
    for bad in ("R@0", "a//R", "R (x", "R@10 (a) (b)", "/R"):
        with pytest.raises(ValueError, match="does not follow the grammar"):
            parse(bad)
    assert lookup("MRR@10").higher_is_better is True and lookup("x/anisotropy").higher_is_better is None

    class Paper:
        name = "toy"
        metric_names = {"V-score": MetricName("V-score", True, "a toy score")}

    assert lookup("V-score", Paper()).doc == "a toy score"
    bad = invalid_keys(["recall@10", "V-score", "R@1", "R", "V-score@3", "mrr@10", "MRR", "Acc@1 (negation)"], Paper())
    assert len(bad) == 4
    assert "recall takes no cut-off @k" in bad[0]
    assert "R needs a cut-off" in bad[1] and "V-score takes no" in bad[2] and "name 'mrr'" in bad[3]


def test_formatters():
    assert (fmt.num(0.12345), fmt.num(None), fmt.num(math.nan), fmt.num(3, 1)) == ("0.123", "-", "nan", "3.0")
    assert (fmt.signed(0.012), fmt.signed(-0.3, 1), fmt.pm(0.5, 0.01), fmt.pm(0.5, None)) == \
        ("+0.012", "-0.3", "0.500 ± 0.010", "0.500")
    assert (fmt.pct(0.4567), fmt.count(12345), fmt.interval(-0.01, 0.02)) == ("45.7%", "12,345", "[-0.010, +0.020]")
    assert (fmt.interval(None, -0.5), fmt.interval(0.25, None), fmt.interval(None, None)) == \
        ("(-inf, -0.500]", "[+0.250, +inf)", "-")
    assert (fmt.duration(45), fmt.duration(372), fmt.duration(9000)) == ("45 s", "6.2 min", "2.5 h")


def test_aggregate_one_and_several_seeds():
    one = aggregate("bb", "A", [{"backbone": "bb", "condition": "A", "seed": 0, "metrics": {"R@10": 0.1 + 0.2},
                                 "seconds": {"train": 2.0}, "details": {"x": 1}}])
    assert one["metrics"] == {"R@10": 0.1 + 0.2} and "spread" not in one and one["seeds"] == [0]
    assert one["runs"] == [{"seed": 0, "metrics": {"R@10": 0.1 + 0.2}, "seconds": {"train": 2.0}, "details": {"x": 1}}]
    runs = [{"seed": s, "metrics": {"R@10": v, "setting": 4, "note": n, "maybe": None if s else 1.0},
             "seconds": {"train": 1.0}, "bank": {"points": [1, 2]}, "curve": [s]}
            for s, v, n in ((2, 0.5, "a"), (1, 0.7, "a"), (3, 0.9, "b"))]
    several = aggregate("bb", "A", runs)
    assert several["shared"] == {"bank": {"points": [1, 2]}}  # what every run recorded alike is kept once
    assert [r["curve"] for r in several["runs"]] == [[1], [2], [3]] and "bank" not in several["runs"][0]
    assert unit_runs(several)[0] == {"seed": 1, "metrics": runs[1]["metrics"], "seconds": {"train": 1.0},
                                     "bank": {"points": [1, 2]}, "curve": [1]}
    assert several["seeds"] == [1, 2, 3] and several["seconds"] == {"train": 3.0}
    assert several["metrics"]["R@10"] == pytest.approx(0.7) and several["metrics"]["setting"] == 4.0
    assert several["metrics"]["note"] is None and several["metrics"]["maybe"] is None  # not one value, no mean
    assert several["spread"] == {"estimator": ESTIMATOR, "n": 3, "std": {"R@10": pytest.approx(0.2), "setting": 0.0}}
    unseeded = aggregate("bb", "A", [{"seed": None, "metrics": {"R@10": 0.4}}])
    assert unseeded["seeds"] == [None] and unseeded["metrics"] == {"R@10": 0.4}


def test_bootstraps():
    import numpy as np

    from spherekit.experiments.api.uncertainty import bootstrap, per_item

    rng = np.random.default_rng(0)
    a = rng.random(400)
    lo, hi, how = bootstrap(lambda idx: float(a[idx].mean()), 400)
    assert lo < a.mean() < hi and how.startswith("bootstrap over 400 items")
    with pytest.raises(ValueError, match="at least 2 items"):
        bootstrap(lambda idx: 0.0, 1)
    assert per_item([0.1234567891, 1]) == [0.123457, 1.0]


def test_seed_interval_is_students_t_and_needs_two_seeds():
    from scipy.stats import t as student

    from spherekit.experiments.api.uncertainty import seed_interval

    assert seed_interval([0.3]) is None and seed_interval([]) is None
    lo, hi, how = seed_interval([1.0, 2.0, 3.0])
    half = student.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # sample std 1, 3 seeds
    assert (lo, hi) == pytest.approx((2 - half, 2 + half)) and how == "t-interval over 3 seeds, 95%"
    with pytest.raises(ValueError, match="1-D"):
        seed_interval([[1.0, 2.0]])


def test_hoeffding_interval_bounds_a_mean_of_bounded_items():
    from spherekit.experiments.api.uncertainty import hoeffding_interval

    lo, hi, how = hoeffding_interval(0.25, 800, 2.0)
    half = 2.0 * math.sqrt(math.log(40) / 1600)  # 2 exp(-2 n t^2 / range^2) = 0.05
    assert (lo, hi) == pytest.approx((0.25 - half, 0.25 + half)) and "800 independent items of range 2" in how
    # it covers: the worst case for the bound, +-1 coin flips, misses the true mean 0 in far fewer than 5% of draws
    rng = np.random.default_rng(0)
    means = rng.choice([-1.0, 1.0], size=(2000, 800)).mean(axis=1)
    assert np.mean(np.abs(means) > half) < 0.05
    for bad in (dict(n_items=0, item_range=1.0), dict(n_items=5, item_range=0.0)):
        with pytest.raises(ValueError, match="n_items >= 1 and item_range > 0"):
            hoeffding_interval(0.0, **bad)


def test_difference_uses_the_items_of_every_seed():
    from spherekit.experiments.api.claims import difference

    def unit(per_seed):
        means = [sum(v) / len(v) for v in per_seed]
        return {"metrics": {"MRR": sum(means) / len(means)},
                "runs": [{"seed": s, "metrics": {"MRR": m}, "per_item": {"MRR": v}}
                         for s, (m, v) in enumerate(zip(means, per_seed))]}

    scope = Scope("bb", {"A": unit([[0.0, 0.5, 1.0, 0.5] * 5]),
                         "B": unit([[0.5, 1.0, 1.0, 0.5] * 5, [0.5, 0.5, 1.0, 1.0] * 5])})
    assert scope.items("B", "MRR")[:4] == [0.5, 0.75, 1.0, 0.75]
    m = difference(scope, "A", "B", "MRR", ">", 0.0)
    assert m.value == pytest.approx(0.25) and m.interval[0] > 0 and verdict(m) == "holds"
    assert m.uncertainty == ("two-level bootstrap over seeds (B 2) and 20 items resampled together; 1 run of A, "
                             "95% interval") and m.text == "A 0.500 -> B 0.750 (+0.250)"
    assert verdict(difference(scope, "A", "B", "MRR", "within", 0.05)) == "does not hold"
    old = Scope("bb", {c: {"metrics": {"MRR": v}, "runs": [{"seed": 0}]} for c, v in (("A", 0.5), ("B", 0.6))})
    with pytest.raises(NotRun, match="per item"):
        old.items("A", "MRR")
    m = difference(old, "A", "B", "MRR", ">", 0.0)  # runs without per-item values: the point estimate, said so
    assert m.interval is None and m.uncertainty.startswith("none: these runs kept no per-item values")
    assert "uncertainty: none" in render(evaluate([Claim("X", "s", "t", "r", lambda s: m)], [old]))


def test_card_time_counts_units_reused_from_earlier_runs():
    """A resumed card's last run may take minutes while its units took half an hour in earlier runs: the index
    reports the larger of the last run's wall time and the data + every unit stage's recorded time."""
    from spherekit.experiments.harness.index import card_seconds

    resumed = {"wall_seconds": {"data": 10.0, "m/base/eval": 600.0, "m/1st-c/train": 700.0, "total": 290.0}}
    assert card_seconds(resumed) == 1310.0
    single = {"wall_seconds": {"data": 10.0, "m/base/eval": 60.0, "total": 75.0}}
    assert card_seconds(single) == 75.0
    assert card_seconds({"wall_seconds": {"total": 12.0}}) == 12.0


def test_card_summary_leads_with_the_time_across_runs_when_the_last_run_reused_them():
    """A last run that only re-rendered a resumed card took seconds: the docs summary gives the time across the
    runs its units come from first, and the last run's only in brackets."""
    from spherekit.experiments.harness.index import _took

    rendered = {"wall_seconds": {"data": 10.0, "m/base/eval": 600.0, "m/1st-c/train": 3000.0, "total": 0.11}}
    assert _took(rendered) == "60.2 min across the runs its units come from (its last run: 0 s)"
    assert _took({"wall_seconds": {"data": 10.0, "m/base/eval": 60.0, "total": 75.0}}) == "1.2 min of wall time"


def test_card_machine_names_every_runs_machine_and_says_when_runs_recorded_none():
    """The index says where a card's runs ran: the machines its runs recorded; a card that reuses runs from before
    the runner kept machines names its last run's machine and how many runs recorded none (they may have run
    elsewhere), never one machine for all of them."""
    from spherekit.experiments.harness.index import _machine

    def card(runs, total):
        return {"machine": "AMD EPYC (2 cores)", "wall_seconds": {"data": 1.0, "b/c/train": 100.0, "total": total},
                "units": {"b/c": {"runs": runs}, "b/d": {"shared": {"machines": ["Intel(R) Xeon(R) CPU (2 cores)"]},
                                                          "runs": [{"seed": 0}]}}}

    both = card([{"seed": 0, "machines": ["AMD EPYC (2 cores)"]}], 50.0)
    assert _machine(both) == "AMD EPYC (2 cores) and Intel Xeon (2 cores)"
    older = card([{"seed": 0}, {"seed": 1}], 50.0)
    assert _machine(older) == "AMD EPYC (2 cores) and Intel Xeon (2 cores) (the last run's; 2 of 3 runs recorded no " \
                              "machine)"
    in_one_run = card([{"seed": 0}], 500.0)  # nothing reused: every run ran in the card's last run
    assert _machine(in_one_run) == "AMD EPYC (2 cores) and Intel Xeon (2 cores)"
