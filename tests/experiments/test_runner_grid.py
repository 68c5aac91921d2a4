"""The runner's grid on the template paper (seconds): backbones x conditions x seeds with unseeded conditions and a
condition that requires another; what enters a run's fingerprint (its requirements' runs, never a selection); an
evaluation version change re-evaluates saved models without retraining; a missing required model is a clear error."""

import json
import shlex
import shutil
from pathlib import Path

import pytest

import spherekit.experiments as experiments
from spherekit.cli import main
from spherekit.experiments._template.spec import EXPERIMENT
from spherekit.experiments.api.units import unit_runs

TEMPLATE = "spherekit.experiments._template.spec:EXPERIMENT"


@pytest.fixture(autouse=True)
def with_template(monkeypatch):
    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)


@pytest.fixture
def run(backbone_dir, tmp_path, capsys):
    def run(*extra):
        capsys.readouterr()
        code = main(["reproduce", "template", "--preset", "tiny", "--backbone", str(backbone_dir), "--out",
                     str(tmp_path), "--no-progress", *extra])
        return code, capsys.readouterr().err

    run.card = tmp_path / "template" / "tiny"
    return run


def test_grid_of_seeds_unseeded_and_required_conditions(run):
    code, err = run()
    assert code == 0
    assert [line.split("] ")[1] for line in err.splitlines() if line.startswith("[")] == [
        "st/frozen/no-seed", "st/tuned/seed-0", "st/tuned/seed-1", "st/tuned-more/seed-0", "st/tuned-more/seed-1"]
    results = json.loads((run.card / "results.json").read_text())
    tuned = results["units"]["st/tuned"]
    assert tuned["seeds"] == [0, 1] and tuned["spread"]["n"] == 2 and "MRR" in tuned["spread"]["std"]
    assert tuned["metrics"]["MRR"] == pytest.approx(sum(r["metrics"]["MRR"] for r in tuned["runs"]) / 2)
    assert results["units"]["st/frozen"]["seeds"] == [None] and "spread" not in results["units"]["st/frozen"]
    assert (run.card / "st" / "tuned" / "seed-0" / "loss.png").is_file()  # every training plots its loss curve
    # every run records the machine its times were measured on
    assert all(r["machines"] == [results["machine"]] for u in results["units"].values() for r in unit_runs(u))
    t1 = next(r for r in results["claims"] if r["id"] == "T1")
    assert t1["interval"] is not None and t1["uncertainty"].startswith("two-level bootstrap over seeds (tuned 2) and 12 items")


def test_a_new_seed_of_a_requirement_redoes_what_requires_it(run):
    assert run()[0] == 0
    stamps = {p.parent.name: p.read_text() for p in (run.card / "st" / "tuned-more").glob("*/done")}
    code, err = run("--set", "seeds=[0,1,2]")
    assert code == 0
    assert "st/tuned/seed-0: done earlier" in err and "st/frozen/no-seed: done earlier" in err
    assert "st/tuned-more/seed-0: starting over (its configuration changed)" in err  # its start model may differ
    assert {p.parent.name: p.read_text() for p in (run.card / "st" / "tuned-more").glob("*/done")}.keys() == \
        {"seed-0", "seed-1", "seed-2"}
    assert (run.card / "st" / "tuned-more" / "seed-0" / "done").read_text() != stamps["seed-0"]
    code, err = run("--conditions", "tuned", "--seed", "2")  # narrowing afterwards reuses everything
    assert code == 0 and "starting over" not in err and "done earlier" in err


