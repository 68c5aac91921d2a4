"""scripts/gpu_check.py and scripts/gpu_papers.py, the parts that need no GPU and no build: the junit -> CSV rows,
resuming from a previous call's steps.json, the step list, and a plan for every paper's `paper` preset (each
paper's gpu.py, found through its plugin)."""

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
        "env": {"status": "ok", "seconds": 1.0, "note": ""},
        "tests": {"status": "FAILED", "seconds": 9.0, "note": ""}}}))
    (before / "tests.csv").write_text("nodeid,outcome\n")
    c = G.Check(G.argparse.Namespace(rehearse=False, deadline_s=60.0, work=str(tmp_path / "work"), out=str(out)))
    assert list(G.resume_from(c, before)) == ["env"] and (out / "tests.csv").exists()


def test_unknown_step_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        G.main(["--steps", "env,warp", "--work", str(tmp_path), "--out", str(tmp_path / "out")])


TEMPLATE = "spherekit.experiments._template.spec:EXPERIMENT"


def _check_plan(name, items):
    from spherekit.experiments.api.gpu_plan import ARCHS, KINDS, WorkItem

    assert items and all(isinstance(w, WorkItem) and w.backbone in ARCHS and w.kind in KINDS for w in items), name
    steps = [w.steps_for(30_000_000) for w in items]
    assert all(s >= 0 for s in steps) and sum(steps) > 0, name
    assert all(w.basis for w in items), name


def _paper_names_in_code(papers) -> set[str]:
    """The paper names that scripts/gpu_papers.py's code (its module docstring aside) spells out."""
    import ast

    tree = ast.parse((ROOT / "scripts" / "gpu_papers.py").read_text(encoding="utf-8"))
    words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value != ast.get_docstring(tree, clean=False)]
    return {p for p in papers if any(p in w for w in words) or any(p in t for t in texts)}


def test_every_discovered_gpu_module_plans_its_paper_preset(monkeypatch):
    """The script knows no paper: it finds each plan through the plugin (experiments/<name>/gpu.py), and every paper
    of this package has one; the template's gpu.py (the example) is found the same way once it is discovered."""
    import spherekit.experiments as experiments
    from spherekit.experiments import get, names

    package = ROOT / "python" / "spherekit" / "experiments"
    ours = {n for n in names() if (package / n / "spec.py").is_file()}
    assert ours and ours <= set(P.planned(names(), get))
    assert not _paper_names_in_code(ours)  # no per-paper code left in the script
    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)
    planned = P.planned(names(), get)
    assert "template" in planned
    for name in planned:
        _check_plan(name, P.plan_of(get(name)))


def test_a_paper_without_a_gpu_module_is_refused_by_name(tmp_path, capsys):
    import spherekit.experiments as experiments

    without = [n for n in experiments.names() if not experiments.get(n).has_module("gpu")]
    asked = without[0] if without else "nosuchpaper"
    assert P.main(["--out", str(tmp_path), "--rehearse", "--papers", asked]) == 2
    assert f"no GPU plan (experiments/<name>/gpu.py) for {asked}" in capsys.readouterr().out


def test_a_work_item_names_a_known_backbone_and_kind():
    from spherekit.experiments.api.gpu_plan import WorkItem

    with pytest.raises(ValueError, match="backbone 'nobody/model' has no architecture"):
        WorkItem("nobody/model", "train", 2, 8, 1, "basis")
    with pytest.raises(ValueError, match="kind must be one of"):
        WorkItem("all-MiniLM-L6-v2", "fly", 2, 8, 1, "basis")
    assert WorkItem("all-MiniLM-L6-v2", "train", 2, 8, lambda n: n // 10, "basis").steps_for(100) == 10


def test_step_lists_and_limits():
    """The rehearsal compiles the kernels under both tritons and rehearses the GPU run (scripts/gpu_run.py), whose
    sweeps replaced gpu_tune.py; every step has a limit."""
    assert {"kernels", "kernels36", "run"} <= set(G.REHEARSAL_STEPS) and "tune" not in G.GPU_STEPS + G.REHEARSAL_STEPS
    assert G.GPU_TRITON == "3.6.0"
    assert set(G.GPU_STEPS) | set(G.REHEARSAL_STEPS) <= set(G.LIMIT_S) == set(G.REHEARSAL_LIMIT_S)
    assert not (ROOT / "scripts" / "gpu_tune.py").exists()
