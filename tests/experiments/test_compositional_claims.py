"""The compositional claims and tables on hand-built multi-seed units (the tiny preset runs one seed): the runner's
mean and sample std over seeds, B - A with the propagated spread and the relative drop, Figure 1's lowered share
pooled over seeds, the verifier orderings, end-to-end gains over the encoder's own stage 1 and the Figure 3
separations; every claim can fail. The noise rules: the two-level bootstrap over the seeds and the per-query values
(a difference inside the noise is inconclusive), over the seeds and the near-miss pairs (Figure 1, Figure 3
ROC-AUCs; the pooled upper median of Figure 1 weighted by the draw), no verdict on runs measured before per-item
values were kept, and the core's gate: a training that did not learn makes the claims resting on it inconclusive."""

import math

import numpy as np
import pytest

from spherekit.evaluation.metrics import roc_auc
from spherekit.experiments.api.claims import Scope, evaluate
from spherekit.experiments.api.uncertainty import Draw
from spherekit.experiments.compositional.figures import report
from spherekit.experiments.compositional.paper import CLAIMS, PRINTED, _upper_median
from spherekit.experiments.compositional.spec import verifier_of
from spherekit.experiments.harness.runner import aggregate
from spherekit.experiments.api.units import unit_runs

SEEDS = (42, 43, 44)
QUERIES = 40
CONFIG = {"queries_per_set": 20, "verifier_batch_light": 16, "verifier_batch_heavy": 16}
LEARNED = {"steps": 5, "start": 1.0, "start_from": "first step", "final": 0.5}


def _mean(ndcg):
    return {"nDCG@10": ndcg, "MRR@10": ndcg, "Acc@1": ndcg / 2, "Acc@10": ndcg}


def _run(cond, seed, ndcg, stage1=None, ndcg_items=None, train=LEARNED, **extra):
    """One run: its means and per-query values (every query at the mean unless ndcg_items gives them) and its
    training record (run.py's names)."""
    items = list(ndcg_items) if ndcg_items is not None else [ndcg] * QUERIES
    ndcg = float(np.mean(items))
    name = "verifier" if verifier_of(cond) else "encoder"
    run = {"seed": seed, "metrics": _mean(ndcg), **({"training": {name: dict(train)}} if cond != "base" else {}),
           "per_item": {"nDCG@10": items, "MRR@10": items, "Acc@1": [x / 2 for x in items]},
           "retrieval": {"sets": {"one": {}, "two": {}}}, **extra}
    if stage1 is not None:
        run["metrics"]["stage-1/nDCG@10"] = stage1
        run["per_item"]["stage-1/nDCG@10"] = [stage1] * QUERIES
    return run


def _unit(cond, ndcgs, stage1=None, items=None, train=LEARNED, **per_seed):
    runs = [_run(cond, s, n, stage1, items[i] if items else None, train, **{k: v[i] for k, v in per_seed.items()})
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
        "base": _unit("base", [0.55, 0.55, 0.55], figure1=[_figure1({})] * 3),
        "model_a": _unit("model_a", [0.5, 0.6, 0.7], figure1=[_figure1({})] * 3),
        "model_b": _unit("model_b", [0.4, 0.5, 0.6], figure1=b_fig1),
        "frozen_F1": _unit("frozen_F1", [0.65] * 3, stage1=0.55, figure3=[_fig3(0.97, 0.01)] * 3, train={"steps": 0}),
        "frozen_F2": _unit("frozen_F2", [0.3] * 3, stage1=0.55, figure3=[_fig3(0.5, 0.0)] * 3, train={"steps": 0}),
        "frozen_F4": _unit("frozen_F4", [0.6] * 3, stage1=0.55, figure3=[_fig3(0.2, 0.05)] * 3),
        "e2e_F1": _unit("e2e_F1", [0.62] * 3, stage1=0.61, figure3=[_fig3(0.9, 0.02)] * 3),
        "e2e_F4": _unit("e2e_F4", [0.65, 0.7, 0.75], stage1=0.6, figure3=[_fig3(0.1, 0.09, 0.2)] * 3),
    }


