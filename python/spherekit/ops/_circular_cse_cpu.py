"""The "cpu" backend of circular_cse: chunked torch, BLAS for the products, O(rows x B) peak memory.

See spherekit.reference.circular_cse for the math. With x_ij = <e_i, e_j>, c_ij = cos(theta_i - theta_j)
= cos_i cos_j + sin_i sin_j (exactly 1 when y_i = y_j) and m the margin:

    r_ij = sign(x_ij - c_ij) max(0, |x_ij - c_ij| - m)   if y_i = y_j,   x_ij - c_ij otherwise;  r_ii = 0
    forward, per row:  rows_i = sum_{j != i} r_ij^2
    backward, upstream w_i on rows_i:  dE_i = sum_{j != i} 2 r_ij (w_i + w_j) e_j     (x and r are symmetric)

All math is fp32 whatever the input dtype (fp64 for fp64 inputs); the forward keeps only the per-row sums. A scalar
loss with the gradient takes the chunked one-pass path (spherekit.ops._gram_chunked), whose torch row kernel is
circular_cse_rows here.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._dispatch import stat_dtype
from .cpu_budget import row_chunks, rows_per_chunk


def _residuals(x: Tensor, labels: Tensor, cs: Tensor, margin: float, sl: slice) -> Tensor:
    """r (R, B) in place over the dots x of the rows sl, with the diagonal at 0."""
    y_r = labels[sl]
    same = y_r[:, None] == labels[None, :]
    r = x.sub_(torch.mm(cs[sl], cs.T).masked_fill_(same, 1.0))  # x - cos(theta_i - theta_j)
    if margin > 0:
        shrunk = r.abs().sub_(margin).clamp_(min=0.0).mul_(torch.sign(r))
        r.copy_(torch.where(same, shrunk, r))
    rows = torch.arange(r.shape[0], device=r.device)
    r[rows, rows + sl.start] = 0.0
    return r


def circular_cse_fwd(e: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *, margin: float) -> Tensor:
    """-> rows (B,) fp32 (fp64 for fp64 inputs): sum_{j != i} l_ij."""
    e32 = e.to(stat_dtype(e.dtype))
    cs = torch.stack((row_cos, row_sin), dim=1).to(e32.dtype)
    B = e.shape[0]
    out = torch.empty(B, dtype=e32.dtype, device=e.device)
    for sl in row_chunks(B, rows_per_chunk(B)):
        r = _residuals(torch.mm(e32[sl], e32.T), labels, cs, margin, sl)
        out[sl] = torch.linalg.vecdot(r, r, dim=1)
    return out


def circular_cse_bwd(grad_rows: Tensor, e: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *,
                     margin: float) -> Tensor:
    """-> dE (B, d) fp32 (fp64 for fp64 inputs)."""
    e32 = e.to(stat_dtype(e.dtype))
    cs = torch.stack((row_cos, row_sin), dim=1).to(e32.dtype)
    w = grad_rows.to(e32.dtype)
    B = e.shape[0]
    de = torch.empty_like(e32)
    for sl in row_chunks(B, rows_per_chunk(B)):
        r = _residuals(torch.mm(e32[sl], e32.T), labels, cs, margin, sl)
        r.mul_(w[sl, None] + w[None, :])
        torch.mm(r, e32, out=de[sl])
    return de.mul_(2.0)


def circular_cse_rows(S: Tensor, sl: slice, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *,
                      margin: float) -> tuple[Tensor, None]:
    """The row kernel of the chunked one-pass path (spherekit.ops._gram_chunked), in torch: S (R, B) holds the dots
    of the rows sl with every embedding and is overwritten with G' = r, the residuals (symmetric: the orchestrator
    takes dE' = 2 r E); returns (the rows' sum of r_ij^2, None: no temperature)."""
    cs = torch.stack((row_cos, row_sin), dim=1).to(S.dtype)
    r = _residuals(S, labels, cs, margin, sl)
    return torch.vdot(r.view(-1), r.view(-1)), None
