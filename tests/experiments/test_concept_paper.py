"""The paper's claims as checks: each verdict follows the measured numbers (holds / does not hold), and a
claim whose conditions did not run says so; the printed numbers the card compares with."""

from spherekit.experiments.concept.paper import METRICS, PAPER, claims

B = "m"


def unit(**values):
    return {"metrics": {METRICS[k]: v for k, v in values.items()}}


def layers(mrr, aniso):
    return {"layers": {"MRR": {str(i): x for i, x in enumerate(mrr)}, "anisotropy": {str(i): x for i, x in enumerate(aniso)}}}


def paper_like():
    """Numbers shaped like the paper's findings."""
    return {
        f"{B}/B0": {**unit(**{"t2d R@10": 0.55, "anisotropy": 0.13, "effective rank": 247.0, "negation ROC-AUC": 0.47,
                              "pair ROC-AUC (hard negatives)": 0.75}),
                    "details": layers([0.1, 0.2, 0.5], [0.3, 0.5, 0.15])},
        f"{B}/B0-WM": unit(**{"t2d R@10": 0.39, "anisotropy": 0.30}),
        f"{B}/B1": {**unit(**{"t2d R@10": 0.654, "anisotropy": 0.012, "effective rank": 247.2, "negation ROC-AUC": 0.98,
                              "pair ROC-AUC (hard negatives)": 0.96}),
                    "details": layers([0.1, 0.2, 0.6], [0.3, 0.6, 0.01])},
        f"{B}/B3": unit(**{"t2d R@10": 0.657, "anisotropy": 0.166, "negation ROC-AUC": 0.53,
                           "pair ROC-AUC (hard negatives)": 0.77}),
        f"{B}/M1": unit(**{"t2d R@10": 0.651}),
        f"{B}/M2": unit(**{"t2d R@10": 0.659}),
        f"{B}/M3": unit(**{"t2d R@10": 0.652}),
        f"{B}/B1-unified": unit(**{"t2d R@10": 0.666, "negation ROC-AUC": 0.80, "pair ROC-AUC (hard negatives)": 0.90}),
    }


def verdicts(units):
    return {c: v for c, _, v in claims(units, B)}


def verdict(got, words):
    hits = [v for c, v in got.items() if words in c]
    assert len(hits) == 1, (words, list(got))
    return hits[0]


def test_paper_shaped_numbers_make_every_run_claim_hold():
    got = verdicts(paper_like())
    for claim, verdict in got.items():
        if claim.startswith(("NP paraphrase", "DBpedia")):
            assert verdict == "not run"
        else:
            assert verdict == "holds", claim


def test_opposite_numbers_break_the_claims():
    units = paper_like()
    units[f"{B}/B1"]["metrics"][METRICS["anisotropy"]] = 0.3          # no collapse
    units[f"{B}/B1"]["metrics"][METRICS["t2d R@10"]] = 0.50           # no gain over B0
    units[f"{B}/M2"]["metrics"][METRICS["t2d R@10"]] = 0.70           # a readout beats B1
    got = verdicts(units)
    assert verdict(got, "improves t2d R@10 over the frozen") == "does not hold"
    assert verdict(got, "collapses anisotropy") == "does not hold"
    assert verdict(got, "no readout variant beats") == "does not hold"
    assert verdict(got, "effective rank stays unchanged") == "holds"  # untouched numbers keep their verdict


def test_missing_conditions_are_not_run():
    units = {f"{B}/B0": paper_like()[f"{B}/B0"]}
    rows = claims(units, B)
    assert all(v == "not run" for c, m, v in rows if "B1" in m or "needs" in m)
    assert any("needs B0 and B1" == m for _, m, _ in rows)


def test_printed_numbers():
    assert PAPER["B0"]["t2d R@10"] == (0.552, "") and PAPER["B1"]["anisotropy"] == (0.012, "")
    assert PAPER["M2"]["t2d R@10"][1].startswith("derived")
    assert set(METRICS.values()) >= {"in-domain/R@10 (term to definition)", "in-domain/anisotropy"}
