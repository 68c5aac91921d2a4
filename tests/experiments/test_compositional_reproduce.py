"""`spherekit reproduce compositional` end to end on the tiny preset (a small local backbone): every unit (base,
Model A/B, F1/F4 frozen and end to end) with its metrics, Table 1's aggregates equal the per-seed numbers, the
card lists every claim with a verdict computed from the runs, Figures 1-3 are written, a rerun reuses the units."""

import json

import numpy as np
import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.compositional.claims import check
from spherekit.experiments.compositional.config import CONDITIONS, PRESETS, CompositionalConfig, preset_config
from spherekit.experiments.compositional.evaluate import METRICS


def _run(backbone_dir, out, *extra):
    return main(["reproduce", "compositional", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("compositional")
    assert _run(backbone_dir, out) == 0
    return out


def _results(card):
    return json.loads((card / "compositional" / "tiny" / "results.json").read_text())


def test_presets_and_validation():
    for name in PRESETS:
        preset_config(name)
    assert preset_config("cpu").backbones == ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
    assert preset_config("cpu-small").verifiers == ("F1", "F4") and preset_config("cpu-small").seeds == (42,)
    assert preset_config("paper").seeds == (42, 43, 44) and preset_config("paper").structural_fraction == 0.192
    assert set(get("compositional").conditions) == set(CONDITIONS)
    with pytest.raises(ValueError, match="valid verifiers: F0, F1, F2, F3, F4"):
        CompositionalConfig(verifiers=("F1", "F9"))
    with pytest.raises(ValueError, match="valid conditions"):
        CompositionalConfig(conditions=("model_c",))
    with pytest.raises(ValueError, match="multiple of f4_patch"):
        CompositionalConfig(map_size=60)


def test_every_unit_runs_with_metrics(card):
    results = _results(card)
    conds = ["base", "model_a", "model_b", "frozen_F1", "frozen_F4", "e2e_F1", "e2e_F4"]
    assert set(results["units"]) == {f"st/{c}" for c in conds}
    units = {u["condition"]: u for u in results["units"].values()}
    for cond, unit in units.items():
        seeds = unit["seeds"]
        assert [s["seed"] for s in seeds] == [42]
        for m in METRICS:  # the unit's metric is the mean over seeds of the suite mean; one seed: std 0
            values = [s["retrieval"]["mean"][m] for s in seeds]
            assert unit["metrics"][m] == pytest.approx(np.mean(values)) and unit["metrics"][m + "_std"] == 0.0
            sets = seeds[0]["retrieval"]["sets"]
            assert unit["metrics"][m] == pytest.approx(np.mean([v[m] for v in sets.values()]))
            assert 0 <= unit["metrics"][m] <= 1
        assert seeds[0]["retrieval"]["mean"]["Acc@1"] <= seeds[0]["retrieval"]["mean"]["Acc@10"]
    assert units["model_a"]["seeds"][0]["train"]["steps"] == units["model_b"]["seeds"][0]["train"]["steps"] == 2
    assert units["model_b"]["seeds"][0]["train"]["rows"] > units["model_a"]["seeds"][0]["train"]["rows"]
    assert units["frozen_F1"]["seeds"][0]["train"]["steps"] == 0  # no parameters: evaluated untrained
    assert units["frozen_F4"]["seeds"][0]["train"]["steps"] == 2 and units["e2e_F1"]["seeds"][0]["train"]["steps"] == 2
    # frozen re-ranking keeps the untuned encoder's stage 1: F1 frozen and base retrieve from the same top-K
    fig3 = units["frozen_F4"]["seeds"][0]["figure3"]["overall"]
    assert 0 <= fig3["auc"] <= 1 and fig3["n"] == sum(results["units"]["st/base"]["data"]["nearmiss_test"].values())
    fig1 = units["model_a"]["seeds"][0]["figure1"]
    assert len(fig1["positive"]) == len(fig1["negative"]) == results["units"]["st/base"]["data"]["reference_pairs"]


def test_card_has_claims_tables_and_figures(card):
    results = _results(card)
    report = (card / "compositional" / "tiny" / "report.md").read_text()
    units = {u["condition"]: u for u in results["units"].values()}
    claims = check(units)
    assert len(claims) == 11
    a, b = units["model_a"]["metrics"]["nDCG@10"], units["model_b"]["metrics"]["nDCG@10"]
    assert claims[0][2] == (b < a) and f"A {a:.3f}, B {b:.3f}" in claims[0][1]
    for claim, _, holds in claims:
        assert claim in report
    assert '"Acc@1" averaged Acc@1 and Acc@10' in report and "Table 1" in report
    plots = sorted(p.name for p in (card / "compositional" / "tiny" / "plots").iterdir())
    assert plots == ["figure1_st.png", "figure2_st.png", "figure3_st.png"]


def test_rerun_reuses_finished_units(card, backbone_dir, capsys):
    assert _run(backbone_dir, card, "--conditions", "base") == 0
    captured = capsys.readouterr()
    assert "st/base: done earlier (reused" in captured.out + captured.err
