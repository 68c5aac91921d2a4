"""Every Triton kernel compiles for Hopper (sm_90) as its launchers launch it, on a machine without a GPU, within the
H100's limits (benches/triton_resources.py --check; bf16 also without register spills). The interpreter used by the
other tests cannot catch GPU-only compile errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_triton_kernels_compile_for_sm90(dtype):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, str(ROOT / "benches" / "triton_resources.py"), "--arch", "90",
                           "--dtype", dtype, "--check"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" sm_90 ") >= 60, proc.stdout
    for kernel in ("_sim_map_rowstat_kernel", "_geodesic_residual_bwd_chunked_kernel", "ALL_PAIRS+SWAP"):
        assert kernel in proc.stdout
