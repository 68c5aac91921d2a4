"""The concept paper's claims as checks: each verdict follows the measured numbers (holds / does not hold), and a
claim whose conditions did not run says so; with per-item values each comparison has a bootstrap interval and can be
inconclusive, an "unchanged" rule fails both ways, a condition that did not learn makes its claims inconclusive; the
printed numbers the card compares with."""

import numpy as np
import pytest

from spherekit.experiments.api.claims import Scope, evaluate
from spherekit.experiments.api.learning import stalled
from spherekit.experiments.concept import noise
from spherekit.experiments.concept import paper as P
from spherekit.experiments.concept.evaluate import packed
from spherekit.experiments.api.printed import find


def unit(details=None, **values):
    run = {"seed": 0, "metrics": values, **({"details": details} if details else {})}
    return {"metrics": dict(values), "runs": [run]}


def layers(mrr, aniso):
    return {"layers": {"MRR": {str(i): x for i, x in enumerate(mrr)},
                       "anisotropy": {str(i): x for i, x in enumerate(aniso)}}}


def paper_like():
    """Numbers shaped like the paper's findings."""
    return {
        "B0": unit(layers([0.1, 0.2, 0.5], [0.3, 0.5, 0.15]), **{P.T2D_R10: 0.55, P.ANISOTROPY: 0.13, P.RANK: 247.0,
                                                                  P.NEGATION: 0.47, P.PAIR_HARD: 0.75}),
        "B0-WM": unit(**{P.T2D_R10: 0.39, P.ANISOTROPY: 0.30}),
        "B1": unit(layers([0.1, 0.2, 0.6], [0.3, 0.6, 0.01]), **{P.T2D_R10: 0.654, P.ANISOTROPY: 0.012,
                                                                  P.RANK: 247.2, P.NEGATION: 0.98,
                                                                  P.PAIR_HARD: 0.96, P.TYPE_SWAP: 0.976}),
        "B3": unit(**{P.T2D_R10: 0.657, P.ANISOTROPY: 0.166, P.NEGATION: 0.53, P.PAIR_HARD: 0.77,
                      P.TYPE_SWAP: 0.472}),
        "M1": unit(**{P.T2D_R10: 0.651}),
        "M1-last": unit(**{P.T2D_R10: 0.655}),  # ours: started on the last layer, it stays near B1
        "M2": unit(**{P.T2D_R10: 0.659}),
        "M3": unit(**{P.T2D_R10: 0.652}),
        "B1-unified": unit(**{P.T2D_R10: 0.666, P.NEGATION: 0.80, P.PAIR_HARD: 0.90}),
    }


def verdicts(units):
    from spherekit.experiments import get

    return {r["id"]: r for r in evaluate(P.CLAIMS, [Scope("m", units)], ours=get("concept").ours())}


def test_every_claim_of_the_paper_shape_is_recorded():
    got = verdicts(paper_like())
    assert {"H1b (B0 fails)", "H1b (B1 fixes)", "P3a (B1)", "P3b (B1)", "P3b-type (B1)", "P3c (B1)", "H3 (B1)",
            "B0-WM (t2d R@10)", "B0-WM (anisotropy)", "H2-uniform (M1)", "H2/P2 (M2)", "H2-uniform (M3)",
            "M3 (over M1)", "M3 (below B1)", "F (B1)", "F-pair (B1)", "F-negation (B1)"} <= set(got)
    assert got["P3a (B1)"]["op"] == "within" and got["P3a (B1)"]["margin"] == P.SMALL_RANKING_CHANGE
    assert got["H1/P1 (B1)"]["uncertainty"].startswith("none: these runs kept no per-item values")


def test_paper_shaped_numbers_make_every_run_claim_hold():
    """Point values alone (no per-item values, one seed): every rule passes, and every verdict is inconclusive
    because no noise was measured (the tests below add items and seeds), except the anisotropy of the final layer,
    whose noise is bounded without the pairs' values (Hoeffding) and which the paper-shaped gaps clear."""
    for claim_id, record in verdicts(paper_like()).items():
        if claim_id in ("NP", "DBpedia"):
            assert record["verdict"] == "not run" and "--data-dir" in record["measured"]
        else:
            assert record["point"] == "holds", claim_id
            decided = record["sanity"] or claim_id == "P2 (anisotropy)"
            assert record["verdict"] == ("holds" if decided else "inconclusive"), claim_id


SHARED = np.random.default_rng(7).normal(0.0, 1.0, 500)  # common random numbers: one resample, every model


