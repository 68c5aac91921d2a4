"""The claims of "Pooling Matters for Frozen Encoders" on hand-made results (no model is loaded)."""

from spherekit.experiments.api.claims import Scope, evaluate

from tests.experiments.sixth_paper.paper import CLAIMS


def _unit(per_seed):
    """A card entry of a condition from its runs' per-term reciprocal ranks (one list per seed)."""
    runs = [{"seed": i, "metrics": {"MRR": sum(rr) / len(rr), "R@1": sum(r == 1.0 for r in rr) / len(rr)},
             "per_item": {"MRR": rr}} for i, rr in enumerate(per_seed)]
    mean = {k: sum(r["metrics"][k] for r in runs) / len(runs) for k in ("MRR", "R@1")}
    return {"metrics": mean, "runs": runs}


def _verdicts(units):
    return {r["id"]: r["verdict"] for r in evaluate(CLAIMS, [Scope("toy", units)])}


GOOD, BAD = [1.0] * 40, [0.2] * 40


def test_the_paper_s_pattern_holds():
    units = {"frozen-mean": _unit([GOOD]), "frozen-cls": _unit([BAD]), "frozen-max": _unit([BAD]),
             "tuned-mean": _unit([GOOD, GOOD]), "tuned-cls": _unit([GOOD, GOOD])}
    assert _verdicts(units) == {"P1": "holds", "P2": "holds", "P3": "holds", "S1": "holds"}


def test_the_opposite_pattern_fails():
    units = {"frozen-mean": _unit([BAD]), "frozen-cls": _unit([GOOD]), "frozen-max": _unit([GOOD]),
             "tuned-mean": _unit([GOOD, GOOD]), "tuned-cls": _unit([BAD, BAD])}
    assert _verdicts(units) == {"P1": "does not hold", "P2": "does not hold", "P3": "does not hold",
                                "S1": "holds"}


def test_noise_is_inconclusive_and_a_missing_unit_is_not_run():
    mixed = [1.0, 0.2] * 20
    units = {"frozen-mean": _unit([mixed]), "frozen-cls": _unit([mixed[1:] + mixed[:1]])}
    verdicts = _verdicts(units)
    assert verdicts["P1"] == "inconclusive"
    assert verdicts["P2"] == verdicts["P3"] == "not run"
