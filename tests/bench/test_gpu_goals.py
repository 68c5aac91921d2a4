"""The GPU goal lines of the bench families, computed from rows as a GPU run writes them: device time where measured
(the line names it), ceilings from the same run's peak rows (never a datasheet figure), sentence-transformers' MNRL
under bf16 autocast as the InfoNCE baseline, the copy bandwidth (not triad) for nGPT."""

from __future__ import annotations

from spherekit.bench import contrastive as C
from spherekit.bench import ngpt as N

SHAPE = dict(B=16384, N=16384, d=768, k=0, dtype="bfloat16", mode="fwd+bwd", status="ok")


def _info(provider, device_ms, mib, **extra):
    return dict(SHAPE, provider=provider, median_ms=device_ms * 1.1, device_median_ms=device_ms,
                peak_extra_mib=mib, **extra)


def _peak(mode, **metric):
    return dict(provider="peak", mode=mode, status="ok", dtype="float32", **metric)


def test_info_nce_goals_against_mnrl_autocast_in_device_time():
    rows = [_peak("bf16_matmul", tflops=760.0), _peak("copy", gb_per_s=4100.0),
            _info("spherekit-triton", 2.5, 80.0, matmul_flops=3 * 2 * 16384 ** 2 * 768),
            _info("st-mnrl-autocast", 9.7, 4241.0), _info("st-mnrl", 32.0, 4289.0)]
    lines = C.gpu_goal_checks(rows)
    time_line, mem_line, flops_line = lines[:3]
    assert time_line.startswith("PASS") and "st-mnrl-autocast" in time_line and "device time" in time_line
    assert "3.88x" in time_line
    assert mem_line.startswith("PASS") and "1.89%" in mem_line
    useful = 3 * 2 * 16384 ** 2 * 768 / 2.5e-3 / 1e12  # 495 TFLOP/s = 65% of 760
    assert flops_line.startswith("PASS") and f"{useful:.0f} TFLOP/s" in flops_line and "measured in this run" in \
        flops_line and "3.00 x 2BNd" in flops_line
    assert any(line.startswith("INFO  vs st-mnrl ") for line in lines)
    assert any("measured / predicted" in line for line in lines)  # both ceilings of this run: the roofline


def test_info_nce_goals_fail_and_name_what_is_missing():
    rows = [_info("spherekit-triton", 4.0, 120.0), _info("st-mnrl-autocast", 9.7, 4241.0)]
    lines = C.gpu_goal_checks(rows)
    assert [line[:4] for line in lines[:3]] == ["FAIL", "FAIL", "N/A "]  # 2.4x; 2.8%; no ceiling in this run
    assert "no bf16_matmul ceiling measured in this run" in lines[2] and "not counted" in lines[2]
    assert C.gpu_goal_checks(rows[1:])[0].startswith("N/A")
    sweep = dict(_info("spherekit-triton", 1.0, 50.0), workspace_bytes=1 << 24)  # a sweep row is no goal row
    assert C.gpu_goal_checks([sweep, rows[1]])[0].startswith("N/A")


def _ngpt(provider, device_ms, gbps):
    return dict(provider=provider, mode="fwd+bwd", rows=65536, d=4096, dtype="bfloat16", status="ok",
                median_ms=device_ms + 0.1, device_median_ms=device_ms, gb_per_s=gbps)


def test_ngpt_bandwidth_against_copy_not_triad_and_auto():
    rows = [_peak("copy", gb_per_s=4100.0), _peak("triad", gb_per_s=4300.0), _ngpt("eager", 27.0, 160.0),
            _ngpt("compile", 3.5, 1230.0), _ngpt("spherekit-triton", 1.2, 3580.0), _ngpt("spherekit-cuda", 2.0, 2150.0),
            _ngpt("spherekit-auto", 1.21, 3550.0)]
    assert N.peak_bandwidth(rows) == 4100.0 and N.peak_bandwidth(rows, "triad") == 4300.0
    lines = N.gpu_goal_checks(rows)
    triton = [ln for ln in lines if "spherekit-triton" in ln and ln[:4] in ("PASS", "FAIL")]
    assert triton[0].startswith("PASS") and "87% of the copy bandwidth" in triton[0] and "triad" in triton[0]
    assert all("device time" in ln for ln in triton)
    assert any(ln.startswith("PASS") and "auto" in ln for ln in lines)
    rows[-1]["device_median_ms"] = 2.0  # auto took the slower backend
    assert any(ln.startswith("FAIL") and "auto" in ln for ln in N.gpu_goal_checks(rows))
