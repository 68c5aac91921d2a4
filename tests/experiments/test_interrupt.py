"""Ctrl-C during training: a real SIGINT stops `spherekit reproduce` at the end of the current step with a checkpoint
and one line saying what was saved and how to resume (no traceback); rerunning the same command resumes from that
checkpoint, and the finished run's time counts the interrupted attempt."""

import json
import os
import signal
import subprocess
import sys
import time

import spherekit.experiments as experiments
from spherekit.cli import main
from spherekit.experiments.harness import card

TEMPLATE = "spherekit.experiments._template.spec:EXPERIMENT"


def _args(backbone_dir, out, steps):
    return ["reproduce", "template", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
            "--no-progress", "--conditions", "tuned", "--seed", "0", "--set", f"steps={steps}", "--set",
            "batch_size=2"]


def test_sigint_during_training_stops_cleanly_and_resumes(backbone_dir, tmp_path, monkeypatch, capsys):
    out, steps = tmp_path / "out", 60
    started = time.perf_counter()
    env = {**os.environ, "SPHEREKIT_EXPERIMENTS": f"template={TEMPLATE}", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "spherekit", *_args(backbone_dir, out, steps)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = out / "template" / "tiny" / "st" / "tuned" / "seed-0"
    deadline = time.time() + 120
    while not (run / "unit.json").is_file() and time.time() < deadline:  # the run has started
        time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
    # at once: the handler is in place before unit.json is written, and a stop asked for before training starts
    # ends it after its first step, so the stop lands mid-run however fast the machine trains (a fixed wait did
    # not: a fast machine finished all 60 steps inside it)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    attempt = time.perf_counter() - started
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "stopping at the next safe point" in err
    assert err.strip().splitlines()[-1].startswith("spherekit reproduce: interrupted;")
    assert "run the same command again to resume" in err
    checkpoints = sorted(int(p.name.split("-")[1]) for p in (run / "trainer").glob("checkpoint-*"))
    assert checkpoints and 0 < checkpoints[-1] < steps and not (run / "done").exists()
    record = json.loads((run / "interrupted.json").read_text())
    interrupted = record["seconds"]
    assert 0 < interrupted <= attempt and record["machines"] == [card.machine()]
    record["machines"] = ["Elsewhere (8 cores)"]  # as if the stopped attempt ran on another machine
    (run / "interrupted.json").write_text(json.dumps(record))

    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)
    assert main(_args(backbone_dir, out, steps)) == 0  # the same command resumes from the checkpoint
    assert "resuming an interrupted run" in capsys.readouterr().err
    result = json.loads((run / "metrics.json").read_text())
    encoder = result["training"]["encoder"]
    assert encoder["resumed_from"] == checkpoints[-1] and encoder["steps"] == steps
    assert result["seconds"]["interrupted"] == interrupted and not (run / "interrupted.json").exists()
    assert result["machines"] == sorted(["Elsewhere (8 cores)", card.machine()])  # both attempts' machines


def test_rerun_with_the_same_command_resumes_from_the_checkpoint(backbone_dir, tmp_path, monkeypatch, capsys):
    """The same as above without a subprocess: a stop requested in training (as the first Ctrl-C does) leaves a
    checkpoint and no `done`; the same command resumes from that checkpoint."""
    from spherekit.training import interrupt

    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)
    monkeypatch.setattr(interrupt, "trainer_callback", _stop_after(3))
    args = _args(backbone_dir, tmp_path, 6) + ["--set", "logging_steps=1"]
    assert main(args) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
    run = tmp_path / "template" / "tiny" / "st" / "tuned" / "seed-0"
    assert (run / "trainer" / "checkpoint-3").is_dir() and not (run / "done").exists()
    monkeypatch.undo()
    monkeypatch.setattr(experiments, "_found", lambda: found)
    assert main(args) == 0
    assert "resuming an interrupted run" in capsys.readouterr().err
    result = json.loads((run / "metrics.json").read_text())
    assert result["training"]["encoder"]["resumed_from"] == 3 and result["training"]["encoder"]["steps"] == 6
    assert result["seconds"]["interrupted"] > 0


def _stop_after(steps: int):
    """A trainer_callback factory that asks for a stop (as Ctrl-C does) once `steps` steps are done."""
    from transformers import TrainerCallback

    from spherekit.training import interrupt

    def factory():
        class Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step >= steps:
                    interrupt._requested.set()
                    control.should_save = control.should_training_stop = True
                return control

        return Stop()

    return factory