def _drop(unit, key):
    """Remove `key` from every run of the unit (and from what its runs share)."""
    unit.get("shared", {}).pop(key, None)
    for run in unit["runs"]:
        run.pop(key, None)


def check(units, config=CONFIG) -> dict[str, dict]:
    from spherekit.experiments import get

    return {r["id"]: r for r in evaluate(CLAIMS, [Scope("bb", units, config)],
                                         undertrained=get("compositional").undertrained)}


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
    assert c1["interval"] == pytest.approx([-0.1, -0.1]) and c1["seed_std"] == pytest.approx(0.0, abs=1e-12)
    assert "two-level bootstrap over seeds (model_a 3, model_b 3) and 40 items" in c1["uncertainty"]
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


def test_figure1_shares_are_pooled_over_seeds_and_the_seeds_resampled(units):
    claims = check(units)
    text = claims["C4"]["measured"]
    assert "negation -0.100 (100% of pairs lowered)" in text and "binding +0.000 (0% of pairs lowered)" in text
    assert "spatial -0.033 (67% of pairs lowered)" in text and claims["C4"]["point"] == "holds"  # 4 of 6 pairs
    assert "two-level bootstrap over seeds (model_a 3, model_b 3) and 60 items" in claims["C4"]["uncertainty"]
    # spatial: seed 43 lowers both pairs, 42 and 44 one each; a resample of the seeds such as (42, 42, 44) lowers
    # only half of them (upper median 0, + 0.01): Model B's training noise leaves the claim open
    assert claims["C4"]["interval"] == pytest.approx([-0.04, 0.01]) and claims["C4"]["verdict"] == "inconclusive"
    assert claims["C4b"]["verdict"] == claims["C3"]["verdict"] == "holds"  # binding drops least; A above the midpoint
    assert claims["C3"]["sanity"] and claims["C7"]["sanity"] and not claims["C4"]["sanity"]
    for run in units["model_b"]["runs"]:  # every seed as seed 43
        run["figure1"] = _figure1({"negation": [-0.1, -0.1], "spatial": [-0.05, -0.05]})
    c4 = check(units)["C4"]
    assert c4["verdict"] == "holds" and c4["interval"][1] < 0


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
                                        "0.610); the untuned stage 1 (base) 0.550")
    assert claims["C6"]["verdict"] == "holds" and claims["C6"]["value"] == pytest.approx(0.09)
    assert (claims["C7"]["measured"], claims["C7"]["verdict"]) == ("frozen F1 0.970 vs Model B cosine 0.879", "holds")
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "holds"
    assert "and 60 items resampled together" in claims["C8"]["uncertainty"]
    assert "e2e_F4 3" in claims["C9"]["uncertainty"] and "and 20 items" in claims["C9"]["uncertainty"]  # spatial
    units["e2e_F1"] = _unit("e2e_F1", [0.8] * 3, stage1=0.61, figure3=[_fig3(0.9, 0.05)] * 3)  # 0.19 > every F4 seed
    units["frozen_F2"] = _unit("frozen_F2", [0.66] * 3, stage1=0.55, figure3=[_fig3(0.5, 0.0)] * 3,
                               train={"steps": 0})  # F2 now the strongest frozen verifier
    for run in units["frozen_F1"]["runs"]:
        run["figure3"] = _fig3(0.8, 0.01)  # below Model B's pooled cosine
    for run in units["frozen_F4"]["runs"]:
        run["figure3"] = _fig3(0.2, 0.02)  # ROC-AUC 0.66: trained, but below e2e F1's 0.86
    for run in units["e2e_F4"]["runs"]:
        run["figure3"] = _fig3(0.1, 0.02, 0.02)
    claims = check(units)
    assert claims["C6"]["verdict"] == "does not hold" and "F1 +0.190 (0.800 vs 0.610)" in claims["C6"]["measured"]
    assert claims["C5"]["verdict"] == claims["C5b"]["verdict"] == "does not hold"
    assert claims["C7"]["verdict"] == "does not hold"
    assert claims["C8"]["verdict"] == claims["C9"]["verdict"] == "does not hold"  # e2e F1 separates best
    assert not any("undertrained verifiers" in r["measured"] for r in claims.values())


