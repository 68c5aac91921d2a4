"""nGPT kernel-level entry points written as a torch composition (fp32 math; float64 inputs in float64, with
float64 alpha, norms and grad_alpha): the cpu backend's fallback when spherekit._C lacks the C++ loops, and its
path for float64. The launchers of spherekit.ops.contracts.NGPTBackend, like kernels/ngpt.py (the math is in
spherekit.reference.ngpt). Inputs are contiguous (R, d).
Norms are robust, as in the reference: ||x|| = m ||x / m||, m = max(1, max_j |x_j|) (no square overflows)."""

from __future__ import annotations

import torch
from torch import Tensor


def _math(x: Tensor) -> Tensor:
    """x in the math dtype: float64 stays, everything else is computed in float32."""
    return x if x.dtype == torch.float64 else x.float()


def _unit(x: Tensor, eps: float, dim: int = -1) -> tuple[Tensor, Tensor]:
    """(x / max(||x||, eps), ||x|| unclamped) along dim: u = x / m, out = u / max(||u||, eps / m), ||x|| = m ||u||."""
    m = x.abs().amax(dim, keepdim=True).clamp_min(1)
    u = x / m
    s = torch.linalg.vector_norm(u, dim=dim, keepdim=True)
    return u / torch.maximum(s, eps / m), (m * s).squeeze(dim)


def _project(g: Tensor, u: Tensor, n: Tensor, r: Tensor, eps: float) -> Tensor:
    """Backward of Norm at a row with norm n and unit vector u: r (g - u <g, u>), or g / eps when n < eps."""
    dot = (g * u).sum(-1, keepdim=True)
    keep = (n >= eps)[:, None].to(g.dtype)
    return r[:, None] * (g - keep * u * dot)


def geodesic_residual_fwd(h: Tensor, f: Tensor, alpha: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
    a = _math(alpha).abs()
    hn, nh = _unit(_math(h), eps)
    fn, nf = _unit(_math(f), eps)
    out, ny = _unit(torch.lerp(hn, fn, a), eps)
    return out.to(h.dtype), torch.stack([nh, nf, ny], dim=1)


def geodesic_residual_bwd(grad_out: Tensor, h: Tensor, f: Tensor, alpha: Tensor, norms: Tensor,
                          *, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    a = _math(alpha).abs()
    r = 1.0 / norms.clamp_min(eps)
    hn = _math(h) * r[:, 0:1]
    fn = _math(f) * r[:, 1:2]
    diff = fn - hn
    out = (hn + a * diff) * r[:, 2:3]
    g_y = _project(_math(grad_out), out, norms[:, 2], r[:, 2], eps)
    g_h = _project((1 - a) * g_y, hn, norms[:, 0], r[:, 0], eps)
    g_f = _project(a * g_y, fn, norms[:, 1], r[:, 1], eps)
    g_alpha = torch.sign(_math(alpha)) * (diff * g_y).sum(0)
    return g_h.to(h.dtype), g_f.to(f.dtype), g_alpha


def l2_normalize_fwd(x: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
    out, n = _unit(_math(x), eps)
    return out.to(x.dtype), n


def l2_normalize_bwd(grad_out: Tensor, x: Tensor, norms: Tensor, *, eps: float) -> Tensor:
    r = 1.0 / norms.clamp_min(eps)
    u = _math(x) * r[:, None]
    return _project(_math(grad_out), u, norms, r, eps).to(x.dtype)


def renormalize_(views: list[Tensor], *, eps: float) -> None:
    """Each view (outer, n, inner) is normalised in place over its middle axis."""
    for v in views:
        v.copy_(_unit(_math(v), eps, dim=1)[0])
