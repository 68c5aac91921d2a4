"""scripts/gpu_run.py, the prepared GPU run, without a GPU: its plan fits one device call, the sweep candidates and
their patching, resuming from a previous call's rows, and a short rehearsal in-process (CPU, the interpreter). The
whole rehearsal runs in CI as scripts/gpu_check.sh --rehearse's step "run"."""

from __future__ import annotations

import json
import types

import pytest

from tests._scripts import load_script

R = load_script("gpu_run")


def test_the_plan_fits_one_call_with_room_for_the_check_steps():
    bounds = R.predict(R.GPU)
    assert set(bounds) == set(R.STEPS) - {"check"}
    assert sum(bounds.values()) + 60 <= R.DEADLINE_S <= 540  # >= 60 s for gpu_check; 60 s under the 10-minute call
    assert bounds["goals"] > 2 * 45  # two torch.compile providers at least


def test_candidates_default_first_and_tune_candidates_read(monkeypatch):
    fake = types.SimpleNamespace(TUNE_CANDIDATES=[{"BLOCK_N": 64}, {}, {"num_warps": 8}])
    monkeypatch.setattr(R, "kernel_module", lambda name: fake if name == "maxsim" else None)
    assert R.candidates("maxsim") == [{}, {"BLOCK_N": 64}, {"num_warps": 8}]
    assert R.candidates("ngpt") == [{}] + R.FALLBACK_CANDIDATES["ngpt"]  # no TUNE_CANDIDATES: the fallback list
    assert R.config_text({"BLOCK_N": 64, "num_warps": 8}) == "BLOCK_N:64,num_warps:8"


def test_patched_merges_into_config_and_restores():
    module = types.SimpleNamespace(_config=lambda D: dict(BLOCK=D, num_warps=4))
    original = module._config
    with R.patched(module, {"num_warps": 8}):
        assert module._config(32) == dict(BLOCK=32, num_warps=8)
    assert module._config is original
    with R.patched(module, {}):
        assert module._config is original


def test_sweep_plan_covers_workspace_accumulator_and_each_kernel_module():
    plan = R.sweep_plan(R.GPU)
    options = [t for f, _, k, _, tasks in plan if k is None for t in tasks]
    assert {(t["workspace_bytes"], t["dc_accumulator"]) for t in options} == {
        (ws, acc) for ws in R.GPU.workspaces for acc in R.DC_ACCUMULATORS}
    assert {k for _, _, k, o, _ in plan if k} >= {"maxsim", "ngpt"} and all(o for _, _, k, o, _ in plan if k)
    assert len([p for p in R.sweep_plan(R.REHEARSAL) if p[2] == "ngpt"]) == R.REHEARSAL.candidates - 1


def test_rehearsal_steps_write_rows_and_resume_skips_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPHEREKIT_TRITON_INTERPRET", "1")
    out, work = tmp_path / "out", tmp_path / "work"
    args = ["--rehearse", "--steps", "env,correctness,ceilings", "--out", str(out), "--work", str(work)]
    assert R.main(args) == 0
    steps = json.loads((out / "steps.json").read_text())["steps"]
    assert [name for name, r in steps.items() if r["status"] == "ok"] == ["env", "correctness", "ceilings"]
    from spherekit.bench.results import read_rows

    rows = read_rows(out / "rows.csv")
    checks = [r for r in rows if r["family"] == "check"]
    assert checks and all(r["status"] == "ok" and float(r["error"]) <= float(r["bound"]) for r in checks)
    assert {r["mode"] for r in checks} == set(R.OPS)
    assert {r["mode"] for r in rows if r["provider"] == "peak"} == {"copy", "triad", "bf16_matmul"}
    assert [r["mode"] for r in rows if r["provider"] == "clocks"] == ["start", "end"]
    capsys.readouterr()
    assert R.main(args + ["--resume", str(out)]) == 0  # every step ok in the earlier call: nothing measured again
    assert "ok in an earlier call" in capsys.readouterr().out
    assert len([r for r in read_rows(out / "rows.csv") if r["family"] == "check"]) == len(checks)


def test_resume_keeps_measured_rows_and_reruns_the_deadline_cut_ones(tmp_path):
    from spherekit.bench._harness import DEADLINE_NOTE, row_writer, run_facts

    before = tmp_path / "before"
    before.mkdir()
    _, emit = row_writer(before / "rows.csv", run_facts("gpu-run", "cpu"), params=("B",))
    emit(dict(family="contrastive", provider="st-mnrl", mode="fwd+bwd", B=8, dtype="float32"),
         dict(status="ok", median_ms=1.0))
    emit(dict(family="contrastive", provider="reference", mode="fwd+bwd", B=8, dtype="float32"),
         dict(status="skipped", note=DEADLINE_NOTE))
    (before / "steps.json").write_text(json.dumps({"steps": {"env": {"status": "ok"}, "goals": {"status": "FAILED"}}}))
    run = R.Run(R.argparse.Namespace(rehearse=True, deadline_s=60.0, work=str(tmp_path / "w"), out=str(tmp_path / "o")))
    R.resume_from(run, before)
    assert list(run.records) == ["env"]  # goals runs again
    assert run.done == {("contrastive", "st-mnrl", "fwd+bwd", "float32", "B=8")}  # the cut row runs again
    assert (tmp_path / "o" / "rows.csv").exists()


def test_unknown_step_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        R.main(["--steps", "env,warp", "--work", str(tmp_path), "--out", str(tmp_path / "out")])