def with_replicates(units, condition, key, spread, own=0.0, seed=0):
    """Give a unit's runs bootstrap replicates of `key` around each run's value: spread x SHARED (the part every
    model sees on the same resample) plus `own` independent noise; as evaluate.py keeps them."""
    rng = np.random.default_rng(seed)
    for run in units[condition]["runs"]:
        x = run["metrics"][key]
        run.setdefault("per_item", {})[f"{key} (bootstrap replicates)"] = list(x + spread * SHARED
                                                                               + own * rng.normal(0, 1, 500))
    return units


@pytest.mark.parametrize("b0_wm, expected", [(0.30, "holds"), (0.137, "inconclusive"), (0.10, "does not hold")])
def test_layer_mean_anisotropy_is_decided_by_the_paired_replicates(b0_wm, expected):
    """B0 0.13: shared resample noise (sd 0.05) cancels in the difference, the rest (sd 0.005) sets the interval."""
    units = paper_like()
    units["B0-WM"]["metrics"][P.ANISOTROPY] = b0_wm
    units["B0-WM"]["runs"][0]["metrics"][P.ANISOTROPY] = b0_wm
    for i, cond in enumerate(("B0", "B0-WM")):
        with_replicates(units, cond, P.ANISOTROPY, 0.05, own=0.005, seed=i)
    record = verdicts(units)["B0-WM (anisotropy)"]
    lo, hi = record["interval"]
    assert 0.01 < hi - lo < 0.03  # sqrt(2) 0.005 x 2 x 1.96 = 0.028: the shared part is gone
    assert record["verdict"] == expected and "paired bootstrap over the random pairs (500 replicates" in \
        record["uncertainty"] and "training noise unmeasured: 1 run of B0, B0-WM" in record["uncertainty"]


def test_geometry_without_replicates_or_seeds_is_inconclusive():
    record = verdicts(paper_like())["B0-WM (anisotropy)"]
    assert record["point"] == "holds" and record["verdict"] == "inconclusive" and record["interval"] is None
    assert "no bootstrap replicates" in record["uncertainty"]


@pytest.mark.parametrize("b1_rank, expected", [(250.0, "holds"), (270.0, "inconclusive"), (290.0, "does not hold")])
def test_effective_rank_ratio_is_bootstrapped_on_the_same_texts(b1_rank, expected):
    """P1b: B1 / B0 - 1 within 10% (B0 247 -> 271.7 is the edge), the ratio taken replicate by replicate."""
    units = paper_like()
    units["B1"]["metrics"][P.RANK] = units["B1"]["runs"][0]["metrics"][P.RANK] = b1_rank
    for i, cond in enumerate(("B0", "B1")):
        with_replicates(units, cond, P.RANK, 5.0, own=1.0, seed=i)
    record = verdicts(units)["P1b"]
    assert record["value"] == pytest.approx(b1_rank / 247.0 - 1) and record["verdict"] == expected


def test_geometry_resamples_the_seeds_and_the_kept_replicates_together():
    """H3 with three seeds each and replicates: every seed draw is paired with every kept replicate; seeds far apart
    widen the interval past the margin that the items alone would clear, and seed_std is the spread of the per-seed
    value (run j of B3 against run j of B1)."""
    units = noisy_units()
    for i, cond in enumerate(("B1", "B3")):
        with_replicates(units, cond, P.ANISOTROPY, 0.01, own=0.0005, seed=i)
    narrow = verdicts(units)["H3 (B1)"]
    assert narrow["uncertainty"] == ("two-level bootstrap over seeds (B3 3, B1 3) and the 500 kept replicates of the "
                                     "random pairs (every seed draw with every replicate), 95% interval recentred on "
                                     "the value")
    assert narrow["verdict"] == "holds"  # B3 0.152 vs 2 x 0.013: the interval clears 0
    for i, run in enumerate(units["B3"]["runs"]):  # B3 seeds far apart: 0.0, 0.15, 0.30 (mean 0.15)
        run["metrics"][P.ANISOTROPY] = 0.15 * i
    units["B3"]["metrics"][P.ANISOTROPY] = 0.15
    with_replicates(units, "B3", P.ANISOTROPY, 0.01, own=0.0005, seed=3)
    wide = verdicts(units)["H3 (B1)"]
    lo, hi = wide["interval"]
    assert lo < 0 < hi and wide["verdict"] == "inconclusive"  # a draw of B3's seed 0 three times: 0.0 - 2 x 0.012
    per_seed = [0.15 * i - 2 * (0.012 + 0.001 * i) for i in range(3)]
    assert wide["seed_std"] == pytest.approx(np.std(per_seed, ddof=1))


