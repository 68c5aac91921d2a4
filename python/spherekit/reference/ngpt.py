"""Oracles for nGPT (Loshchilov et al. 2025; "Mapping the Circumplex of Affect" (arXiv:2601.06575), eq. 2/18): L2
normalisation, the geodesic residual update and weight renormalisation. Pure torch, fp32 math by default, gradients
by autograd.

Norm(x) = x / max(||x||_2, eps)   (torch.nn.functional.normalize semantics: a zero row maps to 0, never NaN)

The norm is robust: ||x|| = m ||x / m|| with m = max(1, max_j |x_j|), so no square overflows (in fp32 the plain
sum of squares does for |x_j| >= ~1.8e19). m is held constant under autograd (||x|| is homogeneous in it, so
the gradient is exact); rows with every |x_j| <= 1 are not scaled at all.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _normalize(x: Tensor, dim: int, eps: float) -> Tensor:
    """Norm(x) along dim with the robust norm: u = x / m, out = u / max(||u||, eps / m) = x / max(||x||, eps)."""
    m = x.detach().abs().amax(dim, keepdim=True).clamp_min(1)
    u = x / m
    return u / torch.linalg.vector_norm(u, dim=dim, keepdim=True).clamp_min(eps / m)


def l2_normalize(x: Tensor, dim: int = -1, eps: float = 1e-6, *, compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""out = Norm(x) along ``dim``, computed in ``compute_dtype``, returned in x.dtype.

    Forward, per slice along ``dim``:  r = 1 / max(||x||, eps),  out = r x   (||x|| robust, see the module doc).
    Gradient (upstream g):
        ||x|| >= eps:  dx = r (g - out <g, out>)      (projection onto the tangent space at out, scaled by r)
        ||x|| <  eps:  dx = g / eps                   (the clamp is constant; a zero row gets g / eps, no NaN)
    """
    return _normalize(x.to(compute_dtype), dim, eps).to(x.dtype)


def geodesic_residual(
    h: Tensor, f: Tensor, alpha: Tensor, eps: float = 1e-6, *, compute_dtype: torch.dtype = torch.float32
) -> Tensor:
    r"""nGPT residual step h <- Norm(Norm(h) + |alpha| * (Norm(f) - Norm(h))) over the last dimension.

    h, f: (..., d); alpha: per-feature step sizes broadcastable to (d,) (shape (), (1,) or (d,)). The step
    size is a = |alpha| (so a negative parameter entry acts like its absolute value). Returned in h.dtype.

    Forward, per row:
        hn = Norm(h),  fn = Norm(f),  y = hn + a * (fn - hn) = (1 - a) * hn + a * fn,  out = Norm(y).
    Gradient (upstream g; r_x = 1 / max(||x||, eps); a row with ||x|| < eps uses the Jacobian I / eps):
        g_y  = r_y (g - out <g, out>)
        g_hn = (1 - a) * g_y,      g_fn = a * g_y
        g_h  = r_h (g_hn - hn <g_hn, hn>),      g_f = r_f (g_fn - fn <g_fn, fn>)
        g_alpha = sign(alpha) * sum over rows of (fn - hn) * g_y   (summed to alpha's shape; sign(0) = 0)
    """
    a = alpha.to(compute_dtype).abs()
    hn = _normalize(h.to(compute_dtype), -1, eps)
    fn = _normalize(f.to(compute_dtype), -1, eps)
    y = hn + a * (fn - hn)
    return _normalize(y, -1, eps).to(h.dtype)


def renormalize(w: Tensor, dim: int, eps: float = 1e-6, *, compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""Out-of-place weight renormalisation: Norm(w) along ``dim`` (every row (dim=-1) or column (dim=0) of a
    matrix gets unit norm; zero slices stay 0). Returned in w.dtype. Same math as :func:`l2_normalize`;
    nGPT applies it to its weights after every optimiser step, without gradient."""
    return l2_normalize(w, dim=dim, eps=eps, compute_dtype=compute_dtype)
