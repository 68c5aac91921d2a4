"""Every Triton kernel compiles for Hopper (sm_90) at its shipped GPU configuration, on a machine
without a GPU. The interpreter used by the other tests cannot catch GPU-only compile errors."""

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
                           "--dtype", dtype], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("sm_90") >= 11, proc.stdout
