"""Adapter from torch tensors to the raw-pointer nGPT entry points of spherekit._C (C++, csrc/cpu/ngpt.h):
allocates the outputs and passes data_ptr()s, sizes and a dtype code; the binary validates pointers and sizes.
Inputs arrive contiguous, on the CPU, with the dtypes the public ops validated. (The CUDA path has its own
launchers, spherekit.ops._ngpt_cuda: the _cuda bindings take row strides, a workspace and the stream.)"""

from __future__ import annotations

import torch
from torch import Tensor

from ._dtype_codes import DTYPE_CODES
ENTRY_POINTS = ("geodesic_residual_fwd", "geodesic_residual_bwd", "l2_normalize_fwd", "l2_normalize_bwd",
                "renormalize_")


def has_ngpt(ext) -> bool:
    """True when the extension module has every nGPT entry point."""
    return ext is not None and all(hasattr(ext, name) for name in ENTRY_POINTS)


class CppNgpt:
    """The nGPT launchers (spherekit.ops.contracts.NGPTBackend) on top of spherekit._C."""

    def __init__(self, ext):
        self.ext = ext

    def geodesic_residual_fwd(self, h: Tensor, f: Tensor, alpha: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
        rows, d = h.shape
        out = torch.empty_like(h)
        norms = torch.empty((rows, 3), dtype=torch.float32, device=h.device)
        self.ext.geodesic_residual_fwd(out.data_ptr(), norms.data_ptr(), h.data_ptr(), f.data_ptr(),
                                       alpha.data_ptr(), rows, d, DTYPE_CODES[h.dtype], float(eps))
        return out, norms

    def geodesic_residual_bwd(self, grad_out: Tensor, h: Tensor, f: Tensor, alpha: Tensor, norms: Tensor,
                              *, eps: float) -> tuple[Tensor, Tensor, Tensor]:
        rows, d = h.shape
        grad_h = torch.empty_like(h)
        grad_f = torch.empty_like(f)
        grad_alpha = torch.zeros(d, dtype=torch.float32, device=h.device)  # the kernels accumulate into it
        self.ext.geodesic_residual_bwd(grad_h.data_ptr(), grad_f.data_ptr(), grad_alpha.data_ptr(),
                                       grad_out.data_ptr(), h.data_ptr(), f.data_ptr(), alpha.data_ptr(),
                                       norms.data_ptr(), rows, d, DTYPE_CODES[h.dtype], float(eps))
        return grad_h, grad_f, grad_alpha

    def l2_normalize_fwd(self, x: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
        rows, d = x.shape
        out = torch.empty_like(x)
        norms = torch.empty(rows, dtype=torch.float32, device=x.device)
        self.ext.l2_normalize_fwd(out.data_ptr(), norms.data_ptr(), x.data_ptr(), rows, d,
                                  DTYPE_CODES[x.dtype], float(eps))
        return out, norms

    def l2_normalize_bwd(self, grad_out: Tensor, x: Tensor, norms: Tensor, *, eps: float) -> Tensor:
        rows, d = x.shape
        grad_x = torch.empty_like(x)
        self.ext.l2_normalize_bwd(grad_x.data_ptr(), grad_out.data_ptr(), x.data_ptr(), norms.data_ptr(),
                                  rows, d, DTYPE_CODES[x.dtype], float(eps))
        return grad_x

    def renormalize_(self, views: list[Tensor], *, eps: float) -> None:
        if not views:
            return
        self.ext.renormalize_([v.data_ptr() for v in views], [v.shape[0] for v in views], [v.shape[1] for v in views],
                              [v.shape[2] for v in views], [DTYPE_CODES[v.dtype] for v in views], float(eps))
