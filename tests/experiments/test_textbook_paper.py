"""The chapter's statements as claims: each verdict follows the measured numbers (the rules of the old checks,
unchanged), a claim whose section did not run is "not run", and the chapter's one printed number."""

import copy

from spherekit.experiments.claims import Scope, evaluate
from spherekit.experiments.printed import find
from spherekit.experiments.textbook import paper as P

CONFIG = {"eval_k": 10, "num_negatives": 5, "random_dims": [384, 768], "std_tolerance": 0.05, "gap_range": [0.1, 0.3],
          "steps": 40, "rounds": 2, "target_precision": 0.9, "rule_of_thumb": 0.7, "ann_k": 10, "target_recall": 0.95}
AT = P.AT_TARGET


def unit(details=None, **metrics):
    return {"metrics": dict(metrics), "runs": [{"seed": 0, "metrics": dict(metrics), "details": details or {}}]}


def chapter_like():
    """Numbers shaped like the chapter's statements: every claim holds."""
    return {
        "listings": unit({"chapter_negatives": {"0": [3, 2, 4], "1": [0, 4, 1]}}, **{
            P.PARAPHRASE: 0.556, P.UNRELATED: 0.0756, P.MNRL_DIFF: 2.4e-7, P.MNRL_LOSS: 1.92,
            P.POSITIVES_RETURNED: 0, P.AGREES: True}),
        "concentration": unit(**{P.STD_768: 0.0361, P.RELATIVE_ERROR: 0.0006, "dimension": 384,
                                 P.GAP_RANDOM: 0.2, P.IN_RANGE: 0.4, P.GAP_HARDEST: -0.19}),
        "pooling": unit(**{"frozen/cls/R@10": 0.26, "frozen/mean/R@10": 0.39, "frozen/max/R@10": 0.31}),
        "losses": unit(**{"start/R@10": 0.387, **{f"{x}/R@10": v for x, v in (("mnrl", 0.41), ("triplet", 0.35),
                                                                              ("cosine", 0.36))},
                          **{f"{x}/R@10 (mean over the training curve)": v
                             for x, v in (("mnrl", 0.40), ("triplet", 0.37), ("cosine", 0.36))}}),
        "mining": unit(**{"start/R@10": 0.387, "hard/round1/R@10": 0.40, "hard/round2/R@10": 0.42,
                          "random/round1/R@10": 0.39, "random/round2/R@10": 0.395}),
        "thresholds": unit(**{"calibrated/threshold": None, "best F1/F1": 0.65, "rule of thumb/F1": 0.06,
                              "best F1/threshold": 0.16}),
        "ann": unit(**{"count (corpus)": 20000, "ivf/R@10 (exact neighbours, best setting)": 0.92,
                       "hnsw/R@10 (exact neighbours, best setting)": 0.985, f"ivf/nprobe {AT}": None,
                       f"hnsw/efSearch {AT}": 64, f"hnsw/speed-up {AT}": 0.94, f"hnsw/share scanned {AT}": 0.076}),
        "order": unit(**{"chapter pair/cosine (role swap)": 0.978, "chapter pair/cosine (same meaning)": 0.963,
                         "examples/correct (pooled cosine)": 0, "examples/correct (verifier re-rank)": 2,
                         "examples/count": 3, "near-misses/Acc (pooled cosine)": 0.7,
                         "near-misses/Acc (verifier re-rank)": 0.8}),
    }


def verdicts(units, config=CONFIG):
    return {r["id"]: r for r in evaluate(P.CLAIMS, [Scope("m", units, config)])}


def test_chapter_shaped_numbers_make_every_claim_hold():
    got = verdicts(chapter_like())
    assert set(got) == {c.id for c in P.CLAIMS}
    assert {k: r["verdict"] for k, r in got.items()} == {k: "holds" for k in got}
    assert got["mining-1"]["op"] == ">" and got["mining-1"]["margin"] == 0.0
    assert got["thresholds-1"]["margin"] == 0.05 and got["listings-2"]["margin"] == 1e-5
    assert "no threshold reaches precision 0.9" in got["thresholds-1"]["measured"]


def test_opposite_numbers_break_every_claim():
    units = copy.deepcopy(chapter_like())
    m = {c: u["metrics"] for c, u in units.items()}
    m["listings"].update({P.PARAPHRASE: 0.1, P.UNRELATED: 0.3, P.MNRL_DIFF: 0.1, P.POSITIVES_RETURNED: 1})
    m["concentration"].update({P.RELATIVE_ERROR: 0.2, P.GAP_RANDOM: 0.5})
    m["pooling"].update({"frozen/max/R@10": 0.5})
    m["losses"].update({"triplet/R@10 (mean over the training curve)": 0.45})
    m["mining"].update({"hard/round2/R@10": 0.38})
    m["thresholds"].update({"rule of thumb/F1": 0.62})
    m["ann"].update({f"hnsw/share scanned {AT}": 0.6})
    m["order"].update({"chapter pair/cosine (role swap)": 0.8, "near-misses/Acc (verifier re-rank)": 0.6})
    for u in units.values():
        u["runs"][0]["metrics"] = dict(u["metrics"])
    got = verdicts(units)
    assert {k: r["verdict"] for k, r in got.items()} == {k: "does not hold" for k in got}


def test_edge_cases_of_the_rules():
    units = chapter_like()
    units["listings"]["runs"][0]["details"]["chapter_negatives"]["0"] = [1, 2, 3, 4, 5, 6]  # more than 5
    units["pooling"]["metrics"].update({"trained/cls/R@10": 0.5, "trained/mean/R@10": 0.45, "trained/max/R@10": 0.4})
    units["ann"]["metrics"].update({f"hnsw/efSearch {AT}": None, f"hnsw/share scanned {AT}": None})
    got = verdicts(units)
    assert got["listings-3"]["verdict"] == "does not hold"
    assert got["pooling-1"]["verdict"] == "does not hold" and got["pooling-2"]["verdict"] == "holds"
    assert got["ann-1"]["verdict"] == "does not hold" and "neither reaches" in got["ann-1"]["measured"]
    assert got["concentration-2"]["verdict"] == "holds"  # 0.2 lies in 0.1-0.3 ...
    units["concentration"]["metrics"][P.GAP_RANDOM] = 0.3
    assert verdicts(units)["concentration-2"]["verdict"] == "holds"  # ... and so does its upper end


def test_missing_sections_are_not_run():
    got = verdicts({"listings": chapter_like()["listings"]})
    assert all(r["verdict"] == "holds" for k, r in got.items() if k.startswith("listings"))
    assert all(r["verdict"] == "not run" for k, r in got.items() if not k.startswith("listings"))
    assert got["order-1"]["measured"] == "needs order"
    one_round = verdicts(chapter_like(), {**CONFIG, "rounds": 1})
    assert one_round["mining-2"]["verdict"] == "not run" and one_round["mining-1"]["verdict"] == "holds"


def test_the_chapters_printed_number():
    p = find(P.PRINTED, "concentration", P.STD_768)
    assert p.value == 0.036 and len(P.PRINTED) == 1
    assert P.departures({"config": CONFIG})