def test_opposite_numbers_break_the_claims():
    units = paper_like()
    units["B1"]["metrics"][P.ANISOTROPY] = 0.3          # no collapse
    units["B1"]["metrics"][P.T2D_R10] = 0.50            # no gain over B0
    units["M2"]["metrics"][P.T2D_R10] = 0.70            # a readout beats B1
    got = verdicts(units)
    assert got["H1/P1 (B1)"]["point"] == "does not hold"
    assert got["P1a"]["point"] == "does not hold"
    assert got["H2/P2 (M2)"]["point"] == "does not hold"
    assert got["P1b"]["point"] == "holds"  # untouched numbers keep their verdict
    assert got["H1/P1 (B1)"]["value"] < 0 and got["H1/P1 (B1)"]["op"] == ">" and got["H1/P1 (B1)"]["margin"] == 0.0


def test_missing_conditions_are_not_run():
    got = verdicts({"B0": paper_like()["B0"]})
    assert got["H1/P1"]["verdict"] == "not run" and got["H1/P1"]["measured"].startswith("needs B1")
    assert all(r["verdict"] == "not run" for k, r in got.items() if not k.startswith("P2 "))


def test_printed_numbers():
    assert find(P.PRINTED, "B0", P.T2D_R10).value == 0.552 and find(P.PRINTED, "B1", P.ANISOTROPY).value == 0.012
    assert find(P.PRINTED, "M2", P.T2D_R10).note.startswith("derived")
    assert all(p.setting == P.PAPER_BACKBONE for p in P.PRINTED)


# ---------------------------------------------------------------- with per-item values, seeds and training records

RNG = np.random.default_rng(0)
N = 600  # test queries / pairs


def curve(first=5.0, last=3.5):
    return {"steps": 60, "seconds_per_step": 1.0, "curve": {"step": [5, 30, 60], "loss": [first, (first + last) / 2,
                                                                                         last]}}


QUERY_EASE = RNG.random(N)  # one draw for every condition: a better condition finds a superset (paired items)


def hits(rate):
    return [float(x) for x in QUERY_EASE < rate]


def cosines(separation, rules=("lexical negation", "ontological type swap")):
    """Per-pair cosines whose ROC-AUC grows with `separation` (0: chance)."""
    pos = RNG.normal(0.5, 0.1, N)
    items = {"in-domain/cosine (true pair)": [round(float(x), 4) for x in pos]}
    for title in rules:
        items[f"in-domain/cosine ({title})"] = [round(float(x), 4) for x in pos - separation + RNG.normal(0, 0.1, N)]
    return items


def trained(runs):
    """A unit from runs [(metrics, per_item, training)]."""
    records = [{"seed": i, "metrics": m, "per_item": it, **({"training": {"encoder": tr}} if tr else {})}
               for i, (m, it, tr) in enumerate(runs)]
    keys = runs[0][0]
    return {"metrics": {k: float(np.mean([r[0][k] for r in runs])) for k in keys}, "runs": records}


def measured(rate, separation, aniso=0.05, rank=300.0, training=None):
    """One run's metrics from its per-item values (the metrics are what the items give)."""
    items = {P.T2D_R10: hits(rate), **cosines(separation)}
    metrics = {P.T2D_R10: float(np.mean(items[P.T2D_R10])), P.ANISOTROPY: aniso, P.RANK: rank}
    pos, ones = items["in-domain/cosine (true pair)"], np.ones((1, N))
    for key, title in ((P.NEGATION, "lexical negation"), (P.TYPE_SWAP, "ontological type swap")):
        metrics[key] = float(noise.pair_auc(pos, [items[f"in-domain/cosine ({title})"]], rule_only=True)(ones)[0])
    both = [v for k, v in items.items() if k.startswith("in-domain/cosine") and "true" not in k]
    metrics[P.PAIR_HARD] = float(noise.pair_auc(pos, both, rule_only=False)(ones)[0])
    stored = {k: packed(v) if k.startswith("in-domain/cosine") else v for k, v in items.items()}  # as runs keep them
    return metrics, stored, training


def noisy_units(b1_rate=0.45, b1_sep=0.3, b1_curve=None):
    b0 = trained([measured(0.40, 0.0, aniso=0.11, rank=310.0)])
    b0["runs"][0]["seed"] = None
    return {"B0": b0,
            "B1": trained([measured(b1_rate, b1_sep, aniso=0.012 + 0.001 * i, rank=312.0 + i,
                                    training=b1_curve or curve()) for i in range(3)]),
            "B3": trained([measured(0.50, 0.0, aniso=0.15 + 0.002 * i, training=curve()) for i in range(3)])}


