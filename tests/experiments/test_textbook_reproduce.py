"""`spherekit reproduce textbook` end to end on the tiny preset (a small local backbone): every section is a
unit with its metrics, the card lists each chapter statement with a verdict, plots are written, and a rerun
reuses finished units (--force redoes the chosen ones)."""

import json

import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.textbook.chapter import STATEMENTS
from spherekit.experiments.textbook.claims import check
from spherekit.experiments.textbook.config import PRESETS, SECTIONS, TextbookConfig, preset_config


def _run(backbone_dir, out, *extra):
    return main(["reproduce", "textbook", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("textbook")
    assert _run(backbone_dir, out) == 0
    return out


def _results(card):
    return json.loads((card / "textbook" / "tiny" / "results.json").read_text())


def test_presets_and_validation():
    for name in PRESETS:
        preset_config(name)
    assert preset_config("cpu").backbones == ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
    assert set(get("textbook").conditions) == set(SECTIONS) and len(SECTIONS) == 8
    with pytest.raises(ValueError, match="valid sections"):
        TextbookConfig(sections=("listings", "nope"))
    with pytest.raises(ValueError, match="num_negatives"):
        TextbookConfig(top_k=3, num_negatives=5)
    with pytest.raises(ValueError, match="unknown preset"):
        preset_config("gpu")


def test_every_section_is_a_unit_with_metrics(card):
    results = _results(card)
    assert set(results["units"]) == {f"st/{s}" for s in SECTIONS}
    units = {u["condition"]: u for u in results["units"].values()}
    m = units["listings"]["metrics"]
    assert m["mnrl_max_abs_diff"] < 1e-5 and m["mining_positives_returned"] == 0
    assert m["mining_same_as_sentence_transformers"] is True
    for row in units["concentration"]["details"]["random"]:
        assert row["expected"] == pytest.approx(row["d"] ** -0.5, rel=1e-3)
        assert row["std"] == pytest.approx(row["expected"], rel=0.05)
    k = results["config"]["eval_k"]
    for section, prefix in (("pooling", "frozen_"), ("losses", ""), ("mining", "")):
        values = [v for key, v in units[section]["metrics"].items() if key.startswith(prefix) and f"recall@{k}" in key]
        assert values and all(0 <= v <= 1 for v in values), section
    rounds = units["mining"]["details"]["chains"]["hard"]
    assert [r["miner"] for r in rounds] == ["bm25", "model"] and rounds[1]["overlap_with_previous"] is not None
    curve = units["losses"]["details"]["curves"]["mnrl"]
    assert curve[0]["step"] == 0 and curve[-1]["step"] == results["config"]["steps"]
    ann = units["ann"]["details"]
    assert {r["method"] for r in ann["rows"]} == {"ivf", "hnsw"} and all(0 <= r["recall"] <= 1 for r in ann["rows"])
    order = units["order"]["details"]
    assert order["examples"][0]["query"] == "the patient was treated by the doctor" and order["verifier_steps"] >= 1


def test_card_lists_every_statement_with_a_verdict(card):
    report = (card / "textbook" / "tiny" / "report.md").read_text()
    results = _results(card)
    for section, statements in STATEMENTS.items():
        assert f"### {section}:" in report
        unit = results["units"][f"st/{section}"]
        rows = check(section, unit, results["config"])
        assert len(rows) == len(statements) and all(h in (True, False) for _, _, h in rows), section
    assert report.count("**holds**") + report.count("**does not hold**") == sum(map(len, STATEMENTS.values()))
    plots = sorted(p.name for p in (card / "textbook" / "tiny" / "plots").iterdir())
    assert plots == ["ann.png", "concentration.png", "losses.png", "mining.png", "thresholds.png"]


def test_claim_checks_can_fail():
    unit = {"metrics": {"sim_paraphrase": 0.1, "sim_unrelated": 0.3, "mnrl_max_abs_diff": 0.1,
                        "mnrl_random_example": 1.0, "mining_positives_returned": 1,
                        "mining_same_as_sentence_transformers": False},
            "details": {"chapter_negatives": {"0": [0, 1]}}}
    rows = check("listings", unit, {"num_negatives": 5})
    assert [h for _, _, h in rows] == [False, False, False]
    assert all(h is None for _, _, h in check("ann", {"metrics": {}}, {}))


def test_rerun_reuses_units_and_force_redoes_one(card, backbone_dir, capsys):
    before = _results(card)
    assert _run(backbone_dir, card) == 0
    assert capsys.readouterr().err.count("done earlier") == len(SECTIONS)
    assert _run(backbone_dir, card, "--conditions", "concentration", "--force") == 0
    err = capsys.readouterr().err
    assert "done earlier" not in err and "concentration" in err
    after = _results(card)
    assert after["units"]["st/listings"]["metrics"] == before["units"]["st/listings"]["metrics"]
    assert after["units"]["st/concentration"]["metrics"] == before["units"]["st/concentration"]["metrics"]