CHANCE = [_fig3(0.4, 0.0)] * 3  # positives scored as their near-misses: ROC-AUC 0.5 on every resample


def test_an_undertrained_verifier_makes_the_claims_resting_on_it_inconclusive(units):
    """A trained verifier whose near-miss ROC-AUC interval contains 0.5, or that re-ranks below its own stage 1
    beyond the interval, cannot decide the claims resting on it (C5, C5b: the frozen ones they compare; C6: the
    end-to-end ones; C8, C9: every verifier); the other claims keep their verdicts."""
    assert {cid: r["verdict"] for cid, r in check(units).items() if cid in ("C5", "C5b", "C6", "C8", "C9")} == \
        dict.fromkeys(("C5", "C5b", "C6", "C8", "C9"), "holds")  # every trained verifier separates and gains
    chance = dict(units, e2e_F4=_unit("e2e_F4", [0.65, 0.7, 0.75], stage1=0.6, figure3=CHANCE))
    claims = check(chance)
    for cid in ("C6", "C8", "C9"):
        assert claims[cid]["verdict"] == "inconclusive" and claims[cid]["point"] is None, cid
        assert ("rests on undertrained runs, which cannot decide it: e2e_F4 at 5 steps (near-miss ROC-AUC 0.500, "
                "interval [0.500, 0.500] contains 0.5)") in claims[cid]["measured"], cid
    assert claims["C6"]["interval"] is not None  # the measurement is kept
    for cid in ("C1", "C4b", "C5", "C5b"):
        assert claims[cid]["verdict"] == "holds", cid
    # frozen F4 re-ranks below its own stage 1 (0.50 vs 0.55 on every query and seed): C5, C5b, C8, C9, not C6
    worse = dict(units, frozen_F4=_unit("frozen_F4", [0.5] * 3, stage1=0.55, figure3=[_fig3(0.2, 0.05)] * 3))
    claims = check(worse)
    for cid in ("C5", "C5b", "C8", "C9"):
        assert claims[cid]["verdict"] == "inconclusive", cid
        assert ("frozen_F4 at 5 steps (re-ranked nDCG@10 0.500 below its own stage 1's 0.550 (-0.050, interval "
                "[-0.050, -0.050]))") in claims[cid]["measured"], cid
    assert claims["C6"]["verdict"] == "holds"


def test_the_undertrained_rule_is_symmetric(units):
    """An undertrained verifier on the losing side of a comparison leaves the claim open as well, and a claim that
    does not hold becomes inconclusive as one that holds does; a verifier that does not train (frozen F0-F2, no
    parameters) is never judged, and a frozen F3 (not in C5b's sentence) leaves C5b decided."""
    # e2e F1, the comparison of C6 (and one of C8's F0-F2), at chance: C6 held, now inconclusive
    claims = check(dict(units, e2e_F1=_unit("e2e_F1", [0.62] * 3, stage1=0.61, figure3=CHANCE)))
    assert claims["C6"]["verdict"] == claims["C8"]["verdict"] == "inconclusive"
    assert "e2e_F1 at 5 steps" in claims["C6"]["measured"]
    # the claims fail (e2e F1 re-ranks and separates best); an undertrained e2e F3 makes them inconclusive
    failing = dict(units, e2e_F1=_unit("e2e_F1", [0.8] * 3, stage1=0.61, figure3=[_fig3(0.9, 0.1, 0.3)] * 3))
    assert {cid: check(failing)[cid]["verdict"] for cid in ("C6", "C8", "C9")} == \
        dict.fromkeys(("C6", "C8", "C9"), "does not hold")
    claims = check(dict(failing, e2e_F3=_unit("e2e_F3", [0.3] * 3, stage1=0.6, figure3=CHANCE)))
    for cid in ("C6", "C8", "C9"):
        assert claims[cid]["verdict"] == "inconclusive", cid
        assert ("e2e_F3 at 5 steps (near-miss ROC-AUC 0.500, interval [0.500, 0.500] contains 0.5; re-ranked nDCG@10 "
                "0.300 below its own stage 1's 0.600 (-0.300, interval [-0.300, -0.300]))") in claims[cid]["measured"]
    # frozen F2 scores at chance and re-ranks below its stage 1 (0.30 vs 0.55) but trains nothing: C5b holds
    assert "frozen_F2" not in check(units)["C5b"]["measured"] and check(units)["C5b"]["verdict"] == "holds"
    claims = check(dict(units, frozen_F3=_unit("frozen_F3", [0.2] * 3, stage1=0.55, figure3=CHANCE)))
    assert claims["C5"]["verdict"] == "inconclusive" and "frozen_F3 at 5 steps" in claims["C5"]["measured"]
    assert claims["C5b"]["verdict"] == "holds"