def test_pair_auc_agrees_with_a_direct_computation():
    from sklearn.metrics import roc_auc_score

    assert noise.unpacked(packed([0.12345, None, -0.5])) == [0.1235, None, -0.5] == noise.unpacked([0.1235, None, -0.5])
    items = cosines(0.1)
    pos, neg = items["in-domain/cosine (true pair)"], items["in-domain/cosine (lexical negation)"]
    neg = [None if i % 3 == 0 else x for i, x in enumerate(neg)]  # the rule applied to two pairs in three
    one = noise.pair_auc(pos, [neg], rule_only=True)
    keep = [i for i, x in enumerate(neg) if x is not None]
    want = roc_auc_score([1] * len(keep) + [0] * len(keep), [pos[i] for i in keep] + [neg[i] for i in keep])
    assert one(np.ones((1, N)))[0] == pytest.approx(want)
    counts = np.bincount(np.array([0, 1, 1, 2, 4, 4, 4, 7]), minlength=N).astype(float)  # a resample
    drawn = [i for i in range(N) for _ in range(int(counts[i])) if neg[i] is not None]
    want = roc_auc_score([1] * len(drawn) + [0] * len(drawn), [pos[i] for i in drawn] + [neg[i] for i in drawn])
    assert one(counts[None])[0] == pytest.approx(want)
    every = noise.pair_auc(pos, [neg], rule_only=False)  # the pair ROC-AUC: every pair a positive
    want = roc_auc_score([1] * N + [0] * len(keep), list(pos) + [neg[i] for i in keep])
    assert every(np.ones((1, N)))[0] == pytest.approx(want)


def test_comparisons_carry_two_level_intervals():
    got = verdicts(noisy_units())
    for claim in ("H1/P1 (B1)", "P3a (B1)", "P3b (B1)", "P3c (B1)", "H1b (B1 fixes)", "P1a", "P1b", "H3 (B1)"):
        assert got[claim]["interval"] is not None and got[claim]["seed_std"] is not None, claim
    assert got["H1/P1 (B1)"]["uncertainty"].startswith("two-level bootstrap over seeds (B1 3) and 600 items")
    assert got["P3b (B1)"]["uncertainty"].startswith("two-level bootstrap over seeds (B1 3, B3 3) and 600 test pairs")
    assert "seed_std" not in got["H1b (B0 fails)"]  # one frozen run: no training noise
    assert got["P1a"]["uncertainty"] == ("no bootstrap replicates kept by these runs: bootstrap over seeds (B1 3) "
                                         "alone, 95% interval")  # B0 is frozen: no training noise to measure
    lo, hi = got["P3b (B1)"]["interval"]
    assert lo < got["P3b (B1)"]["value"] < hi and got["P3b (B1)"]["verdict"] == "holds"
    assert got["P3b-type (B1)"]["verdict"] == "holds" and got["P1a"]["verdict"] == "holds"


def test_unchanged_ranking_fails_both_ways():
    """P3a is symmetric: hard negatives that cut R@10 by 0.05 break "ranking unchanged" as a gain would."""
    assert verdicts(noisy_units(b1_rate=0.45))["P3a (B1)"]["verdict"] == "does not hold"  # B3 0.50
    assert verdicts(noisy_units(b1_rate=0.55))["P3a (B1)"]["verdict"] == "does not hold"
    assert verdicts(noisy_units(b1_rate=0.50))["P3a (B1)"]["verdict"] in ("holds", "inconclusive")


def test_a_difference_inside_the_noise_is_inconclusive():
    got = verdicts(noisy_units(b1_sep=0.03))  # AUC gain ~0.1: the interval straddles the 0.1 margin
    assert got["P3b (B1)"]["verdict"] in ("inconclusive", "does not hold")
    lo, hi = got["P3b (B1)"]["interval"]
    assert lo < P.LARGE_CALIBRATION_GAIN or hi < P.LARGE_CALIBRATION_GAIN


def test_an_objective_that_did_not_learn_makes_its_claims_inconclusive():
    got = verdicts(noisy_units(b1_curve=curve(5.0, 4.8)))  # 4% below its start
    records = ("H1/P1 (B1)", "P1a", "P1b", "P3a (B1)", "P3b (B1)", "P3c (B1)", "H3 (B1)", "H1b (B1 fixes)")
    for claim in records:  # the measurement stays on the record, the verdict is inconclusive
        assert got[claim]["verdict"] == "inconclusive", claim
        assert "rests on trainings that did not learn (barely moved: B1 seed 0 encoder" in got[claim]["measured"]
        assert got[claim]["value"] is not None, claim
    assert "rests on" not in got["H1b (B0 fails)"]["measured"]  # the frozen encoder's part reads no training
    assert stalled(Scope("m", noisy_units()), ["B0", "B1", "B3"]) == {}


