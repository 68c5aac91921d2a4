"""Launchers for the CUDA nGPT kernels (spherekit._cuda, csrc/cuda/ngpt.cu), with the same kernel-level
interface as the Triton launchers in spherekit.kernels.ngpt (spherekit.ops.contracts.NGPTBackend):

    geodesic_residual_fwd(h, f, alpha, *, eps) -> out, norms (R, 3) fp32
    geodesic_residual_bwd(grad_out, h, f, alpha, norms, *, eps) -> grad_h, grad_f, grad_alpha (d,) fp32
    l2_normalize_fwd(x, *, eps) -> out, norms (R,) fp32
    l2_normalize_bwd(grad_out, x, norms, *, eps) -> grad_x
    renormalize_(views, *, eps)     in place, one launch; views are contiguous (outer, n, inner) tensors

Row tensors are (R, d) CUDA tensors of one float dtype with unit feature stride (row strides are passed
on); alpha and norms are fp32 contiguous. Outputs are allocated here with torch on the inputs' device and
the kernels run on torch's current stream. grad_alpha is deterministic: the kernel writes per-group partial
sums to a zero-filled (partials, d) fp32 workspace that a second kernel reduces in a fixed order.
The binary validates pointers, sizes and strides (ValueError naming the argument); this module checks
what only torch knows (device, dtype, shapes).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend
from ._dtype_codes import DTYPE_CODES, dtype_code

DEVICE_TYPE = "cuda"  # tests of the argument plumbing swap in "cpu" with a fake extension
ENTRY_POINTS = ("geodesic_residual_fwd", "geodesic_residual_bwd", "geodesic_residual_bwd_partials",
                "l2_normalize_fwd", "l2_normalize_bwd", "renormalize_")


def available() -> bool:
    """True when spherekit._cuda is built with the nGPT kernels."""
    ext = _backend.cuda_extension()
    return ext is not None and all(hasattr(ext, name) for name in ENTRY_POINTS)


def _ext():
    ext = _backend.cuda_extension()
    if ext is None or not all(hasattr(ext, name) for name in ENTRY_POINTS):
        raise RuntimeError("backend 'cuda' is unavailable: spherekit._cuda is not built or lacks the nGPT kernels "
                           "(build with SPHEREKIT_WITH_CUDA=ON)")
    return ext


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream


def _on_device(device: torch.device):
    """Make `device` current for the call (the binary queries the current device)."""
    return torch.cuda.device(device)


def _check_rows(name: str, x: Tensor, like: Tensor | None = None) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.device.type != DEVICE_TYPE:
        raise ValueError(f"{name}: expected a CUDA tensor, got device {x.device}")
    if x.dim() != 2 or (x.shape[1] > 1 and x.stride(1) != 1):
        raise ValueError(f"{name}: expected a 2-D (R, d) tensor with unit last-dim stride, got shape "
                         f"{tuple(x.shape)} strides {x.stride()}")
    if x.dtype not in DTYPE_CODES:
        raise TypeError(f"{name}: expected dtype in {list(DTYPE_CODES)}, got {x.dtype}")
    if like is not None and (x.shape != like.shape or x.dtype != like.dtype or x.device != like.device):
        raise ValueError(f"{name}: expected shape {tuple(like.shape)}, dtype {like.dtype} on {like.device}, got "
                         f"{tuple(x.shape)}, {x.dtype} on {x.device}")


def _check_fp32(name: str, x: Tensor, shape: tuple, device: torch.device) -> None:
    if x.dtype != torch.float32 or tuple(x.shape) != shape or not x.is_contiguous() or x.device != device:
        raise ValueError(f"{name}: expected a contiguous float32 tensor of shape {shape} on {device}, got "
                         f"{x.dtype} shape {tuple(x.shape)} contiguous={x.is_contiguous()} on {x.device}")


def _row_stride(x: Tensor) -> int:
    return x.stride(0) if x.shape[0] > 1 else x.shape[1]  # a single row may carry any stride


def geodesic_residual_fwd(h: Tensor, f: Tensor, alpha: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
    _check_rows("h", h)
    _check_rows("f", f, like=h)
    R, d = h.shape
    _check_fp32("alpha", alpha, (d,), h.device)
    out = torch.empty((R, d), dtype=h.dtype, device=h.device)
    norms = torch.empty((R, 3), dtype=torch.float32, device=h.device)
    if R == 0:
        return out, norms
    with _on_device(h.device):
        _ext().geodesic_residual_fwd(
            out=out.data_ptr(), stride_out=out.stride(0), norms=norms.data_ptr(), h=h.data_ptr(),
            stride_h=_row_stride(h), f=f.data_ptr(), stride_f=_row_stride(f), alpha=alpha.data_ptr(), rows=R, d=d,
            eps=float(eps), dtype=dtype_code(h.dtype), stream=_stream(h.device))
    return out, norms


def geodesic_residual_bwd(grad_out: Tensor, h: Tensor, f: Tensor, alpha: Tensor, norms: Tensor,
                          *, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    _check_rows("h", h)
    _check_rows("f", f, like=h)
    _check_rows("grad_out", grad_out, like=h)
    R, d = h.shape
    _check_fp32("alpha", alpha, (d,), h.device)
    _check_fp32("norms", norms, (R, 3), h.device)
    grad_h = torch.empty((R, d), dtype=h.dtype, device=h.device)
    grad_f = torch.empty((R, d), dtype=f.dtype, device=h.device)
    grad_alpha = torch.empty(d, dtype=torch.float32, device=h.device)
    if R == 0:
        return grad_h, grad_f, grad_alpha.zero_()
    ext = _ext()
    with _on_device(h.device):
        partials = int(ext.geodesic_residual_bwd_partials(rows=R, d=d))
        workspace = torch.zeros((partials, d), dtype=torch.float32, device=h.device)
        ext.geodesic_residual_bwd(
            grad_h=grad_h.data_ptr(), stride_grad_h=grad_h.stride(0), grad_f=grad_f.data_ptr(),
            stride_grad_f=grad_f.stride(0), grad_alpha=grad_alpha.data_ptr(), workspace=workspace.data_ptr(),
            partials=partials, grad_out=grad_out.data_ptr(), stride_grad_out=_row_stride(grad_out), h=h.data_ptr(),
            stride_h=_row_stride(h), f=f.data_ptr(), stride_f=_row_stride(f), alpha=alpha.data_ptr(),
            norms=norms.data_ptr(), rows=R, d=d, eps=float(eps), dtype=dtype_code(h.dtype),
            stream=_stream(h.device))
    return grad_h, grad_f, grad_alpha


def l2_normalize_fwd(x: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
    _check_rows("x", x)
    R, d = x.shape
    out = torch.empty((R, d), dtype=x.dtype, device=x.device)
    norms = torch.empty(R, dtype=torch.float32, device=x.device)
    if R == 0:
        return out, norms
    with _on_device(x.device):
        _ext().l2_normalize_fwd(
            out=out.data_ptr(), stride_out=out.stride(0), norms=norms.data_ptr(), x=x.data_ptr(),
            stride_x=_row_stride(x), rows=R, d=d, eps=float(eps), dtype=dtype_code(x.dtype),
            stream=_stream(x.device))
    return out, norms


def l2_normalize_bwd(grad_out: Tensor, x: Tensor, norms: Tensor, *, eps: float) -> Tensor:
    _check_rows("x", x)
    _check_rows("grad_out", grad_out, like=x)
    R, d = x.shape
    _check_fp32("norms", norms, (R,), x.device)
    grad_x = torch.empty((R, d), dtype=x.dtype, device=x.device)
    if R == 0:
        return grad_x
    with _on_device(x.device):
        _ext().l2_normalize_bwd(
            grad_x=grad_x.data_ptr(), stride_grad_x=grad_x.stride(0), grad_out=grad_out.data_ptr(),
            stride_grad_out=_row_stride(grad_out), x=x.data_ptr(), stride_x=_row_stride(x), norms=norms.data_ptr(),
            rows=R, d=d, eps=float(eps), dtype=dtype_code(x.dtype), stream=_stream(x.device))
    return grad_x


def renormalize_(views, *, eps: float) -> None:
    """In place: each contiguous 3-D view (outer, n, inner) <- Norm over its middle axis. One launch."""
    views = list(views)
    if not views:
        return
    device = views[0].device if isinstance(views[0], Tensor) else None
    for i, v in enumerate(views):
        if not isinstance(v, Tensor) or v.dim() != 3 or not v.is_contiguous():
            raise ValueError(f"views[{i}]: expected a contiguous 3-D (outer, n, inner) tensor, got "
                             + (f"shape {tuple(v.shape)} strides {v.stride()}" if isinstance(v, Tensor)
                                else type(v).__name__))
        if v.dtype not in DTYPE_CODES:
            raise TypeError(f"views[{i}]: expected dtype in {list(DTYPE_CODES)}, got {v.dtype}")
        if v.device != device or v.device.type != DEVICE_TYPE:
            raise ValueError(f"views[{i}]: expected a CUDA tensor on {device}, got {v.device}")
    views = [v for v in views if v.numel() > 0]
    if not views:
        return
    workspace = torch.empty(8 * len(views), dtype=torch.int64, device=device)
    with _on_device(device):
        _ext().renormalize_(
            ptrs=[v.data_ptr() for v in views], outer=[v.shape[0] for v in views], n=[v.shape[1] for v in views],
            inner=[v.shape[2] for v in views], dtypes=[dtype_code(v.dtype) for v in views],
            workspace=workspace.data_ptr(), workspace_len=workspace.numel(), eps=float(eps), stream=_stream(device))
