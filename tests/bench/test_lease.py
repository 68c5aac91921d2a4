"""The GPU lease's bench presets (spherekit.bench.lease, scripts/gpu_check.sh): every family has a gpu-lease preset
whose predicted worst case fits its step's limit, its rehearsal is a CPU preset of the same providers, and the
rehearsal runs end to end in-process (the path the GPU run takes, at tiny sizes)."""

from __future__ import annotations

import csv

import pytest

from spherekit.bench import ceilings, lease
from spherekit.bench import sim_map as B


@pytest.mark.parametrize("family", list(lease.FAMILIES))
def test_gpu_lease_preset_fits_its_step(family):
    plan = lease.plan(family)
    assert plan["measurements"] >= 4 and plan["seconds"] <= plan["limit_s"], plan
    assert all(line.startswith("ok") for line in lease.check())


@pytest.mark.parametrize("family", list(lease.FAMILIES))
def test_rehearsal_is_the_same_grid_on_cpu(family):
    mod = lease.module(family)
    spec, small = mod.PRESETS[lease.PRESET], mod.rehearsal(mod.PRESETS[lease.PRESET])
    assert spec.device == "cuda" and small.device == "cpu" and small.repeats == 1
    if family != "verifier_train":
        providers = lambda preset: {t["provider"] for t in mod.build_tasks(preset)}  # noqa: E731
        assert providers(small) == providers(spec)
        assert len(mod.build_tasks(small)) == len(mod.build_tasks(spec))


def test_sim_map_rehearsal_runs(tmp_path, capsys):
    assert B.run("gpu-lease", out=tmp_path, isolate="none", progress=False, rehearse=True) == 0
    rows = list(csv.DictReader(open(tmp_path / "sim_map.csv")))
    status = {r["provider"]: r["status"] for r in rows}
    assert status["einsum"] == "ok" and status["spherekit-triton"] == "skipped"  # GPU-only providers skip on CPU
    assert "goals:" in capsys.readouterr().out


def test_ceilings_on_cpu(tmp_path):
    assert ceilings.main(["--device", "cpu", "--copy-mib", "4", "--n", "64", "--repeats", "2",
                          "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "ceilings.csv")))
    assert [r["ceiling"] for r in rows] == ["copy", "triad", "bf16_matmul"]  # each named apart
    assert all(float(r["value"]) > 0 for r in rows)
