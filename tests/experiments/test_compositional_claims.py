"""The compositional claims and tables on hand-built multi-seed units (the tiny preset runs one seed): the runner's
mean and sample std over seeds, B - A with the propagated spread and the relative drop, Figure 1's lowered share
pooled over seeds, the verifier orderings, end-to-end gains over the encoder's own stage 1 and the Figure 3
separations; every claim can fail. The noise rules: a paired bootstrap over the per-query values (a difference
inside the noise is inconclusive), over the near-miss pairs (Figure 1, Figure 3 ROC-AUCs), the resolution +- 1/N of
runs measured before per-query values were kept, and "a run that did not learn makes its claims inconclusive"."""

import math

import numpy as np
import pytest

from spherekit.evaluation.metrics import roc_auc
from spherekit.experiments.api.claims import Scope, evaluate
from spherekit.experiments.compositional.figures import report
from spherekit.experiments.compositional.paper import CLAIMS, PRINTED
from spherekit.experiments.compositional.readings import auc_of_counts
from spherekit.experiments.harness.runner import aggregate
from spherekit.experiments.api.units import unit_runs

SEEDS = (42, 43, 44)
QUERIES = 40
CONFIG = {"queries_per_set": 20, "verifier_batch_light": 16, "verifier_batch_heavy": 16}
LEARNED = {"steps": 5, "start_loss": 1.0, "final_loss": 0.5}


def _mean(ndcg):
    return {"nDCG@10": ndcg, "MRR@10": ndcg, "Acc@1": ndcg / 2, "Acc@10": ndcg}


def _run(seed, ndcg, stage1=None, ndcg_items=None, train=LEARNED, **extra):
    """One run: its means and per-query values (every query at the mean unless ndcg_items gives them)."""
    items = list(ndcg_items) if ndcg_items is not None else [ndcg] * QUERIES
    ndcg = float(np.mean(items))
    run = {"seed": seed, "metrics": _mean(ndcg), "train": dict(train),
           "per_item": {"nDCG@10": items, "MRR@10": items, "Acc@1": [x / 2 for x in items]},
           "retrieval": {"sets": {"one": {}, "two": {}}}, **extra}
    if stage1 is not None:
        run["metrics"]["stage-1/nDCG@10"] = stage1
        run["per_item"]["stage-1/nDCG@10"] = [stage1] * QUERIES
    return run


def _unit(cond, ndcgs, stage1=None, items=None, train=LEARNED, **per_seed):
    runs = [_run(s, n, stage1, items[i] if items else None, train, **{k: v[i] for k, v in per_seed.items()})
            for i, (s, n) in enumerate(zip(SEEDS, ndcgs))]
    return aggregate("bb", cond, runs)


def _auc(pos, near):
    return roc_auc(np.concatenate([pos, near]), np.r_[np.ones(len(pos)), np.zeros(len(near))])


def _fig3(near_level, sep, spatial_sep=None, n=20):
    """Figure 3 record with per-pair scores: near-misses around near_level, positives `sep` above them (a larger
    separation, a larger ROC-AUC); means and AUCs computed from the scores."""
    out, near_all, pos_all = {}, [], []
    for fam in ("negation", "binding", "spatial"):
        s = spatial_sep if fam == "spatial" and spatial_sep is not None else sep
        near = near_level + np.linspace(-0.05, 0.05, n)
        pos = near + s
        out[fam] = {"mean": float(near.mean()), "auc": _auc(pos, near), "n": n,
                    "scores": {"near_miss": near.tolist(), "positive": pos.tolist()}}
        near_all.append(near), pos_all.append(pos)
    near, pos = np.concatenate(near_all), np.concatenate(pos_all)
    out["overall"] = {"mean": float(near.mean()), "auc": _auc(pos, near), "n": near.size}
    return out


def _figure1(shift, copies=10):
    """Near-miss cosines per family (each of the two pairs `copies` times); `shift` {family: offset per pair} moves
    them (Model B vs Model A)."""
    base = {"negation": [0.9, 0.9], "binding": [0.95, 0.95], "spatial": [0.92, 0.92],
            "positive": [0.8, 0.8], "negative": [0.1, 0.1]}
    return {k: [x + d for x, d in zip(v, shift.get(k, [0.0, 0.0]))] * copies for k, v in base.items()}


