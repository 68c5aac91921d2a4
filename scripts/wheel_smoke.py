"""Smoke test of an installed spherekit wheel, run outside the source tree (scripts/wheel_check.sh, cibuildwheel's
test-command): the package is the installed one, its C++ extension loads, the nGPT residual's C++ loops agree with
the pure-torch reference, and the process maps one OpenMP runtime (torch's libgomp, not a second copy).

    python scripts/wheel_smoke.py [--cuda]     # --cuda: the wheel must also hold spherekit._cuda (a +cuXY build)
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import spherekit
from spherekit import _backend
from spherekit.ops import geodesic_residual


def _openmp_runtimes() -> set[str]:
    """The OpenMP runtime files mapped into this process."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split()[-1] for line in maps if any(n in line for n in ("libgomp", "libiomp", "libomp"))}


def main(argv: list[str]) -> int:
    where = Path(spherekit.__file__).resolve()
    assert "site-packages" in where.parts, f"spherekit imported from {where}, not from an installed wheel"
    assert _backend.cpp_extension() is not None, f"spherekit._C does not load: {_backend.build_info()}"
    info = _backend.build_info()["spherekit._C"]
    assert info["openmp"], f"spherekit._C built without OpenMP: {info}"
    if "--cuda" in argv:
        assert _backend.cuda_extension() is not None, f"spherekit._cuda does not load: {_backend.build_info()}"

    torch.manual_seed(0)
    h, f = F.normalize(torch.randn(257, 384), dim=-1), torch.randn(257, 384)
    alpha = torch.full((384,), 0.05)
    out = geodesic_residual(h, f, alpha, backend="cpu")  # the C++ loops of spherekit._C (OpenMP)
    torch.testing.assert_close(out, geodesic_residual(h, f, alpha, backend="reference"))

    runtimes = _openmp_runtimes()
    assert len(runtimes) == 1, f"{len(runtimes)} OpenMP runtimes in one process: {sorted(runtimes)}"
    print(f"wheel ok: spherekit {importlib.metadata.version('spherekit')} at {where.parent}, _C {info['compiler']}, "
          f"OpenMP runtime {runtimes.pop()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
