"""A card's headline counts the paper's claims only: records that read a condition marked as ours (an ablation or
probe of this reproduction) and uninformative records are listed apart and never counted; probe presets' cards are
listed apart in the README's table."""

from spherekit.experiments.api.claims import Claim, Measured, Scope, counts, evaluate, kind, render, summary_lines
from spherekit.experiments.harness import index


def _unit(value):
    return {"metrics": {"m": value}, "runs": [{"seed": 0}]}


SCOPE_UNITS = {"B0": _unit(0.3), "B1": _unit(0.5), "B1-ablation": _unit(0.6)}
CLAIMS = [
    Claim("P1", "B1 beats B0", "Table 1", "B1 above B0",
          lambda s: Measured.compare(s.metric("B1", "m") - s.metric("B0", "m"), ">", 0.0, "t", exact=True)),
    Claim("A1", "the ablation beats B1", "ours", "ablation above B1",
          lambda s: Measured.compare(s.metric("B1-ablation", "m") - s.metric("B1", "m"), ">", 0.0, "t", exact=True)),
    Claim("U1", "a readout beats B1", "Table 2", "readout above B1",
          lambda s: Measured("t", False, s.metric("B1", "m"), ">", 0.0, exact=True,
                             uninformative="the readout never moved")),
    Claim("S1", "MRR at least R@1", "definition", "always", lambda s: Measured.decided(True, "t"), sanity=True),
]


def _records(ours=("B1-ablation",)):
    return evaluate(CLAIMS, [Scope("bb", SCOPE_UNITS)], ours=ours)


def test_records_that_read_our_conditions_are_marked_and_not_counted():
    records = _records()
    assert [kind(r) for r in records] == ["paper", "ours", "uninformative", "sanity"]
    assert records[1]["ours"] == ["B1-ablation"] and "ours" not in records[0]
    assert records[2]["verdict"] == "inconclusive" and records[2]["uninformative"] == "the readout never moved"
    assert counts(records)["holds"] == 1 and sum(counts(records).values()) == 1  # P1 alone
    assert counts(records, "ours")["holds"] == 1 and sum(counts(records, "uninformative").values()) == 1
    # the same claim on a paper's condition of that name counts
    assert sum(counts(_records(ours=())).values()) == 2
    table = render(records)
    assert "On this reproduction's own ablations" in table and "Uninformative" in table and "Sanity checks" in table
    assert any("ours: holds] A1" in line for line in summary_lines(records))


def test_the_headline_counts_the_paper_s_claims_and_names_the_rest_apart():
    text = index._claim_counts({"claims": _records()})
    assert text == "1 hold, 0 do not (and on our ablations: 1 hold, 0 do not) (and 1 uninformative)"


def test_probe_cards_are_listed_apart_in_the_readme_table():
    from spherekit.experiments import get

    circumplex = get("circumplex")
    assert "cpu-small-alpha0.25" in circumplex.probe_presets
    cards = {("circumplex", "cpu-small"): {"claims": _records(), "units": {}, "machine": "m",
                                           "wall_seconds": {"total": 1.0}},
             ("circumplex", "cpu-small-alpha0.25"): {"claims": _records(), "units": {}, "machine": "m",
                                                     "wall_seconds": {"total": 1.0}}}
    row = index.readme_table(cards).splitlines()[-1]
    paper, probes = row.split("; probes of our choices (not the paper's setup, not counted): ")
    assert "cpu-small-alpha0.25" not in paper and "cpu-small-alpha0.25" in probes


def test_concept_marks_its_ablations_as_ours():
    from spherekit.experiments import get

    ours = set(get("concept").ours())
    assert {"B1-biased", "B1-negonly", "M1-last", "M1-last-paced"} <= ours
    assert not {"B0", "B1", "B2", "B3", "M1", "M3", "B1-unified"} & ours


def test_a_record_per_condition_is_ours_only_for_our_conditions():
    def each(s):
        return [Measured.compare(s.metric(c, "m"), ">", 0.0, "t", exact=True, label=c) for c in ("B1", "B1-ablation")]

    records = evaluate([Claim("P3", "each variant", "s", "r", each)], [Scope("bb", SCOPE_UNITS)], ours=["B1-ablation"])
    assert [r.get("ours") for r in records] == [None, ["B1-ablation"]]