def test_released_counts_follow_the_released_table():
    """The released code's counts for a 22.7M encoder (all-MiniLM-L6-v2) at its batches and its 4 minutes; none for a
    backbone the table does not size."""
    from spherekit.experiments.compositional.undertrained import released_count

    scope = Scope("all-MiniLM-L6-v2", {}, CONFIG)
    assert {c: released_count(scope, c) for c in ("frozen_F3", "frozen_F4", "e2e_F1", "e2e_F3", "e2e_F4")} == \
        {"frozen_F3": 375, "frozen_F4": 1500, "e2e_F1": 825, "e2e_F3": 412, "e2e_F4": 1125}
    # the released code's own budget (4 minutes), not a config's shorter one
    assert released_count(Scope("all-MiniLM-L6-v2", {}, dict(CONFIG, time_budget_s=120.0)), "frozen_F4") == 1500
    assert released_count(Scope("bb", {}, CONFIG), "frozen_F4") is None


def test_a_verifier_at_the_released_count_is_judged_on_its_numbers(units):
    """Trained as long as the released code trains it, a verifier that re-ranks below its stage 1 or scores
    near-misses at chance decides the claims resting on it (they can fail); one step short, it is undertrained."""
    from spherekit.experiments import get

    def judged(scope_name, short=0):
        """Both F4s at chance on the near-misses, frozen F4 re-ranking below its stage 1, trained for the released
        counts (1,500 frozen, 1,125 end to end) less `short` steps."""
        frozen, e2e = dict(LEARNED, steps=1500 - short), dict(LEARNED, steps=1125 - short)
        worse = dict(units, frozen_F4=_unit("frozen_F4", [0.5] * 3, stage1=0.55, figure3=CHANCE, train=frozen),
                     e2e_F4=_unit("e2e_F4", [0.65, 0.7, 0.75], stage1=0.6, figure3=CHANCE, train=e2e))
        return {r["id"]: r for r in evaluate(CLAIMS, [Scope(scope_name, worse, CONFIG)],
                                             undertrained=get("compositional").undertrained)}

    at = judged("all-MiniLM-L6-v2")
    assert at["C8"]["verdict"] == at["C9"]["verdict"] == "does not hold"  # neither F4 separates the near-misses
    assert at["C5"]["verdict"] == at["C5b"]["verdict"] == "holds"
    assert not any("undertrained" in at[cid]["measured"] for cid in ("C5", "C5b", "C6", "C8", "C9"))
    short = judged("all-MiniLM-L6-v2", short=1)
    for cid in ("C5", "C5b", "C8"):
        assert short[cid]["verdict"] == "inconclusive" and "frozen_F4 at 1,499 steps" in short[cid]["measured"], cid
    assert "e2e_F4 at 1,124 steps" in short["C9"]["measured"] and short["C9"]["verdict"] == "inconclusive"
    unsized = judged("bb")  # no released count for this backbone: the criteria apply at any length
    assert unsized["C8"]["verdict"] == "inconclusive" and "frozen_F4 at 1,500 steps" in unsized["C8"]["measured"]


