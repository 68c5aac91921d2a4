"""`spherekit reproduce` end to end on the tiny preset with a small local backbone: every condition trains and
is evaluated, the output layout and the card, resume rules (reuse, --force, an interrupted evaluation, a
changed config), the report command, source-holdout units, --data-dir suites, cached views, and bad input."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from spherekit.cli import main
from spherekit.experiments.harness import runner
from spherekit.experiments import get, names
from spherekit.evaluation.geometry import GEOMETRY_RESAMPLES
from spherekit.experiments.concept.spec import SETUPS as CONDITIONS

ALL = ",".join(CONDITIONS)


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    code = main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", ALL,
                 "--out", str(out), "--no-progress"])
    assert code == 0
    return out / "concept" / "tiny"


def unit_dir(card, condition):
    """The run folder of a condition's first seed (frozen conditions do not depend on the seed: no-seed/)."""
    return card / "st" / condition / ("seed-0" if CONDITIONS[condition].trained else "no-seed")


def test_layout_and_metrics(card):
    for name, cond in CONDITIONS.items():
        d = unit_dir(card, name)
        assert (d / "done").is_file() and (d / "unit.json").is_file(), name
        assert not (d / "trainer").exists(), "training checkpoints are removed once the model is saved"
        assert (d / "checkpoint" / "modules.json").is_file() == cond.trained
        result = json.loads((d / "metrics.json").read_text())
        m = result["metrics"]
        for key in ("in-domain/R@10 (term to definition)", "in-domain/MRR (definition to term)",
                    "in-domain/pair ROC-AUC (hard negatives)", "in-domain/anisotropy", "in-domain/effective rank",
                    "in-domain/MRR (layer 6)", "in-domain/anisotropy (layer 0)"):
            assert 0 <= m[key] <= (1 if "rank" not in key else 64), (name, key)
        for key in ("in-domain/anisotropy", "in-domain/effective rank"):  # the claims' paired bootstrap
            reps = result["per_item"][f"{key} (bootstrap replicates)"]
            assert len(reps) == GEOMETRY_RESAMPLES and min(reps) <= m[key] + 1e-6 and max(reps) >= m[key] - 1e-6
        layer_ranks = result["per_item"].get("in-domain/first relevant rank (layer 6)")  # P2's paired bootstrap
        assert (layer_ranks is not None) == (name in ("B0", "B1")), name
        if layer_ranks is not None:
            ranks = [int(r) for r in layer_ranks.split()]
            assert len(ranks) == len(result["per_item"]["in-domain/MRR (term to definition)"]) and min(ranks) >= 1
            assert sum(1 / r for r in ranks) / len(ranks) == pytest.approx(m["in-domain/MRR (layer 6)"], abs=1e-6)
            reps = result["per_item"]["in-domain/anisotropy (layer 0) (bootstrap replicates)"]
            assert len(reps) == GEOMETRY_RESAMPLES and min(reps) <= m["in-domain/anisotropy (layer 0)"] <= max(reps)
        assert ("train" in result["seconds"]) == cond.trained
        if cond.trained:
            curve = result["training"]["encoder"]["curve"]
            assert curve["step"] == [1, 2, 3] and {"syn", "t2d", "d2d"} <= set(curve)
    m3 = json.loads((unit_dir(card, "M3") / "checkpoint" / "modules.json").read_text())
    readout_cfg = json.loads((unit_dir(card, "M3") / "checkpoint" / m3[1]["path"] / "config.json").read_text())
    assert readout_cfg["deep_supervision"] is False  # per-layer heads are not part of the saved encoder


def test_results_json_and_report(card):
    results = json.loads((card / "results.json").read_text())
    assert set(results["units"]) == {f"st/{c}" for c in CONDITIONS}
    assert results["preset"] == "tiny" and "torch" in results["versions"] and results["machine"]
    assert {"data", "total", "st/B1/train", "st/B1/eval"} <= set(results["wall_seconds"])
    sources = {c["field"]: c["source"] for c in results["config_sources"]}
    assert sources["steps"].startswith("departs from the paper") and sources["layer_decay"] == "paper"
    assert sources["lr"] == "choice"
    report = (card / "report.md").read_text()
    for name in CONDITIONS:
        assert f"| {name} |" in report
    assert "Claims of the paper" in report and "departs from the paper" in report
    verdicts = ("holds", "does not hold", "inconclusive", "not run")
    assert sum(report.count(f"| **{v}** |") for v in verdicts) == len(results["claims"])  # one cell per record
    assert {r["verdict"] for r in results["claims"]} <= set(verdicts)
    p1a = next(r for r in results["claims"] if r["id"] == "P1a")  # ran: its measurement is on the record
    assert p1a["verdict"] != "not run" and p1a["value"] is not None and p1a["measured"].startswith("B0 ")
    assert any(c["condition"] == "B1" and c["ours"]["st"] is not None for c in results["comparison"])
    for line in report.splitlines():
        if line.startswith("![") and "](" in line:
            assert (card / line.split("](")[1].rstrip(")")).is_file()
    assert len(list((card / "plots").glob("*.png"))) == 4


