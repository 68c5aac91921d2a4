"""The "cpu" backend of sim_map: chunked over the batch (torch, BLAS for the products). The forward writes
each chunk's channels straight into the output map (B, m, n, C) or patch sequence (B, P, p*p*C); the
backward recomputes M per chunk (nothing but the inputs is saved). All math is fp32 (fp64 for fp64 tokens).

Forward per pair (see spherekit.reference.simmap.sim_map): M' = clamp(M, -1, 1) if clip; channels
sim = M', rowmax_i = max_{j in D} M'_ij, colmax_j = max_{i in Q} M'_ij, all 0 off the valid entries.
Backward with upstream G (B, m, n, C), zeroed off the valid entries:
    dM' = G_sim + scatter of sum_j G_rowmax[i, j] to (i, argmax_j M'_ij)
               + scatter of sum_i G_colmax[i, j] to (argmax_i M'_ij, j)
    dM  = dM' [-1 <= M <= 1] if clip,   grad_q = dM dn,   grad_d = dM^T qn
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _maxsim_cpu
from ._maxsim_cpu import _chunks, _math_dtype

NEG_INF = float("-inf")


def _rows_per_chunk(m: int, n: int, C: int, patch: int | None) -> int:
    p = patch or 1
    per_pair = (-(-m // p) * p) * (-(-n // p) * p) * C + 3 * m * n
    return max(1, _maxsim_cpu.CHUNK_ELEMENTS // per_pair)


def grid(m: int, n: int, patch: int) -> tuple[int, int]:
    return -(-m // patch), -(-n // patch)


def _sims(q, d, b0, b1, dt):
    qc, dc = q[b0:b1].to(dt), d[b0:b1].to(dt)
    return qc, dc, torch.bmm(qc, dc.transpose(1, 2))


def sim_map_fwd(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, patch: int | None, channels: tuple[str, ...],
                clip: bool, out_dtype: torch.dtype) -> Tensor:
    """-> (B, m, n, C) map, or (B, ceil(m/p) * ceil(n/p), p * p * C) patches, in out_dtype (padding 0)."""
    B, m, _ = q.shape
    n, C = d.shape[1], len(channels)
    dt = _math_dtype(q)
    if patch is None:
        out = torch.empty(B, m, n, C, dtype=out_dtype, device=q.device)
    else:
        gm, gn = grid(m, n, patch)
        out = torch.empty(B, gm * gn, patch * patch * C, dtype=out_dtype, device=q.device)
    for b0, b1 in _chunks(B, _rows_per_chunk(m, n, C, patch)):
        _, _, sims = _sims(q, d, b0, b1, dt)
        if clip:
            sims.clamp_(-1.0, 1.0)
        valid = q_mask[b0:b1, :, None] & d_mask[b0:b1, None, :]
        bc = b1 - b0
        if patch is None:
            dest = out[b0:b1]
        else:
            dest = torch.zeros(bc, gm * patch, gn * patch, C, dtype=dt, device=q.device)
        masked = sims.masked_fill(~valid, NEG_INF) if ("rowmax" in channels or "colmax" in channels) else None
        for c, name in enumerate(channels):
            if name == "sim":
                ch = sims
            elif name == "rowmax":
                ch = masked.amax(-1, keepdim=True).expand_as(sims)
            else:  # colmax
                ch = masked.amax(-2, keepdim=True).expand_as(sims)
            dest[:, :m, :n, c] = torch.where(valid, ch, 0.0)
        if patch is not None:
            out[b0:b1].view(bc, gm, gn, patch, patch, C).copy_(
                dest.view(bc, gm, patch, gn, patch, C).permute(0, 1, 3, 2, 4, 5))
    return out


def _grad_map(grad_out: Tensor, b0: int, b1: int, m: int, n: int, C: int, patch: int | None, dt) -> Tensor:
    """The upstream gradient of a chunk as a (bc, m, n, C) map (patches folded back, padding cut)."""
    g = grad_out[b0:b1].to(dt)
    if patch is None:
        return g
    gm, gn = grid(m, n, patch)
    bc = b1 - b0
    g = g.view(bc, gm, gn, patch, patch, C).permute(0, 1, 3, 2, 4, 5).reshape(bc, gm * patch, gn * patch, C)
    return g[:, :m, :n]


def sim_map_bwd(grad_out: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, patch: int | None,
                channels: tuple[str, ...], clip: bool, need_dq: bool = True, need_dd: bool = True
                ) -> tuple[Tensor | None, Tensor | None]:
    """-> grad_q like q, grad_d like d (None where not needed)."""
    B, m, _ = q.shape
    n, C = d.shape[1], len(channels)
    dt = _math_dtype(q)
    gq = torch.empty(q.shape, dtype=dt, device=q.device) if need_dq else None
    gd = torch.empty(d.shape, dtype=dt, device=q.device) if need_dd else None
    for b0, b1 in _chunks(B, _rows_per_chunk(m, n, C, patch)):
        qc, dc, raw = _sims(q, d, b0, b1, dt)
        sims = raw.clamp(-1.0, 1.0) if clip else raw
        valid = q_mask[b0:b1, :, None] & d_mask[b0:b1, None, :]
        g = _grad_map(grad_out, b0, b1, m, n, C, patch, dt)
        gmap = torch.zeros_like(sims)
        masked = sims.masked_fill(~valid, NEG_INF) if ("rowmax" in channels or "colmax" in channels) else None
        for c, name in enumerate(channels):
            gc = g[..., c].masked_fill(~valid, 0.0)
            if name == "sim":
                gmap += gc
            elif name == "rowmax":
                gmap.scatter_add_(2, masked.argmax(-1, keepdim=True), gc.sum(-1, keepdim=True))
            else:  # colmax
                gmap.scatter_add_(1, masked.argmax(-2, keepdim=True), gc.sum(-2, keepdim=True))
        if clip:
            gmap.mul_((raw >= -1.0) & (raw <= 1.0))
        if gq is not None:
            gq[b0:b1] = torch.bmm(gmap, dc)
        if gd is not None:
            gd[b0:b1] = torch.bmm(gmap.transpose(1, 2), qc)
    return (None if gq is None else gq.to(q.dtype), None if gd is None else gd.to(d.dtype))