def test_c5b_is_f2_below_f0_f1_and_f4_on_both_panels(units):
    """C5b as the paper words it: 'F0 and F4 are often close, while soft alignment F2 is consistently weaker': F2
    below each of frozen F0, F1 and F4 that ran, on nDCG@10 and on Acc@1 (Figure 2's panels); F3 is not compared."""
    c5b = check(dict(units, frozen_F3=_unit("frozen_F3", [0.1] * 3, stage1=0.55, figure3=[_fig3(0.2, 0.05)] * 3)))
    assert c5b["C5b"]["verdict"] == "holds"  # F3 (0.10) below F2 (0.30) does not matter
    assert c5b["C5b"]["measured"] == "nDCG@10: F1 0.650, F4 0.600 vs F2 0.300; Acc@1: F1 0.325, F4 0.300 vs F2 0.150"
    assert c5b["C5b"]["value"] == pytest.approx(0.15)  # F4's Acc@1 0.30 - F2's 0.15
    f0 = [_run("frozen_F0", seed, 0.64, 0.55, train={"steps": 0}, figure3=_fig3(0.5, 0.0)) for seed in SEEDS]
    for run in f0:  # F0 above F2 on nDCG@10 (0.64 vs 0.30), not on Acc@1 (0.14 vs 0.15)
        run["metrics"]["Acc@1"] = 0.14
        run["per_item"]["Acc@1"] = [0.14] * QUERIES
    claims = check(dict(units, frozen_F0=aggregate("bb", "frozen_F0", f0)))
    assert claims["C5b"]["verdict"] == "does not hold" and claims["C5b"]["value"] == pytest.approx(-0.01)
    assert "Acc@1: F0 0.140, F1 0.325, F4 0.300 vs F2 0.150" in claims["C5b"]["measured"]
    del units["frozen_F2"]
    assert check(units)["C5b"]["measured"] == "needs frozen F2 and one or more of frozen F0, F1, F4"


def test_the_largest_reranked_score_is_no_gain_below_its_own_stage1(units):
    """C6 compares each end-to-end verifier with its own encoder's stage 1: F4 re-ranks highest (0.70 vs 0.62) but
    its stage 1 alone scores 0.75."""
    units["e2e_F4"] = _unit("e2e_F4", [0.65, 0.7, 0.75], stage1=0.75, figure3=[_fig3(0.1, 0.09, 0.2)] * 3)
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
    flat = {"steps": 5, "start": 1.0, "start_from": "first step", "final": 0.97}  # fell by 3% < 5%: barely moved
    units["model_b"] = _unit("model_b", [0.4, 0.5, 0.6], train=flat,
                             figure1=[r["figure1"] for r in units["model_b"]["runs"]])
    units["e2e_F1"] = _unit("e2e_F1", [0.62] * 3, stage1=0.61, train=flat, figure3=[_fig3(0.9, 0.02)] * 3)
    claims = check(units)
    for cid in ("C1", "C2", "C4", "C4b", "C6", "C8", "C9"):
        assert claims[cid]["verdict"] == "inconclusive", cid
    assert ("rests on trainings that did not learn (barely moved: model_b seed 42 encoder (start (first step) 1.000 "
            "-> 0.970 (-3.0%, a fall under 5%))") in claims["C1"]["measured"]
    assert claims["C5"]["verdict"] == "holds"  # reads frozen verifiers only
    assert claims["C1"]["interval"] is not None  # the measurement is kept


def test_an_encoder_is_judged_by_its_probe_and_an_untrained_verifier_not_at_all(units):
    """run.py's records: an encoder's probe (the trainer's first rows before and after) decides over its logged
    curve; frozen F0-F2 do not train (steps 0): nothing to judge."""
    probe = {"steps": 5, "probe": [1.0, 0.99], "curve": {"step": [1, 2, 3, 4], "loss": [2.0, 1.5, 1.0, 0.5]}}
    units["model_a"] = _unit("model_a", [0.5, 0.6, 0.7], train=probe, figure1=[_figure1({})] * 3)
    claims = check(units)
    assert "model_a seed 42 encoder (probe 1.000 -> 0.990 (-1.0%, a fall under 5%))" in claims["C1"]["measured"]
    assert claims["C1"]["verdict"] == "inconclusive" and claims["C5"]["verdict"] == "holds"  # F1, F2: steps 0