def test_rerun_reuses_finished_units(card, backbone_dir, capsys):
    before = (unit_dir(card, "B1") / "done").read_text()
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", ALL,
                 "--out", str(card.parent.parent), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("done earlier (reused") == len(CONDITIONS)
    assert (unit_dir(card, "B1") / "done").read_text() == before


def test_force_and_interrupted_evaluation(card, backbone_dir):
    out = str(card.parent.parent)
    b1 = unit_dir(card, "B1")
    # an evaluation cut off after training: the saved model is evaluated again, nothing is retrained
    (b1 / "done").unlink()
    (b1 / "metrics.json").unlink()
    args = ["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", "B1",
            "--out", out, "--no-progress"]
    assert main(args) == 0
    result = json.loads((b1 / "metrics.json").read_text())
    assert "train" not in result["seconds"] and "eval" in result["seconds"]
    # --force redoes it from scratch
    assert main(args + ["--force"]) == 0
    assert "train" in json.loads((b1 / "metrics.json").read_text())["seconds"]
    # the card still lists every finished unit of this config, not only the one this run asked for, and its
    # configuration names all their conditions
    results = json.loads((card / "results.json").read_text())
    assert len(results["units"]) == len(CONDITIONS)
    for field, value in get("concept").select(list(CONDITIONS)).items():
        assert results["config"][field] == list(value)


def test_card_config_names_the_backbones_conditions_and_seeds_of_its_units():
    experiment = get("concept")  # as after `--preset cpu --conditions B3 --backbone all-mpnet-base-v2 --seed 1`
    cpu = experiment.make_config("cpu")
    cfg = dataclasses.replace(cpu, backbones=("all-mpnet-base-v2",), conditions=("B3",), source_holdout_conditions=(),
                              seeds=(1,))
    units = {"a": {"backbone": "all-mpnet-base-v2", "condition": "B3", "seeds": [1]},
             "b": {"backbone": "all-MiniLM-L6-v2", "condition": "B1", "seeds": [0]},
             "c": {"backbone": "all-MiniLM-L6-v2", "condition": "B0", "seeds": [0]}}
    shown = runner.shown_config(experiment, cfg, units)
    assert shown.backbones == ("all-mpnet-base-v2", "all-MiniLM-L6-v2")  # this run's backbone first
    assert shown.conditions == ("B0", "B1", "B3") and shown.seeds == (1, 0)  # the experiment's order; seeds appended
    fields = ("backbones", "conditions", "seeds", "source_holdout_conditions")
    rest = {f: v for f, v in vars(shown).items() if f not in fields}
    assert rest == {f: v for f, v in vars(cpu).items() if f not in fields}
    assert runner.shown_config(experiment, cfg, {"a": units["a"]}) is cfg


@pytest.mark.parametrize("name", names())
def test_card_config_of_a_narrowed_run_selects_exactly_the_cards_units(name):
    experiment = get(name)
    for preset in experiment.presets:
        cfg = runner.make_config(experiment, preset)
        units = {f"{b}/{c}": {"backbone": b, "condition": c, "seeds": list(cfg.seeds)}
                 for b, c in runner.plan(experiment, cfg)}
        assert runner.shown_config(experiment, cfg, units) is cfg  # a full run: its own config
        last = units[list(units)[-1]]["condition"]
        narrowed = runner.make_config(experiment, preset, conditions=[last])
        assert len(runner.plan(experiment, narrowed)) < len(units)
        shown = runner.shown_config(experiment, narrowed, units)
        assert {f"{b}/{c}" for b, c in runner.plan(experiment, shown)} == set(units), preset


