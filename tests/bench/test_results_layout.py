"""The one CSV row layout: params / metrics cells read back as keys, and files of the older per-family layouts
(contrastive-shaped B, N, d, k columns; ngpt's and sim_map's own) read, upgraded and appended to with every
measured number identical."""

from __future__ import annotations

import csv
import io

import pytest

from spherekit.bench.results import (COLUMNS, LEGACY_LAYOUTS, RENAMED_FAMILIES, append_rows, parse_fields, read_rows,
                                     set_fields, upgrade_file)

# rows as the committed benches/results/*.csv had them before the one layout (header = LEGACY_LAYOUTS[...])
_V1 = """\
2026-11-21T11:43:36+00:00,2026-11-21T11:43:35+00:00,cpu-small,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,contrastive,reference,fwd,1024,1024,384,0,float32,7,5.470,5.421,5.605,17.027,ok,
2026-11-21T11:47:07+00:00,2026-11-21T11:47:07+00:00,cpu-goal,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,contrastive,reference,fwd+bwd,65536,65536,384,0,float32,0,,,,,skipped,predicted 129.1 GiB > mem limit 20.0 GiB
2026-11-21T12:37:06+00:00,2026-11-21T12:37:00+00:00,supervised,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,supervised,sincere:reference,fwd+bwd,4096,4096,384,0,float32,5,693.580,653.684,763.288,495.941,ok,
2026-11-21T15:00:28+00:00,2026-11-21T15:00:14+00:00,cpu-small,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,verifier_train,paper,train-e2e,4,5,384,1,float32,2,1651.280,1617.801,1684.760,716.449,ok,samples_per_s=2.4; encoder=minilm f4=class (1761537 params) q_len=16 d_len=64
"""
_NGPT = """\
2026-11-21T14:12:37+00:00,2026-11-21T14:12:35+00:00,cpu,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,ngpt,peak,copy,67108864,67108864,1,0,float32,5,32.004,31.989,37.015,0.000,536870912,16.775,16.775,ok,busy machine: load 3.6 on 2 cores
2026-11-21T14:13:30+00:00,2026-11-21T14:12:35+00:00,cpu,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,6.2.0,ngpt,spherekit-cpu,fwd+bwd,8192,8192,768,0,float32,5,36.011,27.466,43.896,72.195,201424896,5.593,20.144,ok,busy machine: load 3.1 on 2 cores
"""
_SIM_MAP = """\
2026-11-21T14:02:41+00:00,2026-11-21T14:02:32+00:00,cpu,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,simmap,rerank,einsum,fwd,1,1000,32,180,128,float32,5,241.091,232.107,244.187,44.137,ok,busy machine: load 6.8 on 2 cores
2026-11-21T14:07:22+00:00,2026-11-21T14:02:32+00:00,cpu,AMD EPYC (2 cores),2.13.0+cpu,3.7.1,0.1.0,simmap,train,spherekit-cpu,fwd+bwd,64,32,32,180,128,float32,5,2693.076,2291.151,2860.409,381.727,ok,busy machine: load 7.5 on 2 cores
"""
LEGACY = {"v1": _V1, "v1-ngpt": _NGPT, "v1-sim_map": _SIM_MAP}
# columns of the old layouts whose values now live under another name in the params cell, per (layout, family)
RENAMED = {("v1-ngpt", "peak"): {"B": "elements"}, ("v1-ngpt", "op"): {"B": "rows"},
           ("v1", "verifier_train"): {"N": "candidates", "d": "width", "k": "near_misses"}}
DROPPED = {("v1-ngpt", "peak"): {"N": "B", "d": "1", "k": "0"}, ("v1-ngpt", "op"): {"N": "B", "k": "0"},
           ("v1", "supervised"): {"N": "B", "k": "0"}}  # constants, or copies of another column


def _write(path, layout):
    path.write_text(",".join(LEGACY_LAYOUTS[layout]) + "\n" + LEGACY[layout])
    return list(csv.DictReader(io.StringIO(path.read_text())))


def _check_same_cells(old_rows, new_rows, layout):
    assert len(new_rows) == len(old_rows)
    for old, new in zip(old_rows, new_rows):
        kind = old["family"] if layout == "v1" else ("peak" if old["provider"] == "peak" else "op")
        renamed, dropped = RENAMED.get((layout, kind), {}), DROPPED.get((layout, kind), {})
        for col, value in old.items():
            if col in dropped:  # what it was a constant or a copy of
                expected = dropped[col]
                assert value == (old[expected] if expected in old else expected), (col, old)
                assert col not in parse_fields(new["params"])
                continue
            if col == "family":  # a renamed family reads under today's name
                value = RENAMED_FAMILIES.get(value, value)
            assert new[renamed.get(col, col)] == value, (layout, col, old, new)  # the same string, not re-rounded
        assert new["device"] == "cpu"


