"""The compositional claims and tables on hand-built multi-seed units (the tiny preset runs one seed): the runner's
mean and sample std over seeds, B - A with the propagated spread and the relative drop, Figure 1's lowered share
pooled over seeds, the verifier orderings and the Figure 3 separations; every claim can fail."""

import math

import numpy as np
import pytest

from spherekit.experiments.claims import Scope, evaluate
from spherekit.experiments.compositional.figures import report
from spherekit.experiments.compositional.paper import CLAIMS, PRINTED
from spherekit.experiments.runner import aggregate

SEEDS = (42, 43, 44)


def _mean(ndcg):
    return {"nDCG@10": ndcg, "MRR@10": ndcg, "Acc@1": ndcg / 2, "Acc@10": ndcg}


def _fig3(mean, auc, spatial_auc=None):
    out = {f: {"mean": mean, "auc": auc} for f in ("negation", "binding", "overall")}
    out["spatial"] = {"mean": mean, "auc": auc if spatial_auc is None else spatial_auc}
    return out


def _unit(cond, ndcgs, **per_seed):
    runs = [{"seed": s, "metrics": _mean(n), "train": {"steps": 5}, **{k: v[i] for k, v in per_seed.items()}}
            for i, (s, n) in enumerate(zip(SEEDS, ndcgs))]
    return aggregate("bb", cond, runs)


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


def check(units) -> dict[str, dict]:
    return {r["id"]: r for r in evaluate(CLAIMS, [Scope("bb", units)])}


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
    assert claims["C2"]["verdict"] == "holds" and "A 0.300, B 0.250" in claims["C2"]["measured"]
    body = report({"config": {}, "units": {f"bb/{c}": u for c, u in units.items()}})
    assert f"| B - A | -0.100 ± {sd:.3f} (16.7% drop) |" in body


def test_table1_claims_fail_when_model_b_is_not_lower(units):
    units["model_b"] = _unit("model_b", [0.6, 0.7, 0.8], figure1=[r["figure1"] for r in units["model_b"]["runs"]])
    claims = check(units)
    assert claims["C1"]["verdict"] == claims["C2"]["verdict"] == "does not hold"
    assert "B - A = +0.100" in claims["C1"]["measured"]


def test_one_seed_has_no_spread_in_the_text(units):
    units = {c: aggregate("bb", c, u["runs"][:1]) for c, u in units.items()}
    assert check(units)["C1"]["measured"] == "A 0.500, B 0.400, B - A = -0.100 (relative drop 20.0%)"


def test_figure1_shares_are_pooled_over_seeds(units):
    claims = check(units)
    text = claims["C4"]["measured"]
    assert "negation -0.100 (100% of pairs lowered)" in text and "binding +0.000 (0% of pairs lowered)" in text
    assert "spatial -0.033 (67% of pairs lowered)" in text and claims["C4"]["verdict"] == "holds"  # 4 of 6 pairs
    assert claims["C4b"]["verdict"] == claims["C3"]["verdict"] == "holds"  # binding drops least; A above the midpoint


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
    assert (claims["C6"]["measured"], claims["C6"]["verdict"]) == ("F4 0.700, F1 0.620", "holds")
    assert (claims["C7"]["measured"], claims["C7"]["verdict"]) == ("frozen F1 0.970 vs Model B cosine 0.879", "holds")
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "holds"
    units["e2e_F1"]["metrics"]["nDCG@10"] = 0.75  # F1 now beats F4's mean end to end
    units["frozen_F2"]["metrics"]["nDCG@10"] = 0.66  # F2 now the strongest frozen verifier
    for run in units["frozen_F1"]["runs"]:
        run["figure3"] = _fig3(0.8, 0.55)  # below Model B's pooled cosine
    for run in units["frozen_F4"]["runs"]:
        run["figure3"] = _fig3(0.2, 0.5)
    for run in units["e2e_F4"]["runs"]:
        run["figure3"] = _fig3(0.1, 0.57, 0.57)
    claims = check(units)
    assert (claims["C6"]["measured"], claims["C6"]["verdict"]) == ("F1 0.750, F4 0.700", "does not hold")
    assert claims["C5"]["verdict"] == claims["C5b"]["verdict"] == "does not hold"
    assert claims["C7"]["verdict"] == "does not hold"
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "does not hold"  # e2e F1 (0.58) separates best


def test_claims_without_their_units_are_not_run():
    claims = check({})
    assert len(claims) == 11 and all(r["verdict"] == "not run" for r in claims.values())
    assert claims["C1"]["measured"] == "needs model_a" and PRINTED == []
