"""Backend selection, in one place. The ONLY module that imports spherekit._C, spherekit._cuda and
spherekit.kernels (Triton); all three imports are lazy and never fail the package import.

Backends:
    "triton"     Triton kernels (CUDA tensors; CPU tensors too when TRITON_INTERPRET=1 is set, which
                 is how the kernels are tested on machines without a GPU)
    "cuda"       CUDA C++ kernels from spherekit._cuda (built with SPHEREKIT_WITH_CUDA=ON)
    "cpu"        chunked torch (BLAS for the products), or C++ loops from spherekit._C where an op has them
    "reference"  the materialising pure-torch oracle (for comparison; memory grows with B x N)
    "auto"       triton on CUDA tensors when Triton imports, else cpu. Never picks a less accurate path.

The environment variable SPHEREKIT_BACKEND replaces "auto" (an explicit backend= argument wins).
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

import torch

BACKENDS = ("auto", "triton", "cuda", "cpu", "reference")
ENV_VAR = "SPHEREKIT_BACKEND"


@functools.lru_cache(maxsize=None)
def _try_import(name: str) -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module(name), ""
    except Exception as exc:  # ImportError, or a broken toolchain raising at import
        return None, f"{type(exc).__name__}: {exc}"


def cpp_extension() -> ModuleType | None:
    """spherekit._C (C++ CPU loops), or None when the package was not built."""
    return _try_import("spherekit._C")[0]


def cuda_extension() -> ModuleType | None:
    """spherekit._cuda (CUDA C++ kernels), or None when it was not built or cannot load."""
    return _try_import("spherekit._cuda")[0]


def triton_interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def try_triton_kernels(module: str) -> tuple[ModuleType | None, str]:
    """(spherekit.kernels.<module>, "") when it imports, else (None, why it does not)."""
    return _try_import(f"spherekit.kernels.{module}")


def triton_kernels(module: str) -> ModuleType:
    """spherekit.kernels.<module>; raises a clear error when Triton is missing."""
    mod, err = try_triton_kernels(module)
    if mod is None:
        raise RuntimeError(f"backend 'triton' is unavailable: importing spherekit.kernels.{module} failed ({err})")
    return mod


def _triton_usable(device: torch.device) -> tuple[bool, str]:
    mod, err = _try_import("triton")
    if mod is None:
        return False, f"triton does not import ({err})"
    if device.type == "cuda":
        return True, f"triton {mod.__version__}"
    if device.type == "cpu" and triton_interpreting():
        return True, f"triton {mod.__version__} (interpreter, TRITON_INTERPRET=1)"
    return False, f"triton needs CUDA tensors (or TRITON_INTERPRET=1 for CPU tensors); got {device.type}"


def usable(backend: str, device: torch.device) -> tuple[bool, str]:
    """(usable, reason) for running `backend` on tensors of `device`."""
    if backend == "triton":
        return _triton_usable(device)
    if backend == "cuda":
        if device.type != "cuda":
            return False, f"the cuda backend needs CUDA tensors; got {device.type}"
        if cuda_extension() is None:
            return False, f"spherekit._cuda is not built or does not load ({_try_import('spherekit._cuda')[1]})"
        return True, "spherekit._cuda"
    if backend == "cpu":
        return True, "chunked torch (BLAS for the products); C++ loops from spherekit._C for the nGPT ops"
    if backend == "reference":
        return True, "pure torch (materialising)"
    raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")


def requested(backend: str) -> str:
    """The backend asked for: the argument, or SPHEREKIT_BACKEND when the argument is "auto"."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        backend = os.environ.get(ENV_VAR, "auto") or "auto"
        if backend not in BACKENDS:
            raise ValueError(f"environment variable {ENV_VAR} must be one of {BACKENDS}, got {backend!r}")
    return backend


@torch.compiler.assume_constant_result
def resolve(op: str, backend: str, device: torch.device, supported: tuple[str, ...]) -> str:
    """Pick the concrete backend for `op` on `device`; raise a clear error when it cannot run. Under torch.compile
    the choice is made once, at trace time (a constant of the graph: SPHEREKIT_BACKEND is read then)."""
    choice = requested(backend)
    if choice == "auto":
        if device.type == "cuda" and "triton" in supported and _triton_usable(device)[0]:
            return "triton"
        if device.type == "cuda" and "cuda" in supported and usable("cuda", device)[0]:
            return "cuda"
        return "cpu"
    if choice not in supported:
        raise ValueError(f"{op}: backend {choice!r} is not implemented; choose one of {supported} or 'auto'")
    ok, why = usable(choice, device)
    if not ok:
        raise RuntimeError(f"{op}: backend {choice!r} cannot run here: {why}")
    return choice


def report(device: torch.device | None = None) -> dict[str, tuple[bool, str]]:
    """Usability of every backend on `device` (CUDA when available, else CPU)."""
    if device is None:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return {name: usable(name, device) for name in BACKENDS if name != "auto"}


def build_info() -> dict[str, dict | str]:
    """build_info() of the compiled extensions, or why they are missing."""
    out: dict[str, dict | str] = {}
    for name in ("spherekit._C", "spherekit._cuda"):
        mod, err = _try_import(name)
        out[name] = dict(mod.build_info()) if mod is not None else f"not available ({err})"
    return out