def test_a_runs_probe_decides_whether_it_learned():
    # a curve 4% below its start, but a probe (the same rows before and after) 20% below: learned; and the other way
    flat_curve_probe_fell = {**curve(5.0, 4.8), "probe": [5.0, 4.0]}
    assert stalled(Scope("m", noisy_units(b1_curve=flat_curve_probe_fell)), ["B1"]) == {}
    fell_curve_flat_probe = {**curve(5.0, 3.5), "probe": [5.0, 4.9]}
    found = stalled(Scope("m", noisy_units(b1_curve=fell_curve_flat_probe)), ["B1"])["barely moved"]
    assert all(x.endswith("encoder (probe 5.000 -> 4.900 (-2.0%, a fall under 5%))") for x in found), found
    assert found[0].startswith("B1 seed 0 ")


def test_a_readout_started_on_the_last_layer_can_beat_b1():
    units = noisy_units(b1_rate=0.50)
    units["M1-last"] = trained([measured(0.60, 0.3, training=curve()) for _ in range(3)])
    units["M1"] = trained([measured(0.30, 0.3, training=curve()) for _ in range(3)])
    got = verdicts(units)
    assert got["H2-last (M1-last)"]["verdict"] == "does not hold" and got["H2-uniform (M1)"]["verdict"] == "holds"
    assert not got["H2-uniform (M1)"]["sanity"] and "ours" not in got["H2-uniform (M1)"]  # the paper's readout
    assert got["H2-last (M1-last)"]["ours"] == ["M1-last"]  # our ablation: listed apart, not in the headline
    units["M1-last-paced"] = trained([measured(0.50, 0.3, training=curve()) for _ in range(3)])
    for run in units["M1-last-paced"]["runs"]:
        run["details"] = {"layer_weights": [0.1, 0.1, 0.2, 0.6]}  # log-odds moved 2.9: the rule decides
    got = verdicts(units)
    assert got["H2-last (M1-last-paced)"]["verdict"] == "holds" and got["H2-last (M1-last)"]["verdict"] == \
        "does not hold"


@pytest.mark.parametrize("weights, moved", [([0.0167, 0.0167, 0.0166, 0.95], False),  # its start: 95% on the last
                                            ([0.0162, 0.0162, 0.0162, 0.9515], False),  # log-odds 0.03: stuck
                                            ([0.05, 0.05, 0.1, 0.8], True),
                                            # further onto the last layer: total variation only 0.023 (at most
                                            # 0.05 is left that way), log-odds 0.66: it moved
                                            ([0.0088, 0.0088, 0.0092, 0.9731], True)])
def test_a_layer_mix_that_did_not_move_measures_its_initialisation(weights, moved):
    units = noisy_units(b1_rate=0.50)
    units["M1-last"] = trained([measured(0.50, 0.3, training=curve()) for _ in range(3)])
    for run in units["M1-last"]["runs"]:
        run["details"] = {"layer_weights": weights}
    got = verdicts(units)["H2-last (M1-last)"]
    if moved:  # the rule decides (equal R@10: no benefit, holds)
        assert got["verdict"] == "holds" and "stayed at its start" not in got["measured"]
    else:
        assert got["verdict"] == "inconclusive" and got["point"] is None
        assert "the readout stayed at its start: M1-last seed 0 (log-odds moved 0.0" in got["measured"]
        assert "under 0.25)" in got["measured"]


@pytest.mark.parametrize("gate_moved", [0.01, 0.2])
def test_a_per_input_gate_is_read_by_its_mixes_not_their_mean(gate_moved):
    """M2's mean mix is uniform (its start) either way; only the per-input distance says whether the gate moved."""
    units = noisy_units(b1_rate=0.50)
    units["M2"] = trained([measured(0.50, 0.3, training=curve()) for _ in range(3)])
    for run in units["M2"]["runs"]:
        run["details"] = {"layer_weights": [0.25] * 4, "gate_moved": gate_moved}
    got = verdicts(units)["H2/P2 (M2)"]
    if gate_moved > 0.05:
        assert got["verdict"] == "holds" and "stayed at its start" not in got["measured"]
        assert "seed 0 moved 0.20, mean mix 0.25 / 0.25 / 0.25 / 0.25" in got["measured"]
    else:
        assert got["verdict"] == "inconclusive" and "M2 seed 0 (gate moved 0.0100 per input, under 0.05)" in \
            got["measured"]


