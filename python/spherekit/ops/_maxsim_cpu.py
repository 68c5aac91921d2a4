"""The "cpu" backend of maxsim: chunked torch (BLAS for the products, on any device); M is never materialised for
more than a chunk of (query, candidate) pairs, and nothing of M is stored for the backward. No tensor value is read
on the host: the chunking depends on shapes only.

Layout (the unified candidate layout of ops/maxsim.py): q (Bq, m, h), q_mask (Bq, m) or None, d4 (G, K, n, h),
d_mask4 (G, K, n) or None, with G = 1 when `shared` (every query against the same K candidates) and G = Bq otherwise
(query b against d4[b]). Tokens arrive normalised when the op normalises. All math is fp32 (fp64 for fp64 tokens)
whatever the input dtype. c_b = 1 for the sum, 1 / |Q_b| for the mean (0 for a query without valid tokens).

Forward per chunk of queries x candidates: S = d q^T (a chunk's doc tokens x query tokens), padding doc tokens ->
-inf, (max, argmax) over each candidate's n tokens (torch.max propagates NaN); a candidate without valid tokens
gives 0 and argmax -1 for every query token; score_bk = c_b sum_{i in Q_b} max_j S_bkij. With store_argmax the
argmax (Bq, K, m) int32 is kept (-1 at padding query tokens).

Backward with upstream g (Bq, K) and w_bk = g_bk c_b, a = argmax:
    grad_q[b, i]            += sum_k w_bk d4[g(b), k, a_bki]          (a gather)
    grad_d4[g(b), k, a_bki] += w_bk q[b, i]                            (index_add_)
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import cpu_budget
from .cpu_budget import row_chunks

NEG_INF = float("-inf")


def _math_dtype(x: Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def plan(Bq: int, K: int, per_pair: int, per_cand: int, shared: bool) -> tuple[int, int]:
    """(queries per chunk, candidates per chunk) so that a chunk's work buffers hold about CHUNK_ELEMENTS:
    per_pair elements per (query, candidate) pair, plus per_cand per candidate when candidates are shared
    (their fp32 copy). Whole candidate rows first, so per-query candidate slices stay contiguous."""
    budget = max(1, cpu_budget.CHUNK_ELEMENTS)
    if not shared:
        if K * per_pair <= budget:
            return max(1, min(Bq, budget // (K * per_pair))), K
        return 1, max(1, min(K, budget // per_pair))
    if Bq * per_pair + per_cand <= budget:
        return Bq, max(1, min(K, budget // (Bq * per_pair + per_cand)))
    return max(1, min(Bq, budget // per_pair)), 1


def query_scale(q_mask: Tensor | None, Bq: int, m: int, mean: bool, dtype: torch.dtype, device) -> Tensor | float:
    """c_b (module docstring): a float when it is the same for every query, else a (Bq,) tensor."""
    if not mean:
        return 1.0
    if q_mask is None:
        return 1.0 / m
    count = q_mask.sum(-1).to(dtype)
    return torch.where(count > 0, 1.0 / count.clamp_min(1.0), torch.zeros_like(count))


def _best(qc: Tensor, dc: Tensor, pad: Tensor | None, shared: bool) -> tuple[Tensor, Tensor]:
    """qc (bc, m, h), dc (kc, n, h) if shared else (bc, kc, n, h), pad (like dc's token axes, True = padding)
    -> (max, argmax) over the valid doc tokens, (bc, kc, m) each. S is built as d q^T (tall and skinny: the
    faster BLAS shape here), so the reduction runs over the middle axis n of a (.., n, m) view."""
    bc, m, h = qc.shape
    if shared:
        kc, n = dc.shape[:2]
        sims = (dc.reshape(kc * n, h) @ qc.reshape(bc * m, h).T).view(kc, n, bc * m)
        if pad is not None:
            sims.masked_fill_(pad[:, :, None], NEG_INF)
        best, idx = sims.max(dim=1)  # (kc, bc * m)
        return best.view(kc, bc, m).transpose(0, 1), idx.view(kc, bc, m).transpose(0, 1)
    kc, n = dc.shape[1:3]
    sims = torch.bmm(dc.reshape(bc, kc * n, h), qc.transpose(1, 2)).view(bc, kc, n, m)
    if pad is not None:
        sims.masked_fill_(pad[..., None], NEG_INF)
    return sims.max(dim=2)


def maxsim_fwd(q: Tensor, q_mask: Tensor | None, d4: Tensor, d_mask4: Tensor | None, *, shared: bool,
               mean: bool = True, store_argmax: bool = True) -> tuple[Tensor, Tensor | None]:
    """-> scores (Bq, K) fp32 (fp64 for fp64 tokens), argmax (Bq, K, m) int32 (-1 at padding query tokens and empty
    documents) or None when not store_argmax."""
    Bq, m, h = q.shape
    K, n = d4.shape[1:3]
    dt = _math_dtype(q)
    scores = torch.empty(Bq, K, dtype=dt, device=q.device)
    argmax = torch.empty(Bq, K, m, dtype=torch.int32, device=q.device) if store_argmax else None
    scale = query_scale(q_mask, Bq, m, mean, dt, q.device)
    qm = None if q_mask is None else q_mask.to(dt)
    d_pad = None if d_mask4 is None else ~d_mask4
    d_any = None if d_mask4 is None else d_mask4.any(-1)  # (G, K): documents with a valid token
    copies = d4.dtype != dt  # half-precision candidates are upcast chunk by chunk
    bc, kc = plan(Bq, K, m * n, n * h if copies else 0, shared)
    for bs in row_chunks(Bq, bc):
        qc = q[bs].to(dt)
        for ks in row_chunks(K, kc):
            lead = (0, ks) if shared else (bs, ks)
            pad = None if d_pad is None else d_pad[lead]
            best, idx = _best(qc, d4[lead].to(dt), pad, shared)  # (bc, kc, m)
            if d_any is not None:
                empty = ~d_any[lead]
                empty = empty[None, :, None] if shared else empty[..., None]
                best = best.masked_fill(empty, 0.0)
                idx = idx.masked_fill(empty, -1)
            row = best.sum(-1) if qm is None else torch.einsum("bki,bi->bk", best, qm[bs])
            scores[bs, ks] = row * (scale if isinstance(scale, float) else scale[bs, None])
            if argmax is not None:
                argmax[bs, ks] = idx if q_mask is None else idx.masked_fill(~q_mask[bs, None, :], -1)
    return scores, argmax


def maxsim_bwd(grad: Tensor, q: Tensor, q_mask: Tensor | None, d4: Tensor, d_mask4: Tensor | None, argmax: Tensor, *,
               shared: bool, mean: bool = True, need_dq: bool = True, need_dd: bool = True
               ) -> tuple[Tensor | None, Tensor | None]:
    """-> grad_q like q, grad_d4 like d4 (None where not needed). Only argmax entries receive gradient."""
    Bq, m, h = q.shape
    G, K, n = d4.shape[:3]
    dt = _math_dtype(q)
    scale = query_scale(q_mask, Bq, m, mean, dt, q.device)
    weights = grad.to(dt) * (scale if isinstance(scale, float) else scale[:, None])  # (Bq, K)
    d_flat = d4.reshape(G * K * n, h)
    q32 = q.to(dt)
    gq = torch.zeros(Bq, m, h, dtype=dt, device=q.device) if need_dq else None
    gd = torch.zeros(G * K * n, h, dtype=dt, device=q.device) if need_dd else None
    kidx = torch.arange(K, device=q.device)
    bc, kc = plan(Bq, K, 2 * m * h, 0, shared)
    for bs in row_chunks(Bq, bc):
        for ks in row_chunks(K, kc):
            a = argmax[bs, ks].long()  # (bc, kc, m)
            coeff = weights[bs, ks, None] * (a >= 0)  # (bc, kc, m)
            base = kidx[ks] * n
            if not shared:
                base = base[None, :] + torch.arange(bs.start, bs.stop, device=q.device)[:, None] * (K * n)
            rows = (base[..., None] + a.clamp_min(0)).reshape(-1)  # flat doc-token rows
            if gq is not None:
                picked = d_flat.index_select(0, rows).view(*a.shape, h).to(dt)
                gq[bs] += torch.einsum("bki,bkih->bih", coeff, picked)
                del picked
            if gd is not None:
                gd.index_add_(0, rows, (coeff[..., None] * q32[bs, None]).reshape(-1, h))
    return (None if gq is None else gq.to(q.dtype),
            None if gd is None else gd.view(d4.shape).to(d4.dtype))
