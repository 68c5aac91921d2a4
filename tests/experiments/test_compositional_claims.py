"""The compositional card's seed aggregation and claim rules on hand-built multi-seed units (the tiny preset runs
one seed): mean and population std over seeds, B - A with the propagated std and the relative drop, Figure 1's
lowered share pooled over seeds, the verifier orderings and the Figure 3 separations."""

import math

import numpy as np
import pytest

from spherekit.experiments.compositional.claims import check
from spherekit.experiments.compositional.experiment import aggregate
from spherekit.experiments.compositional.report import report_body

SEEDS = (42, 43, 44)


def _retrieval(ndcg):
    return {"mean": {"nDCG@10": ndcg, "MRR@10": ndcg, "Acc@1": ndcg / 2, "Acc@10": ndcg}}


def _fig3(mean, auc, spatial_auc=None):
    out = {f: {"mean": mean, "auc": auc} for f in ("negation", "binding", "overall")}
    out["spatial"] = {"mean": mean, "auc": auc if spatial_auc is None else spatial_auc}
    return out


def _unit(cond, ndcgs, **per_seed):
    seeds = [{"seed": s, "retrieval": _retrieval(n), "train": {"steps": 5},
              **{k: v[i] for k, v in per_seed.items()}} for i, (s, n) in enumerate(zip(SEEDS, ndcgs))]
    return {"backbone": "bb", "condition": cond, "metrics": aggregate(seeds), "seeds": seeds}


def _figure1(shift):
    """Near-miss cosines per family; `shift` {family: offset per pair} moves them (Model B vs Model A)."""
    base = {"negation": [0.9, 0.9], "binding": [0.95, 0.95], "spatial": [0.92, 0.92],
            "positive": [0.8, 0.8], "negative": [0.1, 0.1]}
    return {k: [x + d for x, d in zip(v, shift.get(k, [0.0, 0.0]))] for k, v in base.items()}


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
        "frozen_F1": _unit("frozen_F1", [0.65] * 3, figure3=[_fig3(0.97, 0.55)] * 3),
        "frozen_F2": _unit("frozen_F2", [0.3] * 3, figure3=[_fig3(0.5, 0.52)] * 3),
        "frozen_F4": _unit("frozen_F4", [0.6] * 3, figure3=[_fig3(0.2, 0.6)] * 3),
        "e2e_F1": _unit("e2e_F1", [0.62] * 3, figure3=[_fig3(0.9, 0.58)] * 3),
        "e2e_F4": _unit("e2e_F4", [0.6, 0.7, 0.8], figure3=[_fig3(0.1, 0.8, 0.9)] * 3),
    }


def test_aggregate_is_the_mean_and_population_std_over_seeds(units):
    m = units["model_a"]["metrics"]
    assert m["nDCG@10"] == pytest.approx(0.6) and m["Acc@1"] == pytest.approx(0.3)
    assert m["nDCG@10_std"] == pytest.approx(np.std([0.5, 0.6, 0.7])) == pytest.approx(0.1 * math.sqrt(2 / 3))
    assert units["base"]["metrics"]["nDCG@10_std"] == pytest.approx(0.0, abs=1e-12)


def test_table1_claims_report_the_difference_with_propagated_std(units):
    claims = {c.split(" ")[0]: (m, h) for c, m, h in check(units)}
    sd = math.hypot(np.std([0.5, 0.6, 0.7]), np.std([0.4, 0.5, 0.6]))
    text, holds = claims["C1"]
    assert holds and f"A 0.600, B 0.500, B - A = -0.100 +- {sd:.3f} (relative drop 16.7%)" == text
    assert claims["C2"][1] and "A 0.300, B 0.250" in claims["C2"][0]
    body = report_body({"units": {f"bb/{c}": u for c, u in units.items()}})
    assert f"| B - A | -0.100 +- {sd:.3f} (16.7% drop) |" in body


def test_figure1_shares_are_pooled_over_seeds(units):
    claims = {c.split(" ")[0]: (m, h) for c, m, h in check(units)}
    text, holds = claims["C4"]
    assert "negation -0.100 (100% of pairs lowered)" in text and "binding +0.000 (0% of pairs lowered)" in text
    assert "spatial -0.033 (67% of pairs lowered)" in text and holds  # 4 of 6 pairs: more than half
    assert claims["C4b"][1] and claims["C3"][1]  # binding drops least; A's near-misses sit above the midpoint


def test_figure1_rule_needs_more_than_half_of_the_pairs(units):
    units["model_b"]["seeds"][0]["figure1"] = _figure1({"negation": [-0.1, -0.1]})
    units["model_b"]["seeds"][1]["figure1"] = _figure1({"negation": [-0.1, -0.1], "spatial": [-0.3, 0.0]})
    units["model_b"]["seeds"][2]["figure1"] = _figure1({"negation": [-0.1, -0.1], "spatial": [0.0, -0.005]})
    text, holds = {c.split(" ")[0]: (m, h) for c, m, h in check(units)}["C4"]
    assert "spatial -0.051 (17% of pairs lowered)" in text and holds is False  # lower mean, 1 of 6 pairs


def test_verifier_claims_follow_the_measured_orderings(units):
    claims = {c.split(" ")[0]: (m, h) for c, m, h in check(units)}
    assert claims["C5"] == ("F1 0.650, F4 0.600, F2 0.300", True)
    assert claims["C5b"][1] is True and claims["C6"] == ("F4 0.700, F1 0.620", True)
    assert claims["C7"] == ("frozen F1 0.970 vs Model B cosine 0.879", True)
    assert claims["C8"][1] is True and claims["C9"][1] is True
    units["e2e_F1"]["metrics"]["nDCG@10"] = 0.75  # F1 now beats F4's mean end to end
    units["frozen_F4"]["seeds"] = [{**s, "figure3": _fig3(0.2, 0.5)} for s in units["frozen_F4"]["seeds"]]
    units["e2e_F4"]["seeds"] = [{**s, "figure3": _fig3(0.1, 0.57, 0.57)} for s in units["e2e_F4"]["seeds"]]
    claims = {c.split(" ")[0]: (m, h) for c, m, h in check(units)}
    assert claims["C6"] == ("F1 0.750, F4 0.700", False)
    assert claims["C8"][1] is False and claims["C9"][1] is False  # e2e F1 (0.58) separates best


def test_claims_without_their_units_are_not_applicable():
    claims = check({})
    assert len(claims) == 11 and all(h is None for _, _, h in claims)