@pytest.mark.parametrize("layout", sorted(LEGACY))
def test_legacy_rows_read_back_with_identical_cells(tmp_path, layout):
    path = tmp_path / "old.csv"
    old = _write(path, layout)
    _check_same_cells(old, read_rows(path), layout)


@pytest.mark.parametrize("layout", sorted(LEGACY))
def test_upgrade_keeps_every_number(tmp_path, layout):
    path = tmp_path / "old.csv"
    old = _write(path, layout)
    before = read_rows(path)
    assert upgrade_file(path) is True
    assert next(csv.reader(io.StringIO(path.read_text()))) == COLUMNS
    after = read_rows(path)
    assert after == before
    _check_same_cells(old, after, layout)
    assert upgrade_file(path) is False  # already in COLUMNS: untouched


def test_append_to_a_legacy_file_upgrades_it_first(tmp_path):
    path = tmp_path / "contrastive.csv"
    old = _write(path, "v1")
    row = set_fields(dict(family="contrastive", provider="spherekit-cpu", mode="fwd", B=64, N=64, d=32, k=0,
                          median_ms=1.25, status="ok"), ("B", "N", "d", "k"))
    append_rows(path, [row])
    rows = read_rows(path)
    _check_same_cells(old, rows[:-1], "v1")
    assert rows[-1]["params"] == "B=64 N=64 d=32 k=0" and rows[-1]["median_ms"] == "1.250"
    assert (rows[-1]["B"], rows[-1]["N"], rows[-1]["d"], rows[-1]["k"]) == ("64", "64", "32", "0")


def test_params_and_metrics_cells():
    row = set_fields(dict(provider="peak", elements=1 << 20, gb_per_s=16.7751, bytes_moved=None), ("elements",),
                     ("bytes_moved", "gb_per_s", "peak_gb_per_s"))
    assert row["params"] == "elements=1048576" and row["metrics"] == "bytes_moved= gb_per_s=16.775"
    assert parse_fields(row["metrics"]) == {"bytes_moved": "", "gb_per_s": "16.775"}
    with pytest.raises(ValueError, match="CSV columns"):
        set_fields(dict(mode="fwd"), ("mode",))


def test_other_tables_read_as_they_are(tmp_path):
    path = tmp_path / "reproduce.csv"
    path.write_text("recipe,eval_s\nspherekit,8.504\n")
    assert read_rows(path) == [{"recipe": "spherekit", "eval_s": "8.504"}]


def test_committed_results_read_in_the_one_layout():
    """benches/results/<family>.csv of every harness family: COLUMNS, and the family's sizes under their names."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benches" / "results"
    expected = {"contrastive": {"B", "N", "d", "k"}, "supervised": {"B", "d"}, "sim_map": {"workload", "B", "k", "d"},
                "verifier_train": {"B", "candidates", "width", "near_misses"}, "ngpt": {"rows", "d"}}
    for family, names in expected.items():
        path = folder / f"{family}.csv"
        if not path.exists():
            pytest.skip(f"{path} is not in this checkout")
        assert next(csv.reader(io.StringIO(path.read_text()))) == COLUMNS, family
        rows = read_rows(path)
        assert rows and {r["family"] for r in rows} == {family}
        ops = [r for r in rows if r["provider"] != "peak"]
        assert all(names <= set(parse_fields(r["params"])) for r in ops), family


def test_legacy_simmap_rows_read_as_sim_map(tmp_path):
    path = tmp_path / "old.csv"
    _write(path, "v1-sim_map")
    assert {row["family"] for row in read_rows(path)} == {"sim_map"}


def test_the_layout_before_the_device_columns_reads_and_upgrades(tmp_path):
    """'v2' (COLUMNS without device_median_ms, device_p20_ms, device_p80_ms): every cell kept, device time empty."""
    from spherekit.bench.results import DEVICE_COLUMNS

    old = LEGACY_LAYOUTS["v2"]
    assert [c for c in COLUMNS if c not in DEVICE_COLUMNS] == old
    cells = ["2026-11-26T16:11:32+00:00", "2026-11-26T16:11:28+00:00", "gpu-lease", "NVIDIA H200; Xeon (16 cores)",
             "cuda", "2.11.0", "3.6.0", "0.1.0", "6.0.1", "contrastive", "reference", "fwd+bwd",
             "B=4096 N=4096 d=768 k=0", "bfloat16", "10", "2.416", "2.346", "2.423", "344.079", "", "ok", ""]
    path = tmp_path / "h200_bench.csv"
    path.write_text(",".join(old) + "\n" + ",".join(cells) + "\n")
    (row,) = read_rows(path)
    assert [row[c] for c in old] == cells and all(row[c] == "" for c in DEVICE_COLUMNS) and row["B"] == "4096"
    assert upgrade_file(path) and read_rows(path) == [row]
