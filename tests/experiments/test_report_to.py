"""`spherekit reproduce <paper> --report-to NAMES`: every named integration is checked before any data work (a missing
package stops the command in one line naming it; an unknown name lists the valid ones), and TensorBoard's event
files survive the run under <run>/logs/, with the logged training loss in them, after <run>/trainer/ is gone.

tensorboard is in requirements/dev.txt: the event-file test needs it and fails, not skips, where it is missing."""

import shutil

import pytest

import spherekit.experiments as experiments
from spherekit.cli import main
from spherekit.experiments.api.plugin import Experiment
from spherekit.training.trainer import check_report_to

TEMPLATE = "spherekit.experiments._template.spec:EXPERIMENT"


@pytest.fixture
def template(monkeypatch):
    """The template paper discovered as `template` (as SPHEREKIT_EXPERIMENTS=template=... does)."""
    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)


@pytest.fixture
def no_prepare(monkeypatch):
    """Records every experiment's prepare call (the data work the check must come before) and fails it."""
    calls = []

    def prepare(self, cfg, root, progress):
        calls.append(self.name)
        raise AssertionError("prepare ran before --report-to was checked")

    monkeypatch.setattr(Experiment, "prepare", prepare)
    return calls


def _reproduce(out, *extra):
    return main(["reproduce", "template", "--preset", "tiny", "--out", str(out), "--no-progress", *extra])


def _stderr_lines(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_a_missing_integration_stops_in_one_line_before_any_data_work(template, no_prepare, tmp_path, monkeypatch,
                                                                      capsys):
    from transformers.integrations import integration_utils

    monkeypatch.setattr(integration_utils, "is_tensorboard_available", lambda: False)  # as without tensorboard
    assert _reproduce(tmp_path, "--report-to", "tensorboard") != 0
    lines = _stderr_lines(capsys)
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert "tensorboard" in lines[0] and "pip install tensorboard" in lines[0]
    assert no_prepare == [] and not (tmp_path / "template").exists()


@pytest.mark.parametrize("name, package", [("wandb", "wandb"), ("mlflow", "mlflow"), ("comet_ml", "comet_ml")])
def test_each_missing_integration_names_its_package(name, package, monkeypatch):
    from transformers.integrations import integration_utils

    monkeypatch.setattr(integration_utils, "get_available_reporting_integrations", lambda: ["tensorboard"])
    with pytest.raises(ValueError, match=rf"report_to: {name} is not available here: pip install {package}\b"):
        check_report_to(["tensorboard", name])


def test_an_unknown_integration_lists_the_valid_ones(template, no_prepare, tmp_path, capsys):
    assert _reproduce(tmp_path, "--report-to", "tensorbored") != 0
    lines = _stderr_lines(capsys)
    assert len(lines) == 1 and "'tensorbored'" in lines[0], lines
    assert "valid: " in lines[0] and all(n in lines[0] for n in ("tensorboard", "wandb", "mlflow"))
    assert no_prepare == []


def test_all_and_none_stand_alone():
    assert check_report_to(()) == () and check_report_to(None) == ()
    assert check_report_to(["none"]) == ("none",) and check_report_to(["all"]) == ("all",)
    with pytest.raises(ValueError, match="stand alone"):
        check_report_to(["none", "tensorboard"])


def _scalars(logs):
    """{tag: [(step, value), ...]} of every TensorBoard event file under `logs` (read back with tensorboard's own
    reader)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = {}
    for events in sorted(logs.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            out.setdefault(tag, []).extend((e.step, e.value) for e in acc.Scalars(tag))
    return out


def test_tensorboard_logs_survive_under_the_run_folder(template, backbone_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    steps = 3
    assert _reproduce(tmp_path, "--backbone", str(backbone_dir), "--conditions", "tuned", "--seed", "0",
                      "--set", f"steps={steps}", "--set", "batch_size=2", "--report-to", "tensorboard") == 0
    run = tmp_path / "template" / "tiny" / "st" / "tuned" / "seed-0"
    assert (run / "done").exists()
    shutil.rmtree(run / "trainer", ignore_errors=True)  # what a finished run drops; the logs must not live there
    assert not (run / "trainer").exists()
    scalars = _scalars(run / "logs")
    assert "train/loss" in scalars, sorted(scalars)
    logged = sorted(scalars["train/loss"])
    assert [step for step, _ in logged] == list(range(1, steps + 1))  # the tiny preset logs every step
    assert all(value == value and value > 0 for _, value in logged)  # finite, positive MNRL losses
