"""scripts/gpu_check.py and scripts/gpu_papers.py, the parts that need no GPU and no build: the junit -> CSV rows,
resuming from a previous call's steps.json, the step list, and a plan for every paper's `paper` preset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
G = load_script("gpu_check")
P = load_script("gpu_papers")


def test_junit_rows(tmp_path):
    (tmp_path / "j.xml").write_text(
        '<testsuites><testsuite><testcase classname="tests.ops.test_a" name="test_x[1]" time="0.5"/>'
        '<testcase classname="tests.ops.test_a" name="test_y" time="1"><failure message="boom">trace</failure>'
        '</testcase><testcase classname="tests.ops.test_b" name="test_z" time="0"><skipped message="no GPU"/>'
        "</testcase></testsuite></testsuites>")
    rows = G.junit_rows(tmp_path / "j.xml")
    assert [(r["nodeid"], r["outcome"], r["message"]) for r in rows] == [
        ("tests/ops/test_a.py::test_x[1]", "passed", ""), ("tests/ops/test_a.py::test_y", "failed", "boom"),
        ("tests/ops/test_b.py::test_z", "skipped", "no GPU")]


def test_resume_skips_the_ok_steps(tmp_path):
    before, out = tmp_path / "before", tmp_path / "out"
    before.mkdir()
    (before / "steps.json").write_text(json.dumps({"steps": {
        "env": {"status": "ok", "seconds": 1.0, "note": ""}, "tests": {"status": "FAILED", "seconds": 9.0, "note": ""}}}))
    (before / "tests.csv").write_text("nodeid,outcome\n")
    c = G.Check(G.argparse.Namespace(rehearse=False, deadline_s=60.0, work=str(tmp_path / "work"), out=str(out)))
    assert list(G.resume_from(c, before)) == ["env"] and (out / "tests.csv").exists()


def test_unknown_step_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        G.main(["--steps", "env,warp", "--work", str(tmp_path), "--out", str(tmp_path / "out")])


def test_every_paper_preset_has_a_plan():
    from spherekit.experiments import get, names

    assert set(P.PLANS) == set(names())
    for name, plan in P.PLANS.items():
        exp = get(name)
        items = plan(exp.make_config("paper"), exp)
        assert items and all(w.backbone in P.ARCHS for w in items), name
        steps = [w.steps(30_000_000) if callable(w.steps) else w.steps for w in items]
        assert all(s >= 0 for s in steps) and sum(steps) > 0, name


def test_step_lists_and_limits():
    """The rehearsal compiles the kernels under both tritons and rehearses the GPU run (scripts/gpu_run.py), whose
    sweeps replaced gpu_tune.py; every step has a limit."""
    assert {"kernels", "kernels36", "run"} <= set(G.REHEARSAL_STEPS) and "tune" not in G.GPU_STEPS + G.REHEARSAL_STEPS
    assert G.GPU_TRITON == "3.6.0"
    assert set(G.GPU_STEPS) | set(G.REHEARSAL_STEPS) <= set(G.LIMIT_S) == set(G.REHEARSAL_LIMIT_S)
    assert not (ROOT / "scripts" / "gpu_tune.py").exists()
