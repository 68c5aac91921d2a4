"""`spherekit reproduce restore`: a committed card's units come back as finished units that a rerun with the
same settings reuses (and only such a rerun), nothing finished or half-done is overwritten, and bad cards fail
with errors that name what is wrong."""

import json
import shutil

import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.harness.restore import card_config, restore
from spherekit.experiments.harness.runner import RunStore

CONDITIONS = "B0,B0-WM"  # untrained conditions: the card takes seconds


@pytest.fixture(scope="module")
def committed(backbone_dir, tmp_path_factory):
    """A result card folder holding only results.json (what a repository keeps), from a run elsewhere."""
    out = tmp_path_factory.mktemp("ran")
    assert main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 CONDITIONS, "--out", str(out), "--no-progress"]) == 0
    kept = tmp_path_factory.mktemp("committed") / "tiny"
    kept.mkdir()
    shutil.copy(out / "concept" / "tiny" / "results.json", kept / "results.json")
    return kept


def _rerun(backbone_dir, out):
    return main(["reproduce", "concept", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 CONDITIONS, "--out", str(out), "--no-progress"])


def test_restored_units_are_reused_by_a_rerun(committed, backbone_dir, tmp_path, capsys):
    saved = json.loads((committed / "results.json").read_text())
    assert main(["reproduce", "restore", str(committed), "--out", str(tmp_path)]) == 0
    assert "restored 2 finished run(s)" in capsys.readouterr().out
    unit = tmp_path / "concept" / "tiny" / "st" / "B0" / "no-seed"
    assert json.loads((unit / "done").read_text())["restored_from"].endswith("results.json")
    assert not (unit / "checkpoint").exists()
    assert _rerun(backbone_dir, tmp_path) == 0
    assert capsys.readouterr().err.count("done earlier (reused") == 2
    card = json.loads((tmp_path / "concept" / "tiny" / "results.json").read_text())
    for unit_id, result in saved["units"].items():
        assert card["units"][unit_id]["metrics"] == result["metrics"]


def test_finished_and_unfinished_units_are_left_alone(committed, tmp_path):
    assert restore(committed, out=tmp_path) == ["st/B0/no-seed", "st/B0-WM/no-seed"]
    unit = tmp_path / "concept" / "tiny" / "st" / "B0" / "no-seed"
    before = (unit / "done").read_text()
    messages = []
    assert restore(committed, out=tmp_path, log=messages.append) == []
    assert (unit / "done").read_text() == before and sum("already finished" in m for m in messages) == 2
    (unit / "done").unlink()  # now a half-done unit: restore must not overwrite it
    messages.clear()
    assert restore(committed, out=tmp_path, log=messages.append) == []
    assert not (unit / "done").exists() and any("unfinished run" in m for m in messages)


def test_a_card_run_with_other_settings_matches_only_those_settings(committed, tmp_path):
    changed = json.loads((committed / "results.json").read_text())
    changed["config"]["lr"] = changed["config"]["lr"] * 2
    folder = tmp_path / "card"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(changed))
    messages = []
    restore(folder, out=tmp_path / "out", log=messages.append)
    assert any("lr" in m and "other than the preset" in m for m in messages)
    experiment = get("concept")
    backbone = changed["units"]["st/B0"]["backbone"]
    root = tmp_path / "out" / "concept" / "tiny"
    assert RunStore(root, experiment, experiment.make_config("tiny")).state(backbone, "B0", None)[0] == "todo"
    assert RunStore(root, experiment, card_config(experiment, changed)).state(backbone, "B0", None)[0] == "done"


def test_a_card_measured_under_another_evaluation_version_is_refused(committed, tmp_path, capsys):
    results = json.loads((committed / "results.json").read_text())
    results["evaluation"]["version"] = "0.0"
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert main(["reproduce", "restore", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "evaluation version 0.0" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["config"].update(no_such_field=1), "fields only in the card: ['no_such_field']"),
    (lambda r: r["config"].pop("lr"), "only in the code: ['lr']"),
    (lambda r: r["units"]["st/B0"].update(condition="Z9"), "condition 'Z9' is not one of concept's conditions"),
    (lambda r: r["units"]["st/B0"].update(condition="B0-WM"), "make the id st/B0-WM"),
])
def test_bad_cards_name_the_problem(committed, tmp_path, capsys, edit, message):
    results = json.loads((committed / "results.json").read_text())
    edit(results)
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert main(["reproduce", "restore", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_missing_card_and_missing_folder(tmp_path, capsys):
    assert main(["reproduce", "restore", str(tmp_path)]) == 2
    assert "results.json not found" in capsys.readouterr().err
    assert main(["reproduce", "restore"]) == 2
    assert "give the card folder" in capsys.readouterr().err