def test_a_field_that_concerns_one_condition_redoes_that_one_alone(run, monkeypatch):
    """Experiment.unit_config: where the spec says `scale` concerns tuned-more only, changing it redoes tuned-more's
    runs and reuses the others; without that (the default, the config itself) every trained run starts over."""
    from dataclasses import replace

    assert run()[0] == 0
    with monkeypatch.context() as patched:
        patched.setattr(type(EXPERIMENT), "unit_config", lambda self, cfg, condition:
                        cfg if condition == "tuned-more" else replace(cfg, scale=type(cfg)().scale))
        code, err = run("--set", "scale=10")
    assert code == 0, err
    assert "st/frozen/no-seed: done earlier" in err and "st/tuned/seed-0: done earlier" in err
    assert "st/tuned-more/seed-0: starting over (its configuration changed)" in err
    code, err = run("--set", "scale=5")
    assert code == 0 and "st/tuned/seed-0: starting over (its configuration changed)" in err


def test_another_evaluation_version_re_evaluates_without_retraining(run, monkeypatch):
    assert run()[0] == 0
    weights = sorted((run.card / "st" / "tuned" / "seed-0" / "checkpoint").rglob("*.safetensors"))
    stamps = [w.stat().st_mtime_ns for w in weights]
    before = json.loads((run.card / "st" / "tuned" / "seed-0" / "metrics.json").read_text())
    monkeypatch.setattr(type(EXPERIMENT), "evaluation_version", 2)
    code, err = run()
    assert code == 0 and err.count("measured under another evaluation version; re-evaluating") == 5
    after = json.loads((run.card / "st" / "tuned" / "seed-0" / "metrics.json").read_text())
    assert weights and [w.stat().st_mtime_ns for w in weights] == stamps
    assert after["training"] == before["training"] and after["metrics"] == pytest.approx(before["metrics"])
    assert json.loads((run.card / "st" / "tuned" / "seed-0" / "done").read_text())["evaluation"] == "1.2"
    assert json.loads((run.card / "results.json").read_text())["evaluation"]["version"] == "1.2"


def test_a_required_model_that_is_missing_is_a_clear_error(run):
    assert run("--conditions", "tuned")[0] == 0
    for folder in (run.card / "st" / "tuned").glob("seed-*"):
        shutil.rmtree(folder / "checkpoint")  # as after `restore`: metrics only
    code, err = run("--conditions", "tuned-more")
    assert code == 2 and "tuned-more' starts from the best 'tuned' model" in err
    command = shlex.split(err.split("re-train it alone: ")[1])  # the core's UnitContext.retrain_command
    assert command[:7] == ["spherekit", "reproduce", "template", "--preset", "tiny", "--backbone", command[6]]
    assert command[7:9] == ["--conditions", "tuned"] and command[9] == "--seed" and command[11] == "--force"
    assert command[12:] == ["--out", str(run.card.parent.parent)]
    assert main([*command[1:], "--no-progress"]) == 0  # re-trains the best 'tuned' run alone: its model is back
    assert (run.card / "st" / "tuned" / f"seed-{command[10]}" / "checkpoint" / "modules.json").is_file()
    assert run("--conditions", "tuned-more")[0] == 0


@pytest.mark.parametrize("out, expected_out", [("results/reproduce", []), ("my runs", ["--out", "my runs"])])
def test_the_retrain_command_pastes_into_a_shell(tmp_path, out, expected_out):
    """UnitContext.retrain_command: one run of the named condition, forced; --out only when it is not the default,
    and every word quoted where it has a space."""
    from spherekit.experiments.harness.context import UnitContext

    ctx = UnitContext(experiment=EXPERIMENT, cfg=None, backbone="/models/my encoder",
                      condition=EXPERIMENT.conditions["tuned-more"], seed=0, data=None,
                      run_dir=tmp_path, root=Path(out) / "template" / "tiny", fingerprint="f",
                      unit_fingerprint="u", progress=False, is_main=True, requirements={})
    command = ctx.retrain_command("tuned", 1)
    assert command.split(" ")[:6] == ["spherekit", "reproduce", "template", "--preset", "tiny", "--backbone"]
    assert " '/models/my encoder' --conditions tuned --seed 1 --force" in command
    assert shlex.split(command.split(" --force")[1]) == expected_out
    assert shlex.split(command)[6] == "/models/my encoder"
    assert "--seed" not in ctx.retrain_command("tuned", None)