def test_each_bce_form_of_b1_gets_its_own_verdicts_and_the_report_a_matrix():
    from spherekit.experiments.concept.figures import _ablation_table

    units = noisy_units()
    units["B1-negonly"] = trained([measured(0.50, 0.0, training=curve()) for _ in range(3)])
    got = verdicts(units)
    assert got["P3b (B1)"]["verdict"] == "holds" and got["P3b (B1-negonly)"]["verdict"] == "does not hold"
    assert "P3b (B1-biased)" not in got
    table = _ablation_table({"claims": list(got.values())}, "m")
    assert table.splitlines()[0] == "| claim | B1 | B1-negonly |"
    assert "| P3b | holds (" in table and "does not hold" in table
    assert "- P3b: B1 holds; changed by the BCE form (B1-negonly: does not hold)" in table


def test_the_forms_of_b1_say_what_decides_h1_b2_and_m3():
    """B1-nearest trains on worse negatives (its ranking falls below B0's), B1-bce1 on a weak BCE term: H1, the B2
    readout claim and M3's "below B1" are checked against every form, the records that read an ablation are ours
    (not the paper's), and the table names the ablation that changes each verdict."""
    from spherekit.experiments.api.claims import counts
    from spherekit.experiments.concept.figures import _ablation_table

    units = noisy_units()  # B0 0.40 < B1 0.45
    for name, rate, separation in (("B2", 0.44, 0.3), ("M1", 0.41, 0.3), ("M3", 0.42, 0.3), ("B1-nearest", 0.35, 0.3),
                                   ("B1-bce1", 0.46, 0.0)):
        units[name] = trained([measured(rate, separation, training=curve()) for _ in range(3)])
    got = verdicts(units)
    def verdict(rid):
        return got[rid]["verdict"]

    assert verdict("H1/P1 (B1)") == "holds" and verdict("H1/P1 (B1-nearest)") == "does not hold"
    assert verdict("H2/P2 (B2)") == "holds" and verdict("H2/P2 (B2 vs B1-nearest)") == "does not hold"
    assert verdict("M3 (below B1)") == "holds" and verdict("M3 (below B1-nearest)") == "does not hold"
    assert verdict("M3 (below B1-bce1)") == "holds" and verdict("P3b (B1-bce1)") == "does not hold"
    assert got["H2/P2 (B2 vs B1-nearest)"]["ours"] == ["B1-nearest"] and "ours" not in got["H2/P2 (B2)"]
    assert counts([r for r in got.values() if r["id"].startswith("H1/P1")]) == counts([got["H1/P1 (B1)"]])
    table = _ablation_table({"claims": list(got.values())}, "m")
    assert table.splitlines()[0] == "| claim | B1 | B1-nearest | B1-bce1 |"
    for row in ("| H1/P1 |", "| H2/P2 (B2) |", "| M3 (below B1) |"):
        assert row in table
    # each group names the forms that ran (B1-bce5 did not), the unchanged ones as well
    assert ("- H1/P1: B1 holds; changed by the negatives (B1-nearest: does not hold); unchanged by the BCE strength "
            "(B1-bce1: holds)") in table
    assert "- P3b: B1 holds; changed by the BCE strength (B1-bce1: does not hold); unchanged by the negatives " \
        "(B1-nearest: holds)" in table
    # B2 and M3 trained under B1's own form only: the card says what their moved verdicts mean
    assert "The other condition of a comparison (B2 in H2/P2 (B2), M3 in M3 (below B1)) trained under B1's own " \
        "form only" in table


def test_what_decides_joins_the_groups_it_names_with_and_by():
    from spherekit.experiments.concept.figures import _what_decides

    row = {f: {"verdict": v} for f, v in (("B1", "holds"), ("B1-negonly", "holds"), ("B1-nearest", "does not hold"),
                                          ("B1-bce1", "holds"))}
    assert _what_decides(row) == ("B1 holds; changed by the negatives (B1-nearest: does not hold); unchanged by "
                                  "the BCE strength (B1-bce1: holds) and by the BCE form (B1-negonly: holds)")
    assert _what_decides({"B1": {"verdict": "holds"}}) == ""


