"""What every op does between validating its arguments and calling a backend: pick the backend for the inputs'
dtype, turn autocast off for its own computation, and the dtype its CPU math runs in.

float64: the Triton and CUDA kernels are fp32 inside, so "auto" picks "cpu" for float64 inputs (which computes in
float64, so that the op can be gradchecked) and an explicit "triton" / "cuda" raises naming the argument.
Autocast: an op chooses its dtypes itself (fp32 statistics, the loss in fp32); under torch.autocast it runs with
autocast off and learns the autocast dtype, in which the GPU paths may run their products.
"""

from __future__ import annotations

import contextlib

import torch

from .. import _backend
from . import checks as C


def stat_dtype(dtype: torch.dtype) -> torch.dtype:
    """The math dtype of the CPU paths and of the statistics: float64 for float64 inputs, else float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def resolve(op: str, backend: str, device: torch.device, dtype: torch.dtype, supported: tuple[str, ...],
            arg: str, what: str) -> str:
    """spherekit._backend.resolve, with the float64 rule above (`arg` names the float64 input, `what` what the
    kernel backends take instead)."""
    if dtype == torch.float64 and _backend.requested(backend) == "auto":
        return "cpu"
    chosen = _backend.resolve(op, backend, device, supported)
    if dtype == torch.float64:
        C.refuse_float64(chosen, arg, what)
    return chosen


@contextlib.contextmanager
def autocast_off(device: torch.device):
    """Autocast off for the block; yields the autocast dtype that was active for the device type, or None."""
    kind = device.type
    if kind not in ("cpu", "cuda") or not torch.is_autocast_enabled(kind):
        yield None
        return
    dtype = torch.get_autocast_dtype(kind)
    with torch.autocast(kind, enabled=False):
        yield dtype
