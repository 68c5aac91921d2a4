"""benches/triton_resources.py's readings of the compiled code (no compile here: tests/kernels/test_gpu_compile.py
compiles every kernel): the SASS instruction counts behind the wgmma / cp.async / spill columns, the list of kernels
every scenario must launch, and the launch records a pre-compile (scripts/gpu_run.py) turns into compile specs,
also under the interpreter."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("triton_resources", ROOT / "benches" / "triton_resources.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["triton_resources"] = module
    spec.loader.exec_module(module)
    return module


T = _load()

SASS = """
        /*0a30*/                   LDGSTS.E.BYPASS.LTC128B.128 [R5], desc[UR6][R2.64] ;
        /*0a40*/                   LDGDEPBAR ;
        /*0b10*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
        /*0b20*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;
        /*0c00*/                   STL.64 [R1+0x10], R8 ;
        /*0c10*/                   LDL.64 R8, [R1+0x10] ;
        /*0c20*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
"""


def test_sass_counts():
    counts = T.sass_counts(SASS)
    assert counts == dict(wgmma=2, mma=1, cp_async=1, tma=0, local=2, pipelined=True)
    assert T.sass_counts("FFMA R1, R2, R3, R4 ;")["pipelined"] is False


def test_every_kernel_has_a_scenario_and_a_missing_one_is_named():
    """With the GPU's launch configurations (the interpreter off, in a subprocess) every kernel of spherekit.kernels
    is launched by a scenario; a launch list without one names it."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, str(ROOT / "benches" / "triton_resources.py"), "--coverage"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and "launched by no scenario: none" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    kernels = T.kernel_functions()
    assert {"_info_nce_fwd_kernel", "_maxsim_fwd_kernel", "_geodesic_residual_bwd_kernel"} <= set(kernels)
    launches = T.record_launches(call for scenarios in T.SCENARIOS for call in scenarios(torch.float32))
    assert "_maxsim_fwd_kernel" not in T.uncovered(launches)
    without = [launch for launch in launches if launch[1].fn.__name__ != "_maxsim_fwd_kernel"]
    assert "_maxsim_fwd_kernel" in T.uncovered(without)


def test_interpreted_launches_become_compile_specs():
    """Under TRITON_INTERPRET=1 (as here) a launch is recorded as the JITFunction of the same source, nothing runs,
    and its spec names the module and kernel a spawned process compiles."""
    from spherekit.ops import geodesic_residual

    h, f = torch.randn(4, 64, requires_grad=True), torch.randn(4, 64, requires_grad=True)
    launches = T.record_launches([("ngpt", lambda: geodesic_residual(h, f, 0.1, backend="triton"))])
    assert launches and all(isinstance(fn, T.JITFunction) for _, fn, _, _ in launches)
    spec = T.launch_spec(launches[0], 90)
    assert spec["module"] == "spherekit.kernels.ngpt" and spec["name"].endswith("_kernel") and spec["arch"] == 90
    import pickle

    assert pickle.loads(pickle.dumps(spec))["signature"] == spec["signature"]  # travels to a spawned process