@pytest.mark.parametrize("data, missing", [
    ({}, ["Wiktionary dump", "NP paraphrase suite", "DBpedia semantic-gap files"]),
    ({"second_source": "wiktionary", "np_paraphrase": 200, "dbpedia_test_queries": 50}, []),
])
def test_the_paper_preset_says_what_a_full_reproduction_still_lacks(data, missing):
    from spherekit.experiments.concept.spec import PRESETS, ConceptConfig
    from spherekit.experiments.api.config import as_dict, from_preset

    cfg = as_dict(from_preset(ConceptConfig, PRESETS, "paper"))
    line, = [d for d in P.departures({"config": cfg, "data": data, "preset": "paper"})
             if d.startswith("missing for a full reproduction")]
    assert all(m in line for m in missing) and ("nothing this card can see" in line) == (not missing)
    assert P.PAPER_BACKBONE not in line  # the paper preset runs the paper's backbone
    small = P.departures({"config": cfg, "data": data, "preset": "cpu-small"})
    assert not any("missing for a full reproduction" in d for d in small)


def with_layers(units, b0_mrr, b0_aniso, b1_mrr=(0.1, 0.2, 0.6), b1_aniso=(0.3, 0.6, 0.01)):
    """noisy_units with per-layer MRR and anisotropy (layer 0: the embedding output, left out by P2)."""
    units["B0"]["runs"][0]["details"] = layers(b0_mrr, b0_aniso)
    for run in units["B1"]["runs"]:
        run["details"] = layers(b1_mrr, b1_aniso)
    return units


# 4 gaps (B0 and three B1 seeds, one earlier transformer layer each), 600 test terms, 10,000 pairs, 98.75% each
MRR_HALF = 2 * np.sqrt(np.log(2 / 0.0125) / (2 * N))
ANISO_HALF = 4 * np.sqrt(np.log(2 / 0.0125) / 20_000)


@pytest.mark.parametrize("final, expected", [(0.5, "holds"), (0.25, "inconclusive"), (0.05, "does not hold")])
def test_final_layer_mrr_is_decided_by_hoeffdings_bound_over_the_terms(final, expected):
    """P2 (MRR): B0's final layer against its best earlier transformer layer (0.2); half-width 0.130."""
    record = verdicts(with_layers(noisy_units(), [0.1, 0.2, final], [0.3, 0.5, 0.15]))["P2 (MRR)"]
    lo, hi = record["interval"]
    assert record["value"] == pytest.approx(min(final - 0.2, 0.4))
    assert hi - lo == pytest.approx(2 * MRR_HALF)
    assert record["verdict"] == expected and "Bonferroni over the 4 gaps, 95% for all at once" in record["uncertainty"]


@pytest.mark.parametrize("final, expected", [(0.15, "holds"), (0.47, "inconclusive"), (0.7, "does not hold")])
def test_final_layer_anisotropy_is_decided_by_hoeffdings_bound_over_the_pairs(final, expected):
    """P2 (anisotropy): B0's final layer against its lowest earlier transformer layer (0.5); half-width 0.064."""
    record = verdicts(with_layers(noisy_units(), [0.1, 0.2, 0.5], [0.3, 0.5, final]))["P2 (anisotropy)"]
    lo, hi = record["interval"]
    assert record["value"] == pytest.approx(0.5 - final)
    assert hi - lo == pytest.approx(2 * ANISO_HALF)
    assert record["verdict"] == expected


def with_layer_items(units, b0_ranks, b0_reps, b1_ranks=((5, 5, 1),), b1_reps=(0.3, 0.6, 0.01)):
    """noisy_units whose B0 and B1 runs keep per-layer items (layers 0-2), their layer details computed from them:
    ranks per layer (a tuple of per-term ranks, or one rank for every term) and anisotropy replicates per layer
    (a list of replicates, or a mean the same shared noise is added to)."""
    from spherekit.experiments.concept.evaluate import rank_key, replicates_key

    noise_ = np.random.default_rng(0).normal(0.0, 0.004, 500)  # the same resamples at every layer and run

    def kept(ranks, reps):
        ranks = [np.full(N, r) if np.isscalar(r) else np.asarray(r) for r in ranks]
        reps = [np.asarray(r) if not np.isscalar(r) else r + noise_ for r in reps]
        items = {rank_key("in-domain", layer): " ".join(str(int(x)) for x in r) for layer, r in enumerate(ranks)}
        items.update({replicates_key(f"in-domain/anisotropy (layer {layer})"): list(r) for layer, r in enumerate(reps)})
        return layers([float((1.0 / r).mean()) for r in ranks], [float(np.mean(r)) for r in reps]), items

    details, items = kept(b0_ranks, b0_reps)
    units["B0"]["runs"][0]["details"] = details
    units["B0"]["runs"][0]["per_item"].update(items)
    for run in units["B1"]["runs"]:
        run["details"], more = kept(b1_ranks[0], b1_reps)
        run["per_item"].update(more)
    return units


