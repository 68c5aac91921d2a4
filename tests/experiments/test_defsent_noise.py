"""The DefSent+ claims' noise: the stratified paired bootstrap recomputes each metric as the metric is computed
(Spearman per stratum, means), averages seeds, and can give each verdict; the "learned" rule on the loss curve."""

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from spherekit.experiments.api.claims import NO_ITEMS, Scope, verdict
from spherekit.experiments.defsent import noise

KEY = "wordnet-sim/avg/Spearman (best)"
MEAN_KEY = "probe/avg/Acc (best)"


def _spearman_unit(runs_values, gold, strata, metric):
    meta = noise.item_meta("spearman", strata, gold)
    runs = [{"seed": i, "metrics": {KEY: metric}, "per_item": {KEY: list(v)}, "items": {KEY: meta}}
            for i, v in enumerate(runs_values)]
    return {"metrics": {KEY: metric}, "runs": runs}


def test_statistic_is_the_metric_on_the_full_sample():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 5, 60).astype(float)
    values = gold + rng.normal(0, 2, 60)
    meta = noise.item_meta("spearman", [["noun", 40], ["verb", 20]], gold)
    full = [np.arange(40)[None], 40 + np.arange(20)[None]]
    expect = 50 * (spearmanr(values[:40], gold[:40]).statistic + spearmanr(values[40:], gold[40:]).statistic)
    assert noise.statistic(values, meta, full)[0] == pytest.approx(expect, abs=1e-9)
    mean = noise.item_meta("mean", [["supersense", 2], ["pos", 4]])
    assert noise.statistic(np.array([0, 100, 100, 100, 0, 0.0]), mean,
                           [np.arange(2)[None], 2 + np.arange(4)[None]])[0] == pytest.approx((50 + 50) / 2)


def test_paired_bootstrap_gives_each_verdict():
    rng = np.random.default_rng(1)
    gold = list(rng.integers(0, 5, 300).astype(float))
    strata = [["noun", 150], ["verb", 150]]
    good = [np.asarray(gold) + rng.normal(0, 1, 300) for _ in range(3)]       # three seeds
    bad = [np.asarray(gold) + rng.normal(0, 4, 300)]
    same = [g + rng.normal(0, 1e-3, 300) for g in good]
    units = {"a": _spearman_unit(bad, gold, strata, 40.0), "b": _spearman_unit(good, gold, strata, 80.0),
             "c": _spearman_unit(same, gold, strata, 80.0)}
    s = Scope("m", units)
    up = noise.compare(s, "a", "b", KEY, ">", 0.0, text="b vs a")
    assert verdict(up) == "holds" and up.interval[0] > 0
    assert "paired bootstrap over 300 items (strata noun/verb; 1 vs 3 seed(s) averaged)" in up.uncertainty
    assert verdict(noise.compare(s, "b", "a", KEY, ">", 0.0, text="a vs b")) == "does not hold"
    tie = noise.compare(s, "b", "c", KEY, ">", 0.0, text="c vs b")
    assert verdict(tie) == "inconclusive" and tie.interval[0] < 0 < tie.interval[1]
    within = noise.compare(s, "b", "c", KEY, "within", 1.0, text="c vs b")
    assert verdict(within) == "holds"
    units["c"]["runs"][0]["items"][KEY] = noise.item_meta("spearman", [["noun", 300]], gold)
    with pytest.raises(ValueError, match="different evaluation items"):
        noise.compare(s, "b", "c", KEY, ">", 0.0, text="")


def test_runs_without_items_compare_their_means_alone_and_decide_nothing():
    s = Scope("m", {"a": {"metrics": {MEAN_KEY: 50.0}, "runs": [{"seed": 0, "metrics": {MEAN_KEY: 50.0}}]},
                    "b": {"metrics": {MEAN_KEY: 52.0}, "runs": [{"seed": 0, "metrics": {MEAN_KEY: 52.0}}]}})
    m = noise.compare(s, "a", "b", MEAN_KEY, ">", 0.0, text="")
    assert m.interval is None and m.uncertainty == NO_ITEMS and m.holds and verdict(m) == "inconclusive"


def test_learned_rule_and_gate():
    e = 220_034
    stuck = noise.objective_record([12.3, 12.0, 11.0, 10.5, 10.4, 10.3, 10.3, 10.2], e)
    assert stuck["ln_E"] == pytest.approx(math.log(e)) and stuck["final_loss"] == pytest.approx(10.25)
    assert not stuck["learned"]
    learned = noise.objective_record([12.3, 9.0, 7.0, 6.0], e, pooler="mlm-dense")
    assert learned["learned"] and learned["pooler"] == "mlm-dense"  # 6.0 <= 0.5 x 12.30
    flat = noise.objective_record([2.0, 2.1, 2.05, 2.1], 10_884)  # low from the start, training did not move it
    assert flat["final_loss"] <= 0.5 * flat["ln_E"] and not flat["learned"]
    with pytest.raises(ValueError, match="need a loss curve"):
        noise.objective_record([], e)
    old = {"seed": 0, "training": {"curve": {"loss": [9.3, 8.0, 7.0, 6.9]}}, "bank": {"entries": 10_884}}
    assert noise.run_objective(old)["final_loss"] == 6.9 and not noise.run_objective(old)["learned"]
    assert noise.run_objective({"seed": None}) is None  # base: nothing trained
    units = {"base": {"metrics": {MEAN_KEY: 50.0}, "runs": [{"seed": None, "metrics": {MEAN_KEY: 50.0}}]},
             "1st-c": {"metrics": {MEAN_KEY: 55.0}, "runs": [{**old, "metrics": {MEAN_KEY: 55.0}}]}}
    s = Scope("m", units)
    m = noise.gated(noise.compare(s, "base", "1st-c", MEAN_KEY, ">", 0.0, text="55 vs 50"), s, "1st-c")
    assert verdict(m) == "inconclusive" and "objective did not learn: 1st-c (loss 9.30 -> 6.90 vs ln E 9.30" in m.text
    units["1st-c"]["runs"][0]["training"] = {"curve": {"loss": [9.3, 4.0, 3.0, 2.9]}}  # the rule reads the curve
    learned = noise.gated(noise.compare(s, "base", "1st-c", MEAN_KEY, ">", 0.0, text=""), s, "1st-c")
    assert learned.holds and "did not learn" not in learned.text  # not gated: only the missing items undecide it


def test_item_meta_validation():
    with pytest.raises(ValueError, match="needs gold"):
        noise.item_meta("spearman", [["noun", 2]])
    with pytest.raises(ValueError, match="gold has 1 values for 2 items"):
        noise.item_meta("spearman", [["noun", 2]], [1.0])
    with pytest.raises(ValueError, match="kind must be one of"):
        noise.item_meta("median", [["x", 2]])
