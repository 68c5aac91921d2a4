"""The nGPT benchmark: the tiny preset end to end (in-process), the CSV it appends, the bandwidth columns and
the goal lines computed from rows."""

from __future__ import annotations

import csv

import pytest

from spherekit.bench import ngpt as B
from spherekit.bench.results import read_rows
from spherekit.cli import main


def test_bytes_moved():
    task = dict(provider="spherekit-cpu", mode="fwd+bwd", rows=16384, d=1024, dtype="float32")
    assert B.bytes_moved(task) == 8 * 16384 * 1024 * 4 + 12 * 16384
    assert B.bytes_moved({**task, "mode": "fwd", "dtype": "bfloat16"}) == 3 * 16384 * 1024 * 2 + 12 * 16384
    assert B.bytes_moved({**task, "mode": "bwd"}) == 5 * 16384 * 1024 * 4 + 12 * 16384  # grad_out, h, f; grad_h, grad_f
    assert B.bytes_moved(dict(provider="peak", mode="copy", elements=1000, dtype="float32")) == 2 * 1000 * 4
    assert B.bytes_moved(dict(provider="peak", mode="triad", elements=1000, dtype="float32")) == 3 * 1000 * 4


def test_build_tasks_peak_first_and_filtered():
    tasks = B.build_tasks(B.PRESETS["gpu"], providers=["eager", "spherekit-cuda"])
    assert [t["provider"] for t in tasks[:2]] == ["peak", "peak"]
    assert {t["provider"] for t in tasks[2:]} == {"eager", "spherekit-cuda"}
    assert len(tasks) == 2 + 2 * 3 * 3 * 2 * 3  # providers x rows x d x dtypes x modes


def _row(provider, ms, mode="fwd+bwd", rows=16384, d=1024, dtype="float32", gbps=None):
    return dict(provider=provider, median_ms=ms, mode=mode, rows=rows, d=d, dtype=dtype, status="ok", gb_per_s=gbps)


def test_goal_checks_cpu():
    rows = [_row("eager", 100.0), _row("spherekit-cpu", 40.0)]
    assert B.goal_checks(rows, "cpu")[0].startswith("PASS") and "2.5x" in B.goal_checks(rows, "cpu")[0]
    rows[1]["median_ms"] = 60.0
    assert B.goal_checks(rows, "cpu")[0].startswith("FAIL")
    assert B.goal_checks(rows[:1], "cpu")[0].startswith("N/A")


def test_goal_checks_gpu():
    big = dict(rows=65536, d=4096, dtype="bfloat16")
    rows = [_row("peak", 1.0, mode="copy", gbps=3000.0), _row("eager", 10.0, **big), _row("compile", 3.0, **big),
            _row("spherekit-cuda", 2.0, gbps=2500.0, **big)]
    lines = B.goal_checks(rows, "cuda")
    cuda = [ln for ln in lines if "spherekit-cuda" in ln]
    assert len(cuda) == 3 and all(ln.startswith("PASS") for ln in cuda), lines
    assert any(ln.startswith("N/A") and "spherekit-triton" in ln for ln in lines)
    rows[-1].update(median_ms=3.2, gb_per_s=1000.0)  # 33% of peak, 3.1x eager, slower than compile
    cuda = [ln for ln in B.goal_checks(rows, "cuda") if "spherekit-cuda" in ln]
    assert [ln[:4] for ln in cuda] == ["FAIL", "PASS", "FAIL"]
    rows[-1].update(median_ms=4.0)  # 2.5x eager
    assert [ln[:4] for ln in B.goal_checks(rows, "cuda") if "spherekit-cuda" in ln][1] == "FAIL"


def test_tiny_preset_end_to_end(tmp_path, capsys):
    assert main(["bench", "ngpt", "--preset", "tiny", "--out", str(tmp_path), "--isolate", "none",
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "goals:" in text and "spherekit-cpu" in text and "% copy" in text
    with open(tmp_path / "ngpt.csv") as fh:
        assert next(csv.reader(fh)) == B.CSV_COLUMNS
    rows = read_rows(tmp_path / "ngpt.csv")  # params (rows, d / elements) and metrics as keys of their own
    assert len(rows) == len(B.build_tasks(B.PRESETS["tiny"]))
    assert all(r["status"] == "ok" for r in rows), [r["note"] for r in rows if r["status"] != "ok"]
    peak = [float(r["gb_per_s"]) for r in rows if (r["provider"], r["mode"]) == ("peak", "copy")][-1]  # not triad
    for r in rows:
        assert float(r["median_ms"]) > 0 and float(r["p20_ms"]) <= float(r["median_ms"]) <= float(r["p80_ms"])
        sizes = {k: int(r[k]) for k in ("rows", "d", "elements") if k in r}
        assert int(r["bytes_moved"]) == B.bytes_moved(dict(r, **sizes))
        # the CSV rounds median_ms to 3 decimals (0.0005 ms): GB/s must lie within what that rounding allows
        median, moved = float(r["median_ms"]), int(r["bytes_moved"])
        lo, hi = moved / (median + 5e-4) / 1e6, moved / max(median - 5e-4, 1e-9) / 1e6
        assert lo * (1 - 5e-3) - 1e-3 <= float(r["gb_per_s"]) <= hi * (1 + 5e-3) + 1e-3, (r, lo, hi)
        if r["provider"] != "peak":
            assert float(r["peak_gb_per_s"]) == pytest.approx(peak, rel=1e-3, abs=1e-3)
    assert {(r["provider"], r["mode"]) for r in rows} >= {("eager", "bwd"), ("spherekit-cpu", "fwd+bwd"),
                                                         ("peak", "copy"), ("peak", "triad")}
