"""The "cpu" backend of soft_align: chunked over the batch (torch, BLAS for the products); M exists for one
chunk of pairs at a time and the backward recomputes it. All math is fp32 (fp64 for fp64 tokens).

Per pair (see spherekit.reference.sim_map.soft_align), over valid doc tokens j:
    z_ij = (M_ij - lam |i - j|) / tau,  lse_i = logsumexp_j z_ij,  A_ij = exp(z_ij - lse_i),
    s_i = sum_j A_ij M_ij,  score = (1/|Q|) sum_{i in Q} s_i
(a query without valid tokens scores 0; a row whose document has no valid token has s_i = 0 and no gradient; NaN
propagates)
Backward with upstream g and c_i = g [i in Q] / |Q|:
    G_ij = c_i A_ij (1 + (M_ij - s_i)/tau);  grad_q = G dn,  grad_d = G^T qn
    grad_lam = -(1/tau) sum_ij c_i A_ij |i-j| (M_ij - s_i);  grad_tau = -(1/tau) sum_ij c_i A_ij z_ij (M_ij - s_i)
The backward recomputes A from the stored lse, renormalises it and recomputes s_i from it, and uses
log A_ij = z_ij - lse_i in place of z_ij in grad_tau (equal, as sum_j A_ij (M_ij - s_i) = 0): in fp32 the
plain formula loses ~3 digits to cancellation at tau = 0.02.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .cpu_budget import row_chunks, rows_per_chunk
from ._maxsim_cpu import _math_dtype

NEG_INF = float("-inf")


def _pair_chunks(B: int, m: int, n: int):
    """Slices of pairs whose M, z, A and one temporary (4 m n elements a pair) fit the CPU budget."""
    return row_chunks(B, rows_per_chunk(4 * m * n))


def _positions(m: int, n: int, dt: torch.dtype, device) -> Tensor:
    return (torch.arange(m, device=device)[:, None] - torch.arange(n, device=device)[None, :]).abs().to(dt)


def _logits(qc, dc, dmc, lam, tau, pos):
    """-> (M, z) for a chunk; z is -inf at padding doc tokens."""
    sims = torch.bmm(qc, dc.transpose(1, 2))
    z = (sims - lam * pos) / tau
    return sims, z.masked_fill_(~dmc[:, None, :], NEG_INF)


def soft_align_fwd(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam: Tensor, tau: Tensor
                   ) -> tuple[Tensor, Tensor, Tensor]:
    """-> score (B,), lse (B, m), s (B, m) (fp32; fp64 for fp64 tokens)."""
    B, m, _ = q.shape
    n = d.shape[1]
    dt = _math_dtype(q)
    lam, tau = lam.to(dt), tau.to(dt)
    pos = _positions(m, n, dt, q.device)
    lse = torch.empty(B, m, dtype=dt, device=q.device)
    rows = torch.empty(B, m, dtype=dt, device=q.device)
    empty = ~d_mask.any(-1)  # (B,): documents without a valid token
    for sl in _pair_chunks(B, m, n):
        sims, z = _logits(q[sl].to(dt), d[sl].to(dt), d_mask[sl], lam, tau, pos)
        lse[sl] = torch.logsumexp(z, dim=-1)
        attn = z.sub_(_safe_lse(lse[sl], empty[sl])[:, :, None]).exp_()
        rows[sl] = (attn * sims).sum(-1)
    return _mean_over_query(rows, q_mask), lse, rows


def _safe_lse(lse: Tensor, empty: Tensor) -> Tensor:
    """lse with the rows of empty documents (lse = -inf, every z = -inf) at 0, so that A = exp(z - lse) is 0 there
    (s_i = 0, no gradient) instead of NaN; any other non-finite lse stays (NaN in, NaN out)."""
    return lse.masked_fill(empty[:, None], 0.0)


def _mean_over_query(rows: Tensor, q_mask: Tensor) -> Tensor:
    """(1/|Q|) sum_{i in Q} rows_i per pair, 0 for a query without valid tokens; padding rows never enter."""
    count = q_mask.sum(-1).to(rows.dtype)
    total = rows.masked_fill(~q_mask, 0.0).sum(-1)
    return torch.where(count > 0, total / count.clamp_min(1.0), torch.zeros_like(total))


def soft_align_bwd(grad: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam: Tensor, tau: Tensor,
                   lse: Tensor, s: Tensor, *, need_dq: bool = True, need_dd: bool = True
                   ) -> tuple[Tensor | None, Tensor | None, Tensor, Tensor]:
    """-> grad_q like q, grad_d like d (None where not needed), grad_lam (B,), grad_tau (B,)."""
    B, m, _ = q.shape
    n = d.shape[1]
    dt = _math_dtype(q)
    lam, tau = lam.to(dt), tau.to(dt)
    pos = _positions(m, n, dt, q.device)
    qm = q_mask.to(dt)
    count = qm.sum(-1, keepdim=True)
    coeff = grad.to(dt)[:, None] * qm / count.clamp_min(1.0)  # (B, m); 0 for a query without valid tokens
    empty = ~d_mask.any(-1)
    gq = torch.empty(q.shape, dtype=dt, device=q.device) if need_dq else None
    gd = torch.empty(d.shape, dtype=dt, device=q.device) if need_dd else None
    glam = torch.empty(B, dtype=dt, device=q.device)
    gtau = torch.empty(B, dtype=dt, device=q.device)
    for sl in _pair_chunks(B, m, n):
        qc, dc = q[sl].to(dt), d[sl].to(dt)
        sims, z = _logits(qc, dc, d_mask[sl], lam, tau, pos)
        logp = z.sub_(_safe_lse(lse[sl], empty[sl])[:, :, None])  # log A_ij (-inf at padding)
        attn = logp.exp()
        total = attn.sum(-1, keepdim=True)
        attn.div_(total.masked_fill_(total == 0, 1.0))  # exactly row-stochastic again (lse carries rounding)
        # sum_j A_ij (M_ij - s_i) = 0, so any per-row constant may be taken off a factor multiplying it: with
        # s_i recomputed from this A, and z_ij - lse_i = log A_ij in place of z_ij, nothing large cancels
        # (z is up to |M| / tau + lam n / tau; its rounding would otherwise be amplified by 1 / tau)
        centred = attn * (sims - (attn * sims).sum(-1, keepdim=True)) * coeff[sl, :, None]
        glam[sl] = -(centred * pos).sum((1, 2)) / tau
        gtau[sl] = -(centred * logp.masked_fill_(~d_mask[sl, None, :], 0.0)).sum((1, 2)) / tau
        del z, logp, sims
        gmap = attn.mul_(coeff[sl, :, None]).add_(centred.div_(tau))  # G_ij = c_i A_ij (1 + (M_ij - s_i)/tau)
        if gq is not None:
            gq[sl] = torch.bmm(gmap, dc)
        if gd is not None:
            gd[sl] = torch.bmm(gmap.transpose(1, 2), qc)
    return (None if gq is None else gq.to(q.dtype), None if gd is None else gd.to(d.dtype), glam, gtau)
