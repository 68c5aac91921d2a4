"""The experiment core's noise model (spherekit.experiments.api.uncertainty.two_level, count_weighted_auc and the
1-seed borrowing of claims.evaluate), checked against direct computations: a two-level bootstrap resamples seeds and
items together, its interval widens with the seeds' spread, chunking does not change it, a 1-seed unit says that
training noise is unmeasured."""

import numpy as np
import pytest

from spherekit.evaluation.metrics import roc_auc
from spherekit.experiments.api.claims import Claim, Measured, Scope, borrowed_noise, difference, evaluate
from spherekit.experiments.api.uncertainty import Draw, count_weighted_auc, two_level


def paired_bootstrap(a, b, n_resamples=2000, seed=0):
    """The items-only oracle: the percentile interval of mean(b - a) over items resampled with replacement."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(n_resamples, diff.size))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi), "oracle"


def _series(rng, seeds, items, shift=0.0, seed_sd=0.0):
    return rng.normal(size=(1, items)) * 0.1 + shift + rng.normal(size=(seeds, 1)) * seed_sd + \
        rng.normal(size=(seeds, items)) * 0.05


def test_draw_means_are_weighted_seed_means():
    x = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]])
    d = Draw(np.array([[1.0, 1.0, 1.0], [3.0, 0.0, 0.0]]), {"a": np.array([[1.0, 1.0], [2.0, 0.0]])})
    assert np.allclose(d.seed_mean("a", x), [[2.0, 3.0, 4.0], [1.0, 2.0, 3.0]])
    assert np.allclose(d.mean("a", x), [3.0, 1.0])
    with pytest.raises(ValueError, match="series must be"):
        d.mean("a", x[:1])
    assert np.allclose(d.seed_average("a", [[0.5, 0.7], [0.5, 0.7]]), [0.6, 0.5])
    with pytest.raises(ValueError, match="per_seed must be"):
        d.seed_average("a", [0.5, 0.7])


def test_two_level_point_value_and_items_only_case_match_the_paired_bootstrap():
    rng = np.random.default_rng(0)
    a, b = _series(rng, 1, 400), _series(rng, 1, 400, shift=0.05)
    noise = two_level(lambda d: d.mean("b", b) - d.mean("a", a), 400, {"a": 1, "b": 1})
    assert noise.value == pytest.approx(float((b - a).mean()))
    lo, hi, _ = paired_bootstrap(a[0], b[0])
    assert noise.interval == pytest.approx((lo, hi), abs=0.004)  # the same estimator, another random stream
    assert noise.seed_std is None and not noise.seeds_measured
    assert "training noise unmeasured" in noise.uncertainty and "400 items" in noise.uncertainty
    frozen = two_level(lambda d: d.mean("b", b) - d.mean("a", a), 400, {"a": 1, "b": 1}, frozen=["a", "b"],
                       items="queries")
    assert frozen.uncertainty == "bootstrap over 400 queries, 95% interval" and frozen.interval == noise.interval


def test_seeds_widen_the_interval_and_give_a_seed_std():
    rng = np.random.default_rng(1)
    base = _series(rng, 3, 300)
    calm = base + np.array([[0.0], [0.001], [-0.001]])
    spread = base + np.array([[0.0], [0.1], [-0.1]])
    other = _series(rng, 3, 300, shift=0.05)
    n = {"a": 3, "b": 3}
    narrow = two_level(lambda d: d.mean("b", other) - d.mean("a", calm), 300, n)
    wide = two_level(lambda d: d.mean("b", other) - d.mean("a", spread), 300, n)
    assert (wide.interval[1] - wide.interval[0]) > 2 * (narrow.interval[1] - narrow.interval[0])
    assert wide.seeds_measured and "two-level bootstrap over seeds (a 3, b 3) and 300 items" in wide.uncertainty
    per_seed = (other - spread).mean(axis=1)
    assert wide.seed_std == pytest.approx(float(np.std(per_seed, ddof=1)))


def test_chunking_bounds_memory_without_changing_the_estimator():
    rng = np.random.default_rng(2)
    a, b = _series(rng, 2, 500), _series(rng, 2, 500, shift=0.02)
    stat = lambda d: d.mean("b", b) - d.mean("a", a)  # noqa: E731
    big = two_level(stat, 500, {"a": 2, "b": 2}, chunk_bytes=1 << 30)
    small = two_level(stat, 500, {"a": 2, "b": 2}, chunk_bytes=8 * 500 * 3 * 7)  # 7 resamples per chunk
    assert big.value == small.value
    assert small.interval == pytest.approx(big.interval, abs=0.003)


def test_two_level_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least 2 items"):
        two_level(lambda d: d.items.sum(1), 1, {"a": 1})
    with pytest.raises(ValueError, match="n_seeds"):
        two_level(lambda d: d.items.sum(1), 5, {})
    with pytest.raises(ValueError, match="n_resamples"):
        two_level(lambda d: d.items.sum(1), 5, {"a": 1}, n_resamples=10)


def test_count_weighted_auc_is_the_roc_auc_of_the_repeated_items():
    rng = np.random.default_rng(3)
    pos, neg = rng.normal(1.0, 1.0, 50), np.round(rng.normal(0.0, 1.0, 50), 1)  # ties on the negatives
    at = count_weighted_auc(pos, neg)
    labels = np.r_[np.ones(50), np.zeros(50)]
    assert at(np.ones(50))[0] == pytest.approx(roc_auc(np.r_[pos, neg], labels))
    w = rng.integers(0, 3, 50).astype(float)
    keep = np.repeat(np.arange(50), w.astype(int))
    repeated = roc_auc(np.r_[pos[keep], neg[keep]], np.r_[np.ones(keep.size), np.zeros(keep.size)])
    assert at(w[None])[0] == pytest.approx(repeated)
    # negatives owned by items (several per item, some items without one)
    owner = np.array([0, 0, 1, 3])
    at2 = count_weighted_auc([0.5, 0.2, 0.9, 0.1], [0.3, 0.6, 0.1, 0.0], negative_item=owner, n_items=4)
    assert at2(np.ones(4))[0] == pytest.approx(np.mean([[(n < p) + (n == p) / 2 for n in (0.3, 0.6, 0.1, 0.0)]
                                                       for p in (0.5, 0.2, 0.9, 0.1)]))  # p = n = 0.1: a tie
    assert np.isnan(at2(np.array([[0.0, 0.0, 1.0, 0.0]]))[0])  # no negative drawn
    with pytest.raises(ValueError, match="columns"):
        at2(np.ones((1, 3)))


def _unit(rows, value):
    return {"metrics": {"m": value}, "runs": [{"seed": i, "per_item": {"m": list(r)}} for i, r in enumerate(rows)]}


def test_difference_carries_seeds_and_items():
    rng = np.random.default_rng(4)
    a, b = _series(rng, 3, 200, seed_sd=0.05), _series(rng, 3, 200, shift=0.03, seed_sd=0.05)
    scope = Scope("x", {"A": _unit(a, a.mean()), "B": _unit(b, b.mean())})
    m = difference(scope, "A", "B", "m", ">", 0.0)
    assert m.value == pytest.approx(b.mean() - a.mean()) and m.seed_std is not None
    assert "two-level bootstrap" in m.uncertainty
    items_only = paired_bootstrap(a.mean(0), b.mean(0))
    assert (m.interval[1] - m.interval[0]) > (items_only[1] - items_only[0])


def test_a_one_seed_card_borrows_the_training_noise_of_the_three_seed_preset():
    m = Measured.compare(0.03, ">", 0.0, "B1 - B0", interval=(0.01, 0.05), uncertainty="items")
    near = borrowed_noise(m, 0.02, "the cpu-small preset")
    assert near.holds is None and "seed std 0.02 on the cpu-small preset" in near.text
    assert borrowed_noise(m, 0.01, "x") is m  # 0.03 clears the margin by more than 2 x 0.01
    assert borrowed_noise(m, None, "x") is m
    own = Measured.compare(0.03, ">", 0.0, "t", interval=(0.01, 0.05), seed_std=0.05)
    assert borrowed_noise(own, 0.02, "x") is own  # it measured its own training noise
    within = Measured.compare(0.01, "within", 0.02, "t", interval=(0.0, 0.015))
    assert borrowed_noise(within, 0.01, "x").holds is None and borrowed_noise(within, 0.001, "x") is within
    outside = Measured.compare(-0.13, "within", 0.02, "t", interval=(-0.15, -0.11))  # far outside its margin
    assert borrowed_noise(outside, 0.016, "x") is outside
    assert borrowed_noise(Measured.compare(0.03, "within", 0.02, "t"), 0.01, "x").holds is None  # just outside
    claims = [Claim("C1", "s", "src", "r", lambda s: m)]
    scope = Scope("b", {})
    assert evaluate(claims, [scope])[0]["verdict"] == "holds"
    records = evaluate(claims, [scope], seed_noise={("C1", "other"): 0.02}, noise_source="the cpu-small preset")
    assert records[0]["verdict"] == "inconclusive"  # an id measured on one scope only lends to every scope