@pytest.fixture()
def units():
    # Model B lowers negation on every pair of every seed, spatial on 4 of the 6 pairs, binding on none
    b_fig1 = [_figure1({"negation": [-0.1, -0.1], "spatial": [-0.05, 0.0]}),
              _figure1({"negation": [-0.1, -0.1], "spatial": [-0.05, -0.05]}),
              _figure1({"negation": [-0.1, -0.1], "spatial": [0.0, -0.05]})]
    return {
        "base": _unit("base", [0.7, 0.7, 0.7], figure1=[_figure1({})] * 3),
        "model_a": _unit("model_a", [0.5, 0.6, 0.7], figure1=[_figure1({})] * 3),
        "model_b": _unit("model_b", [0.4, 0.5, 0.6], figure1=b_fig1),
        "frozen_F1": _unit("frozen_F1", [0.65] * 3, stage1=0.7, figure3=[_fig3(0.97, 0.01)] * 3, train={"steps": 0}),
        "frozen_F2": _unit("frozen_F2", [0.3] * 3, stage1=0.7, figure3=[_fig3(0.5, 0.0)] * 3, train={"steps": 0}),
        "frozen_F4": _unit("frozen_F4", [0.6] * 3, stage1=0.7, figure3=[_fig3(0.2, 0.05)] * 3),
        "e2e_F1": _unit("e2e_F1", [0.62] * 3, stage1=0.61, figure3=[_fig3(0.9, 0.02)] * 3),
        "e2e_F4": _unit("e2e_F4", [0.6, 0.7, 0.8], stage1=0.6, figure3=[_fig3(0.1, 0.09, 0.2)] * 3),
    }


def _drop(unit, key):
    """Remove `key` from every run of the unit (and from what its runs share)."""
    unit.get("shared", {}).pop(key, None)
    for run in unit["runs"]:
        run.pop(key, None)


def check(units, config=CONFIG) -> dict[str, dict]:
    return {r["id"]: r for r in evaluate(CLAIMS, [Scope("bb", units, config)])}


def test_units_are_the_mean_and_sample_std_over_seeds(units):
    a = units["model_a"]
    assert a["metrics"]["nDCG@10"] == pytest.approx(0.6) and a["metrics"]["Acc@1"] == pytest.approx(0.3)
    assert a["spread"]["std"]["nDCG@10"] == pytest.approx(np.std([0.5, 0.6, 0.7], ddof=1)) == pytest.approx(0.1)
    assert units["base"]["spread"]["std"]["nDCG@10"] == pytest.approx(0.0, abs=1e-12)
    assert not any(k.endswith("_std") for u in units.values() for k in u["metrics"])


def test_table1_claims_report_the_difference_with_propagated_spread(units):
    claims = check(units)
    sd = math.hypot(np.std([0.5, 0.6, 0.7], ddof=1), np.std([0.4, 0.5, 0.6], ddof=1))
    c1 = claims["C1"]
    assert c1["verdict"] == "holds"
    assert c1["measured"] == f"A 0.600, B 0.500, B - A = -0.100 ± {sd:.3f} (relative drop 16.7%)"
    assert (c1["value"], c1["op"], c1["margin"]) == (pytest.approx(-0.1), "<", 0.0)
    assert c1["interval"] == pytest.approx([-0.1, -0.1]) and "paired bootstrap over 40 items" in c1["uncertainty"]
    assert claims["C2"]["verdict"] == "holds" and "A 0.300, B 0.250" in claims["C2"]["measured"]
    body = report({"config": {}, "units": {f"bb/{c}": u for c, u in units.items()}})
    assert f"| B - A | -0.100 ± {sd:.3f} (16.7% drop) |" in body


def test_table1_claims_fail_when_model_b_is_not_lower(units):
    units["model_b"] = _unit("model_b", [0.6, 0.7, 0.8], figure1=[r["figure1"] for r in units["model_b"]["runs"]])
    claims = check(units)
    assert claims["C1"]["verdict"] == claims["C2"]["verdict"] == "does not hold"
    assert "B - A = +0.100" in claims["C1"]["measured"]


def test_a_difference_inside_the_query_noise_is_inconclusive(units):
    # per query: B is 0.2 above A on half of the queries and 0.21 below on the other half (mean -0.005)
    up_down = [[0.6 + (0.2 if q % 2 else -0.21) for q in range(QUERIES)]] * 3
    units["model_b"] = _unit("model_b", [0.0] * 3, items=up_down,
                             figure1=[r["figure1"] for r in units["model_b"]["runs"]])
    c1 = check(units)["C1"]
    assert c1["value"] == pytest.approx(-0.005) and c1["verdict"] == "inconclusive"
    lo, hi = c1["interval"]
    assert lo < 0 < hi


def test_one_seed_has_no_spread_in_the_text(units):
    units = {c: aggregate("bb", c, u["runs"][:1]) for c, u in units.items()}
    assert check(units)["C1"]["measured"] == "A 0.500, B 0.400, B - A = -0.100 (relative drop 20.0%)"