def _split(gain: int, loss: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranks of layer 1 and of the final layer: `gain` terms rank 1 at the final layer (5 before), `loss` terms the
    other way round, the rest rank 5 at both."""
    earlier, final = np.full(N, 5), np.full(N, 5)
    final[:gain], earlier[gain:gain + loss] = 1, 1
    return earlier, final


@pytest.mark.parametrize("gain, loss, expected", [(300, 0, "holds"), (30, 28, "inconclusive"),
                                                  (0, 300, "does not hold")])
def test_final_layer_mrr_is_a_paired_bootstrap_over_the_terms_where_runs_keep_their_ranks(gain, loss, expected):
    earlier, final = _split(gain, loss)
    units = with_layer_items(noisy_units(), (5, earlier, final), (0.3, 0.5, 0.15))
    record = verdicts(units)["P2 (MRR)"]
    assert record["value"] == pytest.approx(0.8 * (gain - loss) / N)  # B1's lead (0.8) is larger: B0's gap decides
    assert record["verdict"] == expected, record["interval"]
    assert record["uncertainty"] == ("bootstrap over 600 test terms of the smallest of the 4 gaps (every layer and "
                                     "run on the same terms; each run checked, its seeds not resampled), 95% "
                                     "interval")
    assert record["seed_std"] == 0.0  # every B1 seed has the same layers: the smallest gap of B0 and seed j is B0's


@pytest.mark.parametrize("final, expected", [(0.15, "holds"), (0.499, "inconclusive"), (0.7, "does not hold")])
def test_final_layer_anisotropy_differences_the_layers_replicates(final, expected):
    units = with_layer_items(noisy_units(), (5, 5, 1), (0.3, 0.5, final))
    record = verdicts(units)["P2 (anisotropy)"]
    lo, hi = record["interval"]
    assert record["value"] == pytest.approx(0.5 - final)
    assert hi - lo < 1e-9  # the same shared noise at every layer: a paired difference has no spread
    units["B0"]["runs"][0]["per_item"]["in-domain/anisotropy (layer 2) (bootstrap replicates)"] = list(
        final + np.random.default_rng(1).normal(0.0, 0.004, 500))  # independent noise: the spread of a difference
    record = verdicts(units)["P2 (anisotropy)"]
    lo, hi = record["interval"]
    assert 0.005 < hi - lo < 0.03 and record["verdict"] == expected
    assert "500 replicates, the same resamples at every layer and run" in record["uncertainty"]


def test_final_layer_falls_back_to_hoeffding_when_a_run_kept_no_layer_items_and_rejects_mixed_splits():
    from spherekit.experiments.concept.evaluate import rank_key

    units = with_layer_items(noisy_units(), (5, 5, 1), (0.3, 0.5, 0.15))
    del units["B1"]["runs"][2]["per_item"][rank_key("in-domain", 1)]
    assert "Hoeffding bound" in verdicts(units)["P2 (MRR)"]["uncertainty"]
    assert "paired bootstrap" in verdicts(units)["P2 (anisotropy)"]["uncertainty"]
    units = with_layer_items(noisy_units(), (5, 5, 1), (0.3, 0.5, 0.15))
    units["B0"]["runs"][0]["per_item"][rank_key("in-domain", 2)] = "1 1 1"
    with pytest.raises(ValueError, match="different test splits"):
        verdicts(units)


def test_final_layer_mrr_without_per_item_values_is_inconclusive():
    got = verdicts(paper_like())
    assert got["P2 (MRR)"]["point"] == "holds" and got["P2 (MRR)"]["verdict"] == "inconclusive"
    assert got["P2 (MRR)"]["uncertainty"].startswith("none: these runs kept no per-item values")


def test_geometry_bootstrap_is_recentred_on_the_value():
    """Replicates that sit below the statistic (an effective rank of rows drawn with replacement does): the interval
    keeps their spread around the measured value, so one condition against a constant is not judged on the shift."""
    units = paper_like()
    for i, cond in enumerate(("B0", "B1")):
        with_replicates(units, cond, P.RANK, 1.0, own=0.5, seed=i)
    key = f"{P.RANK} (bootstrap replicates)"  # B1's replicates 40 below its value: their ratio to B0's near -0.16
    units["B1"]["runs"][0]["per_item"][key] = [x - 40.0 for x in units["B1"]["runs"][0]["per_item"][key]]
    record = verdicts(units)["P1b"]
    lo, hi = record["interval"]
    assert lo < record["value"] < hi and hi - lo < 0.02 and "recentred" in record["uncertainty"]