def test_claims_without_their_units_are_not_run():
    claims = check({})
    assert len(claims) == 11 and all(r["verdict"] == "not run" for r in claims.values())
    assert claims["C1"]["measured"] == "needs model_a" and PRINTED == []


def test_upper_median_is_the_upper_median_of_the_repeated_pairs():
    """Figure 1's pooled upper median on a resample: pair (s, i) taken v_s w_i times."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        m, n = int(rng.integers(1, 4)), int(rng.integers(2, 30))
        change = rng.integers(-5, 6, (m, n)) / 5.0  # ties on purpose
        cols = np.flatnonzero(rng.random(n) < 0.7)
        if cols.size == 0:
            continue
        items, seeds = rng.multinomial(n, np.full(n, 1 / n), 3), rng.multinomial(m, np.full(m, 1 / m), 3)
        got = _upper_median(change, cols, Draw(items.astype(float), {"model_b": seeds.astype(float)}))
        for r in range(3):
            pooled = np.sort(np.repeat(change[:, cols].ravel(), np.outer(seeds[r], items[r, cols]).ravel()))
            assert got[r] == (pooled[pooled.size // 2] if pooled.size else pytest.approx(np.nan, nan_ok=True))
    ones = Draw(np.ones((1, n)), {"model_b": np.ones((1, m))})
    assert _upper_median(change, cols, ones)[0] == np.sort(change[:, cols].ravel())[cols.size * m // 2]


def test_the_card_says_which_verifiers_the_released_count_lets_decide():
    """The departures' scale lines: a verifier at the released count that re-ranks below its stage 1 is named as
    judged on its numbers (a result, not undertraining), and none is undertrained; one short of the count is."""
    from spherekit.experiments.compositional.departures import _scale

    def lines(steps):
        runs = [_run("frozen_F4", s, 0.5, 0.55, train=dict(LEARNED, steps=steps), figure3=CHANCE[0]) for s in SEEDS]
        unit = aggregate("all-MiniLM-L6-v2", "frozen_F4", runs)
        return _scale({"units": {"all-MiniLM-L6-v2/frozen_F4": unit}, "config": CONFIG, "claims": []})

    at = lines(1500)
    assert at[0].startswith("trained at the released step counts on all-MiniLM-L6-v2, so judged on their numbers")
    assert "frozen_F4 at 1,500 steps, the released count: near-miss ROC-AUC 0.500" in at[0]
    assert at[1].startswith("what scale decides on all-MiniLM-L6-v2: no trained verifier is undertrained")
    short = lines(1000)
    assert len(short) == 1 and "undertrained at these steps" in short[0] and "frozen_F4 at 1,000 steps" in short[0]
    assert """--set 'released_steps=["frozen_F4"]'""" in short[0]


def test_the_rerun_command_keeps_the_verifiers_already_at_their_released_counts():
    """The command the scale line gives names the verifiers already at their released counts beside the
    undertrained ones: a released_steps list without them would retrain them at the short count."""
    from spherekit.experiments.compositional.departures import _scale

    units = {}
    for cond, steps in (("frozen_F4", 1500), ("e2e_F4", 60)):
        runs = [_run(cond, s, 0.5, 0.55, train=dict(LEARNED, steps=steps), figure3=CHANCE[0]) for s in SEEDS]
        units[f"all-MiniLM-L6-v2/{cond}"] = aggregate("all-MiniLM-L6-v2", cond, runs)
    line = _scale({"units": units, "config": CONFIG, "claims": []})[-1]
    assert "e2e_F4 at 60 steps" in line and """--set 'released_steps=["e2e_F4", "frozen_F4"]'""" in line