def test_reevaluate_recomputes_metrics_from_the_saved_model(card, backbone_dir, capsys):
    """--reevaluate: a finished unit's metrics are computed again from its saved model; nothing is retrained
    and the earlier training time stays in the result."""
    b1 = unit_dir(card, "B1")
    saved = json.loads((b1 / "metrics.json").read_text())
    key = "in-domain/R@10 (term to definition)"
    stale = {**saved, "metrics": {**saved["metrics"], key: -1.0}}  # as if an evaluator had been wrong
    (b1 / "metrics.json").write_text(json.dumps(stale))
    weights = sorted((b1 / "checkpoint").rglob("*.safetensors"))
    stamps = [w.stat().st_mtime_ns for w in weights]
    args = ["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", "B1",
            "--out", str(card.parent.parent), "--no-progress"]
    assert main(args + ["--reevaluate"]) == 0
    err = capsys.readouterr().err
    assert "B1/seed-0: re-evaluating its saved model" in err and "resuming" not in err
    result = json.loads((b1 / "metrics.json").read_text())
    assert result["metrics"][key] == pytest.approx(saved["metrics"][key])
    assert result["seconds"]["train"] == saved["seconds"]["train"] and "eval" in result["seconds"]
    assert weights and [w.stat().st_mtime_ns for w in weights] == stamps  # not retrained
    assert (b1 / "done").is_file()
    assert main(args + ["--reevaluate", "--force"]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_reevaluate_keeps_a_trained_run_without_a_saved_model(card, backbone_dir, tmp_path, capsys):
    """A trained run whose model is gone (restored from a card, say) is not retrained by --reevaluate: it keeps its
    metrics and the log says why; a frozen condition (no model to keep) is evaluated again."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(card.parent.parent, out)
    copy = out / "concept" / "tiny"
    b3 = unit_dir(copy, "B3")
    shutil.rmtree(b3 / "checkpoint")
    before = (b3 / "metrics.json").read_bytes()
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 "B0,B3", "--out", str(out), "--no-progress", "--reevaluate"]) == 0
    err = capsys.readouterr().err
    assert "B3/seed-0: kept as it is (no saved model to re-evaluate" in err
    assert "B0/no-seed: re-evaluating its saved model" in err
    assert (b3 / "metrics.json").read_bytes() == before and (b3 / "done").is_file()
    assert not (b3 / "checkpoint").exists() and not (b3 / "trainer").exists()  # nothing trained


def test_changed_config_restarts_a_run(tmp_path, capsys):
    d = tmp_path / "u"
    runner._start_run(d, "aaa", "x", "B1", 0, False, print)
    (d / "checkpoint").mkdir()
    runner._start_run(d, "bbb", "x", "B1", 0, False, print)
    assert "configuration changed" in capsys.readouterr().out and not (d / "checkpoint").exists()
    assert json.loads((d / "unit.json").read_text()) == {"fingerprint": "bbb", "backbone": "x", "condition": "B1",
                                                         "seed": 0}


def test_report_command_rerenders(card, capsys):
    (card / "report.md").unlink()
    shutil.rmtree(card / "plots")
    assert main(["reproduce", "report", str(card)]) == 0
    assert (card / "report.md").is_file() and len(list((card / "plots").glob("*.png"))) == 4


def test_list(capsys, monkeypatch):
    assert main(["reproduce", "list"]) == 0
    out = capsys.readouterr().out
    assert "concept" in out and "cpu-small" in out and "B1-unified: fine-tuned, mean pooling, hard negatives in " in out
    assert "Condition(" not in out
    import spherekit.experiments as experiments

    found = {**experiments._found(), "broken": "no.such.module:EXPERIMENT"}
    monkeypatch.setattr(experiments, "_found", lambda: found)
    assert main(["reproduce", "list"]) == 1
    out = capsys.readouterr().out
    assert "broken: cannot be loaded (ModuleNotFoundError" in out and "textbook:" in out


@pytest.mark.parametrize("args, message", [
    (["reproduce", "nope"], "valid experiments:"),
    (["reproduce", "concept", "--preset", "huge"], "valid presets: cpu-small, cpu-small-ablation, cpu, paper, tiny"),
    (["reproduce", "concept", "--preset", "tiny", "--conditions", "B1,B9"], "valid conditions: B0, B0-WM"),
    (["reproduce", "concept", "--preset", "tiny", "--backbone", "/no/such/model"], "not found"),
    (["reproduce", "concept", "--preset", "tiny", "--data-dir", "/no/such/dir"], "is not a folder"),
    (["reproduce", "report"], "give the card folder"),
])
def test_bad_names_list_the_valid_ones(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_unwritable_output_fails_before_any_work(tmp_path, backbone_dir, capsys, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr("spherekit.experiments.concept.run.prepare",
                        lambda *a, **k: pytest.fail("prepare ran before the output check"))
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir),
                 "--out", str(blocker / "sub")]) == 2
    assert "is not writable" in capsys.readouterr().err


def test_bad_data_dir_file_names_file_line_and_field(tmp_path, backbone_dir, capsys):
    data = tmp_path / "data"
    data.mkdir()
    lines = ['{"query": "dirty cup", "paraphrase": "not clean cup", "family": "intersective"}',
             '{"query": "toy gun", "paraphrase": "replica gun", "family": "fictional"}']
    (data / "np_paraphrase.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", "B0",
                 "--data-dir", str(data), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "np_paraphrase.jsonl:2" in err and "family" in err
    assert not list((tmp_path / "out").rglob("done"))


def test_missing_offline_data_says_what_to_install(tmp_path, backbone_dir, capsys, monkeypatch):
    from spherekit._store import DataMissingError

    def missing(*a, **k):
        raise DataMissingError("wordnet", "WordNet 3.0 not found")

    monkeypatch.setattr("spherekit.data.wordnet.load_wordnet", missing)
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--seed", "5",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert "spherekit data install wordnet" in capsys.readouterr().err


def test_source_holdout_units(backbone_dir, tmp_path):
    """--conditions B0,B1@source-holdout: a main frozen unit and a second-source-only model tested on WordNet."""
    out = tmp_path / "out"
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 "B0,B1@source-holdout", "--out", str(out), "--no-progress"]) == 0
    card = out / "concept" / "tiny"
    results = json.loads((card / "results.json").read_text())
    assert set(results["units"]) == {"st/B0", "st/B1@source-holdout"}
    sh = results["units"]["st/B1@source-holdout"]
    assert "source-holdout/R@10 (term to definition)" in sh["metrics"]
    assert not any(k.startswith("in-domain/") for k in sh["metrics"])
    assert not any(k.startswith("source-holdout/") for k in results["units"]["st/B0"]["metrics"])
    curve = sh["runs"][0]["training"]["encoder"]["curve"]
    assert {"t2d"} <= set(curve) and "syn" not in curve
    assert results["config"]["source_holdout_conditions"] == ["B1"] and results["config"]["conditions"] == ["B0"]
    assert "Source-holdout split" in (card / "report.md").read_text()


def test_unknown_source_holdout_condition(capsys):
    assert main(["reproduce", "concept", "--preset", "tiny", "--conditions", "B7@source-holdout"]) == 2
    assert "valid conditions" in capsys.readouterr().err


def test_data_dir_suites_run_through_the_same_path(backbone_dir, tmp_path):
    """--data-dir with the NP paraphrase suite and the DBpedia benchmark in their published formats."""
    fixtures = Path(__file__).resolve().parents[1] / "data" / "fixtures"
    data = tmp_path / "paper-data"
    (data / "dbpedia_gap").mkdir(parents=True)
    shutil.copy(fixtures / "np_paraphrase" / "np_paraphrase.jsonl", data / "np_paraphrase.jsonl")
    for name in ("pairs.jsonl", "candidates.txt"):
        shutil.copy(fixtures / "dbpedia_gap" / name, data / "dbpedia_gap" / name)
    out = tmp_path / "out"
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions", "B0,B1",
                 "--data-dir", str(data), "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "concept" / "tiny" / "results.json").read_text())
    for unit in results["units"].values():
        m = unit["metrics"]
        assert {"np/R@10 (NP paraphrase)", "np/R@1 (intersective)", "dbpedia/R@10", "dbpedia/MRR"} <= set(m)
    assert results["data"]["np_paraphrase"] == 5 and results["data"]["dbpedia_test_queries"] == 2
    report = (out / "concept" / "tiny" / "report.md").read_text()
    assert "needs the NP paraphrase file" not in report and "NP R@10" in report


def test_cached_views_train_like_the_plain_ones(backbone_dir, tmp_path):
    """cached_mini_batch: the gradient-cached views give the plain run's loss curve (dropout is 0)."""
    from spherekit.experiments import reproduce

    curves = {}
    for name, extra in (("plain", {}), ("cached", {"cached_mini_batch": 3})):
        results = reproduce("concept", "tiny", conditions=["B1"], backbone=str(backbone_dir), out=tmp_path / name,
                            progress=False, overrides=extra, log=lambda msg: None)
        curves[name] = results["units"]["st/B1"]["runs"][0]["training"]["encoder"]["curve"]
    assert curves["plain"]["step"] == curves["cached"]["step"] == [1, 2, 3]
    assert curves["cached"]["loss"] == pytest.approx(curves["plain"]["loss"], rel=1e-4, abs=1e-4)
