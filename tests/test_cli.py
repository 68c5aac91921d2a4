"""The `spherekit` command: info, and the contrastive benchmark end to end on a tiny preset."""

from __future__ import annotations

import csv

import pytest

from spherekit.bench import contrastive as C
from spherekit.bench.results import COLUMNS, read_rows
from spherekit.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_info_runs(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "spherekit" in out and "torch" in out and "backends" in out


def test_bench_contrastive_tiny_end_to_end(tmp_path, capsys):
    args = ["bench", "contrastive", "--preset", "tiny", "--out", str(tmp_path), "--isolate", "none", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "goals:" in out and "st-cached-mnrl" in out
    with open(tmp_path / "contrastive.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
    rows = read_rows(tmp_path / "contrastive.csv")  # the params cell's B, N, d, k as keys of their own
    tasks = C.build_tasks(C.PRESETS["tiny"])
    assert len(rows) == len(tasks)
    assert {r["provider"] for r in rows} == {"reference", "st-mnrl", "st-cached-mnrl", "spherekit-cpu"}
    for r in rows:
        assert r["family"] == "contrastive" and r["machine"] and r["torch"] and r["timestamp"]
        if r["provider"] == "st-cached-mnrl" and r["mode"] == "bwd":
            assert r["status"] == "skipped"
            continue
        assert r["status"] == "ok", r
        assert float(r["p20_ms"]) <= float(r["median_ms"]) <= float(r["p80_ms"])
        assert float(r["peak_extra_mib"]) >= 0
        expected_n = int(r["B"]) * (1 + int(r["k"])) if r["provider"].startswith("st-") else int(r["B"])
        assert int(r["N"]) == expected_n
    for kind in ("time", "memory"):
        png = tmp_path / f"contrastive_{kind}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        png.unlink()
    # a second run appends under the same header, and the plot command works on its own
    assert main(args + ["--providers", "spherekit-cpu", "--no-plot"]) == 0
    assert len(read_rows(tmp_path / "contrastive.csv")) == len(tasks) + 12
    assert main(["bench", "plot", "contrastive", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "contrastive_time.png").read_bytes()[:8] == PNG_MAGIC


def test_bench_contrastive_in_worker_processes(tmp_path, capsys):
    args = ["bench", "contrastive", "--preset", "tiny", "--out", str(tmp_path), "--providers", "spherekit-cpu",
            "--no-progress", "--no-plot"]
    assert main(args) == 0
    rows = read_rows(tmp_path / "contrastive.csv")
    assert len(rows) == 12 and {r["status"] for r in rows} == {"ok"}


def test_bench_plot_without_csv_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="contrastive.csv"):
        main(["bench", "plot", "contrastive", "--out", str(tmp_path)])


def test_unknown_preset_and_provider_are_rejected(tmp_path):
    with pytest.raises(SystemExit):
        main(["bench", "contrastive", "--preset", "nope"])
    with pytest.raises(ValueError, match="unknown providers"):
        main(["bench", "contrastive", "--preset", "tiny", "--providers", "nope", "--out", str(tmp_path)])


def test_bench_verifier_train_forwards_its_options(monkeypatch):
    from spherekit.bench import verifier_throughput

    seen = []
    monkeypatch.setattr(verifier_throughput, "main", lambda argv: seen.append(argv) or 0)
    assert main(["bench", "verifier-train", "--preset", "tiny", "--max-batch", "4"]) == 0
    assert seen == [["--preset", "tiny", "--max-batch", "4"]]
