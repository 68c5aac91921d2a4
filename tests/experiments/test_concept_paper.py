"""The concept paper's claims as checks: each verdict follows the measured numbers (holds / does not hold), and a
claim whose conditions did not run says so; the printed numbers the card compares with."""

from spherekit.experiments.claims import Scope, evaluate
from spherekit.experiments.concept import paper as P
from spherekit.experiments.printed import find


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
                                                                  P.PAIR_HARD: 0.96}),
        "B3": unit(**{P.T2D_R10: 0.657, P.ANISOTROPY: 0.166, P.NEGATION: 0.53, P.PAIR_HARD: 0.77}),
        "M1": unit(**{P.T2D_R10: 0.651}),
        "M2": unit(**{P.T2D_R10: 0.659}),
        "M3": unit(**{P.T2D_R10: 0.652}),
        "B1-unified": unit(**{P.T2D_R10: 0.666, P.NEGATION: 0.80, P.PAIR_HARD: 0.90}),
    }


def verdicts(units):
    return {r["id"]: r for r in evaluate(P.CLAIMS, [Scope("m", units)])}


def test_paper_shaped_numbers_make_every_run_claim_hold():
    for claim_id, record in verdicts(paper_like()).items():
        if claim_id in ("NP", "DBpedia"):
            assert record["verdict"] == "not run" and "--data-dir" in record["measured"]
        else:
            assert record["verdict"] == "holds", claim_id


def test_opposite_numbers_break_the_claims():
    units = paper_like()
    units["B1"]["metrics"][P.ANISOTROPY] = 0.3          # no collapse
    units["B1"]["metrics"][P.T2D_R10] = 0.50            # no gain over B0
    units["M2"]["metrics"][P.T2D_R10] = 0.70            # a readout beats B1
    got = verdicts(units)
    assert got["H1/P1"]["verdict"] == "does not hold"
    assert got["P1a"]["verdict"] == "does not hold"
    assert got["H2/P2"]["verdict"] == "does not hold"
    assert got["P1b"]["verdict"] == "holds"  # untouched numbers keep their verdict
    assert got["H1/P1"]["value"] < 0 and got["H1/P1"]["op"] == ">" and got["H1/P1"]["margin"] == 0.0


def test_missing_conditions_are_not_run():
    got = verdicts({"B0": paper_like()["B0"]})
    assert got["H1/P1"]["verdict"] == "not run" and got["H1/P1"]["measured"].startswith("needs B1")
    assert all(r["verdict"] == "not run" for k, r in got.items() if k != "P2")


def test_printed_numbers():
    assert find(P.PRINTED, "B0", P.T2D_R10).value == 0.552 and find(P.PRINTED, "B1", P.ANISOTROPY).value == 0.012
    assert find(P.PRINTED, "M2", P.T2D_R10).note.startswith("derived")
    assert all(p.setting == P.PAPER_BACKBONE for p in P.PRINTED)
