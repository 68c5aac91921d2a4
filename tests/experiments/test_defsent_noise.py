"""The DefSent+ claims' noise: each metric as a function of the two-level bootstrap's item weights (Spearman per
stratum of the weighted resample, means), seeds resampled with the items, each verdict reachable; the ceiling a
training's loss must reach, applied by the core's gate."""

import math

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from spherekit.experiments.api.claims import NO_ITEMS, Claim, Scope, evaluate, verdict
from spherekit.experiments.api.uncertainty import Draw
from spherekit.experiments.defsent import noise

KEY = "wordnet-sim/avg/Spearman (best)"
MEAN_KEY = "probe/avg/Acc (best)"


def _spearman_unit(runs_values, gold, strata, metric):
    meta = noise.item_meta("spearman", strata, gold)
    runs = [{"seed": i, "metrics": {KEY: metric}, "per_item": {KEY: list(v)}, noise.STRATA: {KEY: meta}}
            for i, v in enumerate(runs_values)]
    return {"metrics": {KEY: metric}, "runs": runs}


def test_statistic_is_the_metric_on_the_full_sample_and_on_a_repeated_resample():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 5, 60).astype(float)
    values = np.round(gold + rng.normal(0, 2, 60), 1)  # ties in both
    meta = noise.item_meta("spearman", [["noun", 40], ["verb", 20]], gold)
    expect = 50 * (spearmanr(values[:40], gold[:40]).statistic + spearmanr(values[40:], gold[40:]).statistic)
    assert noise.statistic(values, meta, np.ones((1, 60)))[0] == pytest.approx(expect, abs=1e-9)
    weights = rng.multinomial(60, np.full(60, 1 / 60), size=4).astype(float)
    for w, got in zip(weights, noise.statistic(values, meta, weights)):
        idx = np.repeat(np.arange(60), w.astype(int))  # the resample written out: item i w_i times
        a, b = idx[idx < 40], idx[idx >= 40]
        assert got == pytest.approx(50 * (spearmanr(values[a], gold[a]).statistic
                                          + spearmanr(values[b], gold[b]).statistic), abs=1e-9)
    assert noise.weighted_ranks(values, np.ones((1, 60)))[0] == pytest.approx(rankdata(values))
    mean = noise.item_meta("mean", [["supersense", 2], ["pos", 4]])
    x = np.array([0, 100, 100, 100, 0, 0.0])
    assert noise.statistic(x, mean, np.ones((1, 6)))[0] == pytest.approx((50 + 50) / 2)
    assert noise.statistic(x, mean, [[0, 2, 1, 1, 1, 1]])[0] == pytest.approx((100 + 50) / 2)
    assert noise.statistic(x, mean, [[0, 0, 1, 1, 2, 2]])[0] == pytest.approx(100 / 3)  # a stratum left out


def test_a_units_value_averages_its_resampled_seeds():
    meta = noise.item_meta("mean", [["queries", 3]])
    series = np.array([[0.0, 30, 60], [90, 90, 90]])  # seed 0 mean 30, seed 1 mean 90
    draw = Draw(np.ones((3, 3)), {"u": np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]])})
    assert noise.unit_value(draw, "u", series, meta) == pytest.approx([60, 30, 90])


def test_two_level_comparison_gives_each_verdict():
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
    assert verdict(up) == "holds" and up.interval[0] > 0 and up.seed_std is not None
    assert "two-level bootstrap over seeds (b 3) and 300 items (noun/verb) resampled together; 1 run of a" \
        in up.uncertainty
    assert verdict(noise.compare(s, "b", "a", KEY, ">", 0.0, text="a vs b")) == "does not hold"
    tie = noise.compare(s, "b", "c", KEY, ">", 0.0, text="c vs b")
    assert verdict(tie) == "inconclusive" and tie.interval[0] < 0 < tie.interval[1]
    assert verdict(noise.compare(s, "b", "c", KEY, "within", 1.0, text="c vs b")) == "holds"
    shifted = noise.compare(s, "b", "c", KEY, "within", 1.0, text="", shift=5.0)  # (c - b) - 5: about -5
    assert verdict(shifted) == "does not hold" and shifted.interval[1] < -4
    units["c"]["runs"][0][noise.STRATA][KEY] = noise.item_meta("spearman", [["noun", 300]], gold)
    with pytest.raises(ValueError, match="different evaluation items"):
        noise.compare(s, "b", "c", KEY, ">", 0.0, text="")


def test_runs_without_items_compare_their_means_alone_and_decide_nothing():
    s = Scope("m", {"a": {"metrics": {MEAN_KEY: 50.0}, "runs": [{"seed": 0, "metrics": {MEAN_KEY: 50.0}}]},
                    "b": {"metrics": {MEAN_KEY: 52.0}, "runs": [{"seed": 0, "metrics": {MEAN_KEY: 52.0}}]}})
    m = noise.compare(s, "a", "b", MEAN_KEY, ">", 0.0, text="")
    assert m.interval is None and m.uncertainty == NO_ITEMS and m.holds and verdict(m) == "inconclusive"


def test_the_ceiling_is_half_the_uniform_softmax_loss_and_the_core_gate_applies_it():
    e = 220_034
    assert noise.ceiling(e) == pytest.approx(0.5 * math.log(e))  # 6.15
    with pytest.raises(ValueError, match=">= 2 classes"):
        noise.ceiling(1)
    fell = {"curve": {"loss": [12.3, 11.0, 10.4, 10.3]}, "ceiling": noise.ceiling(e)}  # fell, but stayed above it
    units = {"base": {"metrics": {MEAN_KEY: 50.0}, "runs": [{"seed": None, "metrics": {MEAN_KEY: 50.0}}]},
             "1st-a": {"metrics": {MEAN_KEY: 55.0}, "runs": [{"seed": 0, "metrics": {MEAN_KEY: 55.0},
                                                               "training": {"encoder": fell}}]}}
    claim = Claim("X", "x", "s", "r", lambda s: noise.compare(s, "base", "1st-a", MEAN_KEY, ">", 0.0, text="55 vs 50"),
                  rests_on=("base", "1st-a"))
    got = evaluate([claim], [Scope("m", units)])[0]
    assert got["point"] is None and "did not learn: 1st-a seed 0 encoder (12.300 -> 10.300" in got["measured"]
    assert "above 6.151" in got["measured"]
    fell["curve"]["loss"] = [12.3, 8.0, 6.2, 6.0]
    assert evaluate([claim], [Scope("m", units)])[0]["point"] == "holds"


def test_item_meta_validation():
    with pytest.raises(ValueError, match="needs gold"):
        noise.item_meta("spearman", [["noun", 2]])
    with pytest.raises(ValueError, match="gold has 1 values for 2 items"):
        noise.item_meta("spearman", [["noun", 2]], [1.0])
    with pytest.raises(ValueError, match="kind must be one of"):
        noise.item_meta("median", [["x", 2]])