def test_runs_without_per_query_values_are_inconclusive_with_their_point_values(units):
    """Runs measured before per-query values were kept: no interval, so no verdict is decided on them (a one-query
    'resolution' is not the noise); the point value is kept in the record."""
    for unit in units.values():
        _drop(unit, "per_item")
    units["frozen_F2"] = aggregate("bb", "frozen_F2", [{**r, "metrics": _mean(0.7)} for r in
                                                       units["frozen_F2"]["runs"]])
    claims = check(units)
    for cid, point in (("C1", "holds"), ("C5", "does not hold")):
        assert claims[cid]["interval"] is None and claims[cid]["point"] == point, cid
        assert claims[cid]["verdict"] == "inconclusive" and "no per-item values" in claims[cid]["uncertainty"], cid


def test_figure1_shares_are_pooled_over_seeds(units):
    claims = check(units)
    text = claims["C4"]["measured"]
    assert "negation -0.100 (100% of pairs lowered)" in text and "binding +0.000 (0% of pairs lowered)" in text
    assert "spatial -0.033 (67% of pairs lowered)" in text and claims["C4"]["verdict"] == "holds"  # 4 of 6 pairs
    assert "bootstrap over 60 held-out near-miss pairs" in claims["C4"]["uncertainty"]
    assert claims["C4"]["interval"][1] < 0
    assert claims["C4b"]["verdict"] == claims["C3"]["verdict"] == "holds"  # binding drops least; A above the midpoint
    assert claims["C3"]["sanity"] and claims["C7"]["sanity"] and not claims["C4"]["sanity"]


def test_figure1_rule_needs_more_than_half_of_the_pairs(units):
    runs = units["model_b"]["runs"]
    runs[0]["figure1"] = _figure1({"negation": [-0.1, -0.1]})
    runs[1]["figure1"] = _figure1({"negation": [-0.1, -0.1], "spatial": [-0.3, 0.0]})
    runs[2]["figure1"] = _figure1({"negation": [-0.1, -0.1], "spatial": [0.0, -0.005]})
    c4 = check(units)["C4"]
    assert "spatial -0.051 (17% of pairs lowered)" in c4["measured"] and c4["verdict"] == "does not hold"


def test_figure1_claims_can_fail(units):
    for run in units["model_a"]["runs"]:
        run["figure1"] = _figure1({"binding": [-0.6, -0.6]})  # binding at 0.35, below the midpoint 0.45
    for run in units["model_b"]["runs"]:
        run["figure1"] = _figure1({"binding": [-0.8, -0.8]})  # B - A on binding: -0.2, the largest drop
    claims = check(units)
    assert claims["C3"]["verdict"] == "does not hold" and claims["C3"]["value"] == pytest.approx(0.35 - 0.45)
    assert claims["C4b"]["verdict"] == "does not hold"


def test_verifier_claims_follow_the_measured_orderings(units):
    claims = check(units)
    assert (claims["C5"]["measured"], claims["C5"]["verdict"]) == ("F1 0.650, F4 0.600, F2 0.300", "holds")
    assert claims["C5b"]["verdict"] == "holds"
    assert claims["C6"]["measured"] == ("gain over its own stage 1: F4 +0.100 (0.700 vs 0.600), F1 +0.010 (0.620 vs "
                                        "0.610); the untuned stage 1 (base) 0.700")
    assert claims["C6"]["verdict"] == "holds" and claims["C6"]["value"] == pytest.approx(0.09)
    assert (claims["C7"]["measured"], claims["C7"]["verdict"]) == ("frozen F1 0.970 vs Model B cosine 0.879", "holds")
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "holds"
    assert "bootstrap over 60 held-out pairs" in claims["C8"]["uncertainty"]
    assert "bootstrap over 20 held-out spatial pairs" in claims["C9"]["uncertainty"]
    units["e2e_F1"] = _unit("e2e_F1", [0.75] * 3, stage1=0.61, figure3=[_fig3(0.9, 0.02)] * 3)  # gains 0.14 > 0.1
    units["frozen_F2"] = _unit("frozen_F2", [0.66] * 3, stage1=0.7, figure3=[_fig3(0.5, 0.0)] * 3,
                               train={"steps": 0})  # F2 now the strongest frozen verifier
    for run in units["frozen_F1"]["runs"]:
        run["figure3"] = _fig3(0.8, 0.01)  # below Model B's pooled cosine
    for run in units["frozen_F4"]["runs"]:
        run["figure3"] = _fig3(0.2, 0.0)
    for run in units["e2e_F4"]["runs"]:
        run["figure3"] = _fig3(0.1, 0.0, 0.0)
    claims = check(units)
    assert claims["C6"]["verdict"] == "does not hold" and "F1 +0.140 (0.750 vs 0.610)" in claims["C6"]["measured"]
    assert claims["C5"]["verdict"] == claims["C5b"]["verdict"] == "does not hold"
    assert claims["C7"]["verdict"] == "does not hold"
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "does not hold"  # e2e F1 separates best


