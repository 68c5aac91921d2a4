"""`spherekit reproduce compositional` end to end on the tiny preset (a small local backbone): every run (base, Model
A/B, F1/F4 frozen and end to end, seed 42) with its metrics, per-query and per-pair values and extras, the card's
claims with verdicts computed from the runs (their bootstrap intervals and the core's gate), Figures 1-3 written;
a rerun reuses the runs, and narrowing the verifiers or the seeds never retrains a finished run."""

import json
import shutil

import numpy as np
import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.api.claims import VERDICTS
from spherekit.experiments.compositional import models
from spherekit.experiments.compositional.spec import (CONDITIONS, EXPERIMENT, ITEM_METRICS, METRICS, PRESETS,
                                                      CompositionalConfig, verifier_of)
from spherekit.experiments.api.metrics import lookup
from spherekit.experiments.api.units import unit_runs

RAN = ["base", "model_a", "model_b", "frozen_F1", "frozen_F4", "e2e_F1", "e2e_F4"]


def _run(backbone_dir, out, *extra):
    return main(["reproduce", "compositional", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("compositional")
    assert _run(backbone_dir, out) == 0
    return out


def _results(out):
    return json.loads((out / "compositional" / "tiny" / "results.json").read_text())


def test_presets_selection_and_validation():
    for name in PRESETS:
        EXPERIMENT.make_config(name)
    assert EXPERIMENT.make_config("cpu").backbones == ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
    small = EXPERIMENT.make_config("cpu-small")
    assert small.verifiers == ("F1", "F4") and small.seeds == (42, 43, 44)  # the paper's seeds: minutes each
    assert EXPERIMENT.selected(small) == RAN  # the verifier conditions of F0, F2, F3 are dropped
    assert EXPERIMENT.make_config("paper").seeds == (42, 43, 44) and EXPERIMENT.make_config("paper").data_seed == 0
    assert EXPERIMENT.make_config("paper").structural_fraction == 0.192
    assert len(EXPERIMENT.selected(EXPERIMENT.make_config("paper"))) == len(CONDITIONS) == 13
    assert EXPERIMENT.select(["base", "frozen_F2"]) == {"conditions": ("base", "frozen_F2"), "verifiers": ("F2",)}
    assert get("compositional") is EXPERIMENT
    with pytest.raises(ValueError, match="valid verifiers: F0, F1, F2, F3, F4"):
        CompositionalConfig(verifiers=("F1", "F9"))
    with pytest.raises(ValueError, match="valid conditions"):
        CompositionalConfig(conditions=("model_c",))
    with pytest.raises(ValueError, match="multiple of f4_patch"):
        CompositionalConfig(map_size=60)


def test_every_run_has_its_metrics_and_extras(card):
    results = _results(card)
    assert set(results["units"]) == {f"st/{c}" for c in RAN}
    units = {u["condition"]: u for u in results["units"].values()}
    for cond, unit in units.items():
        assert unit["seeds"] == [42] and "spread" not in unit  # one seed: the run's own numbers, no spread
        (run,) = unit["runs"]
        assert (card / "compositional" / "tiny" / "st" / cond / "seed-42" / "done").is_file()
        stage1 = {f"stage-1/{m}" for m in METRICS} if verifier_of(cond) else set()
        assert unit["metrics"] == run["metrics"] and set(run["metrics"]) == set(METRICS) | stage1
        sets = run["retrieval"]["sets"]
        for m in METRICS:  # the run's metric is the unweighted mean over the suite's sets
            assert unit["metrics"][m] == pytest.approx(np.mean([v[m] for v in sets.values()]))
            assert 0 <= unit["metrics"][m] <= 1
            lookup(m, EXPERIMENT)
        for m in run["metrics"]:
            lookup(m, EXPERIMENT)
        n_queries = sum(s["queries"] for s in results["data"]["suite"].values())
        assert set(run["per_item"]) == set(ITEM_METRICS) | {f"stage-1/{m}" for m in ITEM_METRICS if stage1}
        for key, values in run["per_item"].items():  # per query, weighted so that their mean is the metric
            assert len(values) == n_queries and np.mean(values) == pytest.approx(run["metrics"][key], abs=1e-5)
        assert set(run["retrieval"]) == {"sets", "mean2"} | ({"stage-1"} if stage1 else set())
        assert run["metrics"]["Acc@1"] <= run["metrics"]["Acc@10"]
        assert set(run["seconds"]) >= {"eval"}
    trained = {c: u["runs"][0]["training"] for c, u in units.items() if c != "base"}
    assert "training" not in units["base"]["runs"][0]
    assert trained["model_a"]["encoder"]["steps"] == trained["model_b"]["encoder"]["steps"] == 2
    assert trained["model_b"]["encoder"]["rows"] > trained["model_a"]["encoder"]["rows"]
    assert len(trained["model_a"]["encoder"]["probe"]) == 2  # the trainer's probe: what the gate reads
    assert trained["frozen_F1"] == {"verifier": {"steps": 0, "train_seconds": 0.0}}  # no parameters: untrained
    assert trained["frozen_F4"]["verifier"]["steps"] == 2 and trained["e2e_F1"]["verifier"]["steps"] == 2
    assert units["frozen_F4"]["runs"][0]["parameters"] > 0 == units["frozen_F1"]["runs"][0]["parameters"]
    fig3 = units["frozen_F4"]["runs"][0]["figure3"]
    assert 0 <= fig3["overall"]["auc"] <= 1 and fig3["overall"]["n"] == sum(results["data"]["nearmiss_test"].values())
    for fam, n in results["data"]["nearmiss_test"].items():  # every pair's two scores, per family
        if n:
            assert len(fig3[fam]["scores"]["near_miss"]) == len(fig3[fam]["scores"]["positive"]) == n
            assert np.mean(fig3[fam]["scores"]["near_miss"]) == pytest.approx(fig3[fam]["mean"], abs=1e-5)
    assert trained["e2e_F4"]["verifier"]["start"] > 0 and trained["e2e_F4"]["verifier"]["start_from"] == "first step"
    fig1 = units["model_a"]["runs"][0]["figure1"]
    assert len(fig1["positive"]) == len(fig1["negative"]) == results["data"]["reference_pairs"]
    assert not (card / "compositional" / "tiny" / "st" / "model_a" / "seed-42" / "trainer").exists()


def test_card_has_claims_tables_and_figures(card):
    results = _results(card)
    report = (card / "compositional" / "tiny" / "report.md").read_text()
    claims = {r["id"]: r for r in results["claims"]}
    assert list(claims) == ["C1", "C2", "C3", "C4", "C4b", "C5", "C5b", "C6", "C7", "C8", "C9"]
    a, b = results["units"]["st/model_a"]["metrics"]["nDCG@10"], results["units"]["st/model_b"]["metrics"]["nDCG@10"]
    c1 = claims["C1"]
    lo, hi = c1["interval"]
    assert c1["value"] == pytest.approx(b - a) and lo <= hi and "bootstrap over 12 items" in c1["uncertainty"]
    assert "training noise unmeasured: 1 run of model_a, model_b" in c1["uncertainty"]  # one seed: items only
    expected = "holds" if hi < 0 else "does not hold" if lo >= 0 else "inconclusive"
    assert c1["verdict"] == ("inconclusive" if "trainings that did not learn" in c1["measured"] else expected)
    assert c1["measured"].startswith(f"A {a:.3f}, B {b:.3f}")
    assert claims["C5b"]["verdict"] == "not run"  # F2 did not run
    assert claims["C3"]["sanity"] and claims["C7"]["sanity"]
    for record in claims.values():
        assert record["statement"] in report and record["verdict"] in VERDICTS
    assert results["comparison"] == []  # the paper prints no numbers
    assert '"Acc@1" averaged Acc@1 and Acc@10' in report and "Table 1" in report and "Figure 3" in report
    plots = sorted(p.name for p in (card / "compositional" / "tiny" / "plots").iterdir())
    assert plots == ["figure1_st.png", "figure2_st.png", "figure3_st.png"]


def test_rerun_reuses_finished_runs(card, backbone_dir, capsys):
    assert _run(backbone_dir, card, "--conditions", "base") == 0
    captured = capsys.readouterr()
    assert "st/base/seed-42: done earlier (reused" in captured.out + captured.err


def test_narrowing_verifiers_or_seeds_never_retrains(card, backbone_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(card, out)
    trained = []
    real_encoder, real_verifier = models.train_encoder, models.train_verifier_run
    monkeypatch.setattr(models, "train_encoder", lambda *a, **k: trained.append("encoder") or real_encoder(*a, **k))
    monkeypatch.setattr(models, "train_verifier_run", lambda *a, **k: trained.append("verifier") or
                        real_verifier(*a, **k))
    capsys.readouterr()
    assert _run(backbone_dir, out, "--set", 'verifiers=["F1"]') == 0  # fewer verifiers: every run reused
    err = capsys.readouterr().err
    assert trained == [] and err.count("done earlier (reused") == 5 and "frozen_F4" not in err
    assert _run(backbone_dir, out, "--conditions", "model_a", "--set", "seeds=[42,43]") == 0  # one more seed
    assert trained == ["encoder"] and "st/model_a/seed-42: done earlier" in capsys.readouterr().err
    trained.clear()
    assert _run(backbone_dir, out, "--seed", "42", "--set", 'verifiers=["F1"]') == 0  # fewer seeds: reused
    assert trained == [] and capsys.readouterr().err.count("done earlier (reused") == 5
    results = _results(out)
    assert set(results["units"]) == {f"st/{c}" for c in RAN}  # the card keeps every finished run
    a = results["units"]["st/model_a"]
    assert a["seeds"] == [42, 43] and a["spread"]["n"] == 2 and set(a["spread"]["std"]) == set(METRICS)
    assert unit_runs(a)[0] == {k: v for k, v in json.loads((card / "compositional" / "tiny" / "st" / "model_a" /
                                                             "seed-42" / "metrics.json").read_text()).items()
                               if k not in ("backbone", "condition")}


def test_no_progress_reaches_the_verifiers_training(card, backbone_dir, tmp_path, capfd, monkeypatch):
    """--no-progress turns the verifiers' training bars off too (frozen and end to end), not only the encoder's."""
    from spherekit.training import verifier as verifier_training

    out = tmp_path / "out"
    shutil.copytree(card, out)
    shown, real = [], verifier_training.train_verifier
    monkeypatch.setattr(verifier_training, "train_verifier",
                        lambda *a, **k: shown.append(k.get("progress", True)) or real(*a, **k))
    capfd.readouterr()
    assert _run(backbone_dir, out, "--conditions", "frozen_F4,e2e_F4", "--force") == 0
    assert shown == [False, False] and "it/s" not in capfd.readouterr().err
