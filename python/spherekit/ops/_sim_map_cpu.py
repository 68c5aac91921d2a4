"""The "cpu" backend of sim_map: chunked over the pairs (torch, BLAS for the products). The forward writes
each chunk's channels straight into the output map (P, m, n, C) or patch sequence (P, gm gn, p*p*C); the
backward recomputes M per chunk (nothing but the inputs is saved). All math is fp32 (fp64 for fp64 tokens).

Layouts: paired (pair b = query b with document b, P = B) or all pairs (pair a * Bd + b = query a with
document b, P = Bq Bd; a chunk holds whole query rows, and its maps come from one einsum over the Bq-chunk and
all Bd documents: no token sequence is copied per pair).

Forward per pair (see spherekit.reference.sim_map.sim_map): M' = clamp(M, -1, 1) if clip; channels
sim = M', rowmax_i = max_{j in D} M'_ij, colmax_j = max_{i in Q} M'_ij, all 0 off the valid entries.
Backward with upstream G (P, m, n, C), zeroed off the valid entries:
    dM' = G_sim + scatter of sum_j G_rowmax[i, j] to (i, argmax_j M'_ij)
               + scatter of sum_i G_colmax[i, j] to (argmax_i M'_ij, j)
    dM  = dM' [-1 <= M <= 1] if clip,   grad_q_a = sum_b dM_ab dn_b,   grad_d_b = sum_a dM_ab^T qn_a
"""

from __future__ import annotations

import torch
from torch import Tensor

from .cpu_budget import row_chunks, rows_per_chunk
from ._maxsim_cpu import _math_dtype

NEG_INF = float("-inf")


def _pairs_per_chunk(m: int, n: int, C: int, patch: int | None) -> int:
    """Pairs per chunk: a pair takes its C channels on the padded patch grid plus 3 m n elements of work buffers."""
    p = patch or 1
    return rows_per_chunk((-(-m // p) * p) * (-(-n // p) * p) * C + 3 * m * n)


def grid(m: int, n: int, patch: int) -> tuple[int, int]:
    return -(-m // patch), -(-n // patch)


def _pair_chunks(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, all_pairs: bool, per_chunk: int, dt):
    """Yield (p0, p1, a0, a1, qc, dc, sims (p1 - p0, m, n) unclipped, valid (p1 - p0, m, n)): pairs p0..p1 of the
    layout, built from queries a0..a1 (paired: documents a0..a1; all pairs: every document)."""
    B = q.shape[0]
    bd = d.shape[0] if all_pairs else 1
    for sl in row_chunks(B, max(1, per_chunk // bd)):
        qc = q[sl].to(dt)
        if all_pairs:
            dc = d.to(dt)
            sims = torch.einsum("aih,bjh->abij", qc, dc).flatten(0, 1)
            valid = (q_mask[sl, None, :, None] & d_mask[None, :, None, :]).flatten(0, 1)
        else:
            dc = d[sl].to(dt)
            sims = torch.bmm(qc, dc.transpose(1, 2))
            valid = q_mask[sl, :, None] & d_mask[sl, None, :]
        yield sl.start * bd, sl.stop * bd, sl.start, sl.stop, qc, dc, sims, valid


def sim_map_fwd(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, patch: int | None,
                channels: tuple[str, ...], clip: bool, out_dtype: torch.dtype, all_pairs: bool = False
                ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """-> (out, rowmax, rowarg, colmax, colarg): out the (P, m, n, C) map, or (P, ceil(m/p) * ceil(n/p), p * p * C)
    patches, in out_dtype (padding 0); P = B paired, Bq * Bd for all pairs (pair a * Bd + b). The statistics are
    empty: this backward recomputes the maxima chunk by chunk."""
    m, n, C = q.shape[1], d.shape[1], len(channels)
    P = q.shape[0] * (d.shape[0] if all_pairs else 1)
    dt = _math_dtype(q)
    if patch is None:
        out = torch.empty(P, m, n, C, dtype=out_dtype, device=q.device)
    else:
        gm, gn = grid(m, n, patch)
        out = torch.empty(P, gm * gn, patch * patch * C, dtype=out_dtype, device=q.device)
    per_chunk = _pairs_per_chunk(m, n, C, patch)
    for p0, p1, _, _, _, _, sims, valid in _pair_chunks(q, q_mask, d, d_mask, all_pairs, per_chunk, dt):
        if clip:
            sims.clamp_(-1.0, 1.0)
        pc = p1 - p0
        if patch is None:
            dest = out[p0:p1]
        else:
            dest = torch.zeros(pc, gm * patch, gn * patch, C, dtype=dt, device=q.device)
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
            out[p0:p1].view(pc, gm, gn, patch, patch, C).copy_(
                dest.view(pc, gm, patch, gn, patch, C).permute(0, 1, 3, 2, 4, 5))
    return (out, *(q.new_empty(0, dtype=dt) for dt in (torch.float32, torch.int32) * 2))


def _grad_map(grad_out: Tensor, b0: int, b1: int, m: int, n: int, C: int, patch: int | None, dt) -> Tensor:
    """The upstream gradient of a chunk as a (bc, m, n, C) map (patches folded back, padding cut)."""
    g = grad_out[b0:b1].to(dt)
    if patch is None:
        return g
    gm, gn = grid(m, n, patch)
    bc = b1 - b0
    g = g.view(bc, gm, gn, patch, patch, C).permute(0, 1, 3, 2, 4, 5).reshape(bc, gm * patch, gn * patch, C)
    return g[:, :m, :n]


def sim_map_bwd(grad_out: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, patch: int | None,
                channels: tuple[str, ...], clip: bool, stats=None, need_dq: bool = True, need_dd: bool = True,
                all_pairs: bool = False) -> tuple[Tensor | None, Tensor | None]:
    """-> grad_q like q, grad_d like d (None where not needed); grad_out in sim_map_fwd's (P, ...) layout. stats
    (sim_map_fwd's statistics) is accepted for the common contract and unused: the maxima are recomputed."""
    m, n, C = q.shape[1], d.shape[1], len(channels)
    dt = _math_dtype(q)
    gq = torch.empty(q.shape, dtype=dt, device=q.device) if need_dq else None
    gd = (torch.zeros if all_pairs else torch.empty)(d.shape, dtype=dt, device=q.device) if need_dd else None
    grad_out = grad_out.reshape(-1, *grad_out.shape[-3 if patch is None else -2:])
    per_chunk = _pairs_per_chunk(m, n, C, patch)
    for p0, p1, a0, a1, qc, dc, raw, valid in _pair_chunks(q, q_mask, d, d_mask, all_pairs, per_chunk, dt):
        sims = raw.clamp(-1.0, 1.0) if clip else raw
        g = _grad_map(grad_out, p0, p1, m, n, C, patch, dt)
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
        if all_pairs:
            grid4 = gmap.unflatten(0, (a1 - a0, d.shape[0]))
            if gq is not None:
                gq[a0:a1] = torch.einsum("abij,bjh->aih", grid4, dc)
            if gd is not None:
                gd += torch.einsum("abij,aih->bjh", grid4, qc)
            continue
        if gq is not None:
            gq[a0:a1] = torch.bmm(gmap, dc)
        if gd is not None:
            gd[a0:a1] = torch.bmm(gmap.transpose(1, 2), qc)
    return (None if gq is None else gq.to(q.dtype), None if gd is None else gd.to(d.dtype))