def test_the_largest_reranked_score_is_no_gain_below_its_own_stage1(units):
    """C6 compares each end-to-end verifier with its own encoder's stage 1: F4 re-ranks highest (0.70 vs 0.62) but
    its stage 1 alone scores 0.75."""
    units["e2e_F4"] = _unit("e2e_F4", [0.6, 0.7, 0.8], stage1=0.75, figure3=[_fig3(0.1, 0.09, 0.2)] * 3)
    c6 = check(units)["C6"]
    assert c6["verdict"] == "does not hold" and "F4 -0.050 (0.700 vs 0.750)" in c6["measured"]


def test_runs_without_per_pair_scores_have_no_interval(units):
    for cond in ("frozen_F1", "frozen_F2", "frozen_F4", "e2e_F1", "e2e_F4"):
        for run, full in zip(units[cond]["runs"], unit_runs(units[cond])):
            run["figure3"] = {fam: {k: v for k, v in rec.items() if k != "scores"} for fam, rec in
                              full["figure3"].items()}
    c8 = check(units)["C8"]
    assert c8["interval"] is None and "no per-pair verifier scores" in c8["uncertainty"] and c8["point"] == "holds"
    assert c8["verdict"] == "inconclusive"


def test_a_run_that_did_not_learn_makes_its_claims_inconclusive(units):
    flat = {"steps": 5, "start_loss": 1.0, "final_loss": 0.97}  # fell by 3% < 5% (spherekit.experiments.api.learning)
    units["model_b"] = _unit("model_b", [0.4, 0.5, 0.6], train=flat,
                             figure1=[r["figure1"] for r in units["model_b"]["runs"]])
    units["e2e_F1"] = _unit("e2e_F1", [0.62] * 3, stage1=0.61, train=flat, figure3=[_fig3(0.9, 0.02)] * 3)
    claims = check(units)
    for cid in ("C1", "C2", "C4", "C4b", "C6", "C8", "C9"):
        assert claims[cid]["verdict"] == "inconclusive", cid
    assert "did not learn: model_b seed 42 (loss 1.000 (before the first update) -> 0.970)" in claims["C1"]["measured"]
    assert claims["C5"]["verdict"] == "holds"  # reads frozen verifiers only
    assert claims["C1"]["interval"] is not None  # the measurement is kept


def test_older_training_records_use_their_first_logged_or_chance_loss(units):
    curve = {"steps": 5, "curve": {"step": [10, 20], "loss": [0.5, 0.48]}}  # first logged 0.5 -> 0.48: not learned
    units["model_a"] = _unit("model_a", [0.5, 0.6, 0.7], train=curve, figure1=[_figure1({})] * 3)
    units["frozen_F4"] = _unit("frozen_F4", [0.6] * 3, train={"steps": 5, "final_loss": 2.75},
                               figure3=[_fig3(0.2, 0.05)] * 3)  # chance ln(17) = 2.83: 2.75 is not 5% below
    claims = check(units)
    assert "model_a seed 42 (loss 0.500 (first logged, step 10) -> 0.480)" in claims["C1"]["measured"]
    assert "frozen_F4 seed 42 (loss 2.833 (chance level ln(B + 1)) -> 2.750)" in claims["C5"]["measured"]
    assert claims["C1"]["verdict"] == claims["C5"]["verdict"] == "inconclusive"


def test_claims_without_their_units_are_not_run():
    claims = check({})
    assert len(claims) == 11 and all(r["verdict"] == "not run" for r in claims.values())
    assert claims["C1"]["measured"] == "needs model_a" and PRINTED == []


def test_resampled_roc_auc_is_the_roc_auc_of_the_repeated_pairs():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 30))
        near = rng.integers(0, 6, n) / 5.0  # ties on purpose
        pos = rng.integers(0, 6, n) / 5.0
        at = auc_of_counts(np.stack([pos, near]), np.stack([near, pos]))  # two rows: two seeds
        assert at(np.ones(n, dtype=int)) == pytest.approx([_auc(pos, near), _auc(near, pos)])
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        assert at(counts)[0] == pytest.approx(_auc(np.repeat(pos, counts), np.repeat(near, counts)))
