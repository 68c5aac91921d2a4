"""The sim_map benchmark: every provider computes the same scores, the tiny preset end to end (in-process and
through the CLI), the CSV it appends, and the goal lines computed from rows."""

from __future__ import annotations

import csv

import pytest
import torch

from spherekit.bench import _harness as H
from spherekit.bench import sim_map as B
from spherekit.cli import main
from spherekit.reference import sim_map as ref


@pytest.mark.parametrize("task", [t for t in B.build_tasks(B.PRESETS["tiny"])], ids=lambda t: f"{t['workload']}-"
                         f"{t['provider']}")
def test_providers_compute_the_same_scores(task):
    """Each provider's output (scores, or the loss for training) against the fp32 oracle on the same inputs."""
    workload = B.WORKLOADS[task["workload"]]
    x = workload.make_inputs(task, "cpu")
    step = workload.providers[task["provider"]](task, x)
    if task["mode"] == "fwd":
        with torch.no_grad():
            got = step()
        expected = ref.maxsim(x["q"], x["q_mask"], x["d"], x["d_mask"], normalize=False)
    else:
        got = step()
        expected = B._ce(ref.maxsim(x["q"], x["q_mask"], x["d"], x["d_mask"]))
        got.backward()
        assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in x["leaves"])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_tiny_preset_in_process(tmp_path, capsys):
    assert B.run("tiny", out=tmp_path, isolate="none", progress=False) == 0
    rows = list(csv.DictReader(open(tmp_path / "sim_map.csv")))
    assert len(rows) == len(B.build_tasks(B.PRESETS["tiny"]))
    assert list(rows[0].keys()) == B.COLUMNS
    assert {r["status"] for r in rows} == {"ok"}
    assert all(float(r["p20_ms"]) <= float(r["median_ms"]) <= float(r["p80_ms"]) for r in rows)
    printed = capsys.readouterr().out
    assert "goals:" in printed and "N/A" in printed  # the tiny preset has no k=10,000 rows


def test_cli_appends_rows(tmp_path):
    args = ["bench", "sim-map", "--preset", "tiny", "--out", str(tmp_path), "--isolate", "none", "--no-progress",
            "--providers", "einsum,spherekit-cpu"]
    assert main(args) == 0
    assert main(args) == 0
    rows = list(csv.DictReader(open(tmp_path / "sim_map.csv")))
    assert len(rows) == 2 * 4 and {r["provider"] for r in rows} == {"einsum", "spherekit-cpu"}


def test_unknown_provider_and_static_skips():
    with pytest.raises(ValueError, match="unknown providers"):
        B.run("tiny", providers=["pylate"], progress=False)
    settings = H.Settings(device="cpu")
    task = dict(workload="rerank", provider="spherekit-triton")
    assert "needs CUDA" in B.static_skip(task, settings)
    assert "no spherekit-ragged-cpu provider" in B.static_skip(dict(workload="train", provider="spherekit-ragged-cpu"),
                                                                 settings)


def _row(provider, ms, mib, k=10000, workload="rerank"):
    return dict(provider=provider, workload=workload, k=k, status="ok", median_ms=ms, peak_extra_mib=mib)


def test_goal_checks():
    rows = [_row("einsum", 100.0, 500.0), _row("spherekit-cpu", 90.0, 20.0)]
    lines = B.goal_checks(rows, "cpu")
    assert lines[0].startswith("PASS") and "25.0x less" in lines[0] and lines[1].startswith("PASS")
    rows[1].update(median_ms=120.0, peak_extra_mib=30.0)
    assert [line[:4] for line in B.goal_checks(rows, "cpu")] == ["FAIL", "FAIL"]
    assert B.goal_checks(rows[:1], "cpu")[0].startswith("N/A")
    gpu = [dict(_row("einsum", 10.0, 1.0), device_median_ms=9.0), dict(_row("spherekit-triton", 2.0, 1.0),
                                                                      device_median_ms=1.5)]
    lines = B.goal_checks(gpu, "cuda")  # >= 5x in device time (6x here), >= 4x in wall time (5x)
    assert [ln[:4] for ln in lines] == ["PASS", "PASS"] and "device time" in lines[0] and "6.0x" in lines[0]
    assert "wall time" in lines[1] and "5.0x faster" in lines[1]
    gpu[1]["device_median_ms"] = 2.0  # 4.5x: misses the device-time goal only
    assert [ln[:4] for ln in B.goal_checks(gpu, "cuda")] == ["FAIL", "PASS"]
    del gpu[0]["device_median_ms"]
    assert B.goal_checks(gpu, "cuda")[0].startswith("N/A")  # never a wall time compared with a device time
