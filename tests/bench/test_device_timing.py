"""What the harness adds for GPU rows, checked on CPU where it can be: the compiling first call apart from the
warm-ups, >= 10 repeats for sub-ms rows, back-to-back timing, the profiler's matmul FLOPs, the deadline of an
in-process run, the device-time columns (empty on CPU) and the goal time a line names."""

from __future__ import annotations

import time

import pytest
import torch

from spherekit.bench import _harness as H
from spherekit.bench.flops import MatmulCounter, matmul_flops
from spherekit.bench.results import COLUMNS, DEVICE_COLUMNS, goal_time


def _settings(**kw):
    return H.Settings(**{**dict(repeats=3, warmup=1, min_repeats=1, budget_s=10.0), **kw})


def test_sub_ms_rows_get_ten_repeats_and_slow_rows_their_budget():
    calls = []
    fast = H.measure(lambda: calls.append(1), _settings(warmup=2))
    assert fast["repeats"] == H.SUB_MS_REPEATS == 10 and len(calls) == 2 + 10 + 1
    assert fast["warmups"] == 2 and fast["first_call_ms"] >= 0
    slow = H.measure(lambda: time.sleep(0.02), _settings(budget_s=0.05, repeats=10, min_repeats=2))
    assert slow["repeats"] == 2 and "repeats cut to 2" in slow["note"]  # never below min_repeats, cut by budget


def test_cpu_rows_have_wall_time_only():
    result = H.measure(lambda: torch.ones(10).sum(), _settings())
    assert not any(k in result for k in DEVICE_COLUMNS)
    assert set(DEVICE_COLUMNS) < set(COLUMNS)
    assert goal_time(result) == (pytest.approx(result["median_ms"]), "wall time")
    assert goal_time(dict(result, device_median_ms=0.5)) == (0.5, "device time")
    t, which = goal_time(result, "device time")  # forced: never a wall time standing in for a device time
    assert which == "device time" and t != t


def test_back_to_back_calls_and_their_preconditions():
    calls = []
    result = H.measure(lambda: calls.append(1), _settings(repeats=2), back_to_back=7)
    assert result["back_to_back_calls"] == 7 and result["back_to_back_wall_ms"] >= 0
    assert "back_to_back_ms" not in result  # device time only on CUDA
    assert len(calls) == 1 + 10 + 7 + 1
    with pytest.raises(ValueError, match="without setup"):
        H.measure(lambda: None, _settings(), setup=lambda: None, back_to_back=2)


def test_matmul_flops_from_the_profiler():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    acc = torch.zeros(16, 4)
    x, y = torch.randn(3, 8, 16), torch.randn(3, 16, 5)
    with MatmulCounter() as counted:
        torch.mm(a, b, out=torch.empty(8, 4))  # 2 * 8 * 16 * 4
        acc.addmm_(a.T, torch.randn(8, 4))     # in place: 2 * 16 * 8 * 4 (torch.utils.flop_counter misses it)
        a @ b                                   # matmul -> mm, counted once
        torch.bmm(x, y)                         # 2 * 3 * 8 * 16 * 5
        torch.nn.functional.linear(a, b.T)      # linear -> addmm or mm
    assert counted.flops == 4 * (2 * 8 * 16 * 4) + 2 * 3 * 8 * 16 * 5
    assert matmul_flops([]) == 0


def test_measure_counts_the_probe_calls_flops():
    a, b = torch.randn(32, 64), torch.randn(64, 16)
    result = H.measure(lambda: a @ b, _settings(), count_flops=True)
    assert result["matmul_flops"] == 2 * 32 * 64 * 16


def test_deadline_stops_starting_measurements_in_process(monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    tasks = [dict(family="fake", provider=p, mode="fwd", B=1, N=1, d=1, k=0, dtype="float32") for p in ("a", "b")]
    out = []
    H.run_tasks("_fake_family", tasks, H.Settings(isolate="none"), lambda t, r: out.append(r), progress=False,
                deadline=time.monotonic() - 1)
    assert [r["status"] for r in out] == ["skipped", "skipped"] and out[0]["note"] == H.DEADLINE_NOTE
    out.clear()
    H.run_tasks("_fake_family", tasks, H.Settings(isolate="none"), lambda t, r: out.append(r), progress=False,
                deadline=time.monotonic() + 60)
    assert [r["status"] for r in out] == ["ok", "ok"]
    assert "_fake_family" in sys.modules


def test_row_writer_puts_the_harness_metrics_in_the_metrics_cell(tmp_path):
    from spherekit.bench.results import read_rows

    rows, emit = H.row_writer(tmp_path / "rows.csv", H.run_facts("test", "cpu"), params=("B",), metrics=("x",))
    emit(dict(family="f", provider="p", mode="fwd", B=4, dtype="float32"),
         dict(status="ok", median_ms=1.0, x=2, first_call_ms=3.0, warmups=2, matmul_flops=64))
    (row,) = read_rows(tmp_path / "rows.csv")
    assert row["params"] == "B=4" and (row["x"], row["warmups"], row["matmul_flops"]) == ("2", "2", "64")
    assert row["device_median_ms"] == "" and rows[0]["first_call_ms"] == 3.0
