"""The chunked InfoNCE orchestrator: a scalar loss and its gradients from one pass, 3 x 2BNd matmul FLOPs in all.

The pattern of Liger-Kernel's fused linear cross entropy, for every device. Per chunk of R query rows:

    S   = Q_r C^T                      one GEMM into a reused R x N buffer (the compute dtype; BLAS / cuBLAS with
                                       fp32 accumulation inside)
    row kernel over S                  logsumexp, the loss terms and the logit gradient G', written over S
    dQ'_r = G' C  (+ Gh' H_r)          one GEMM (plus the hard negatives' small batched product)
    dC'  += G'^T Q_r                   one GEMM, accumulated over the chunks (compute dtype or fp32)
    dH'_r = Gh' (x) Q_r

The row kernel is Triton on a GPU (kernels/info_nce_rows.py) and torch on the CPU (ops/_info_nce_cpu.py); both
implement `info_nce_rows` (spherekit.ops.contracts.InfoNCERowsBackend). The forward returns the loss and keeps
dQ', dC', dH' and dtau; the backward only multiplies them by the incoming scalar (no sync, no recompute).

Scaling. For reduction "mean" every valid row has the same weight w = 1 / #valid (1 for "sum"), so the gradient
with respect to the dots is G = a G' with one scalar a = w / tau and

    G'_ij = valid_i (p_ij - [j = t_i] + [j = t_i] beta'_i),    p_ij = exp(s_ij - lse_i),
    beta'_i = -tau bce_weight bce_scale / (k+1) sigmoid(-z_i),
    Gh'_ik = valid_i (ph_ik + tau bce_weight bce_scale / (k+1) sigmoid(z_ik)),

entries of order 1 whatever B, N and tau (G itself is ~ 1 / (B N tau): subnormal in fp16). The products run on
G' and the scalar a multiplies the results once, in the backward. With r_i = valid_i (sum_j p_ij x_ij +
sum_k ph_ik y_ik - x_it), the temperature's gradient is dtau = -(a / tau) sum_i r_i. Symbols and the math of
every term: spherekit.reference.info_nce.

Memory: the R x N buffer, dQ', dC' (and dH'); R = workspace_bytes // (N x element size) rows, at least 64 and at
most B (spherekit.ops._chunked_gemm).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..reference.contrastive import IGNORE_INDEX
from . import _dispatch
from ._chunked_gemm import accumulate, accumulator_dtype, chunk_rows
from .cpu_budget import row_chunks

def info_nce_fwd_bwd(q: Tensor, c: Tensor, targets: Tensor, h: Tensor | None, tau: Tensor, ql: Tensor | None,
                     cl: Tensor | None, label_bias: Tensor | None, *, rows_backend, compute_dtype: torch.dtype,
                     hn_softmax: bool, bce_weight: float, bce_scale: float, bce_bias: float, reduction: str,
                     need_dq: bool, need_dc: bool, need_dh: bool, need_dtau: bool, workspace_bytes: int,
                     dc_accumulator: str) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None, Tensor | None,
                                                   Tensor]:
    """-> (loss 0-dim fp32 (fp64 for fp64 inputs), dQ', dC', dH', dtau, a): the gradients are a x dQ', a x dC',
    a x dH' (None where not needed; dQ', dH' in compute_dtype, dC' in compute_dtype or fp32), dtau 0-dim or None.

    rows_backend: a module with info_nce_rows (the Triton or the torch row kernel); compute_dtype: the dtype of
    the GEMMs and of the logits buffer (the inputs' dtype for Triton, fp32 or fp64 on the CPU)."""
    B, N = q.shape[0], c.shape[0]
    stat_dtype = _dispatch.stat_dtype(compute_dtype)
    q_, c_ = q.to(compute_dtype), c.to(compute_dtype)
    h_ = None if h is None else h.to(compute_dtype)
    tau = tau.to(stat_dtype)
    valid = targets != IGNORE_INDEX
    w = 1.0 / valid.sum().clamp_min(1).to(stat_dtype) if reduction == "mean" else torch.ones((), dtype=stat_dtype,
                                                                                                device=q.device)
    a = w / tau
    rows = chunk_rows(B, N, q_.element_size(), workspace_bytes)
    buffer = torch.empty((rows, N), dtype=compute_dtype, device=q.device)
    dq = torch.empty_like(q_) if need_dq else None
    dc = None
    if need_dc:
        dc = torch.zeros((N, c.shape[1]), dtype=accumulator_dtype(compute_dtype, dc_accumulator), device=q.device)
    dh = torch.empty_like(h_) if need_dh else None
    loss = torch.zeros((), dtype=stat_dtype, device=q.device)
    stat = torch.zeros_like(loss) if need_dtau else None
    for sl in row_chunks(B, rows):
        q_rows = q_[sl]
        S = buffer[: q_rows.shape[0]]
        torch.mm(q_rows, c_.T, out=S)
        y = None if h_ is None else torch.bmm(h_[sl], q_rows[:, :, None]).squeeze(2)
        row_loss, row_stat, gh = rows_backend.info_nce_rows(
            S, targets[sl], None if ql is None else ql[sl], cl, label_bias, tau, y, hn_softmax=hn_softmax,
            bce_weight=bce_weight, bce_scale=bce_scale, bce_bias=bce_bias, need_stat=need_dtau,
        )
        loss += row_loss.sum()
        if need_dtau:
            stat += row_stat.sum()
        if need_dq:
            torch.mm(S, c_, out=dq[sl])
            if gh is not None:
                dq[sl].add_(torch.bmm(gh.to(compute_dtype)[:, None, :], h_[sl]).squeeze(1))
        if need_dc:
            accumulate(dc, S.T, q_rows)
        if need_dh and gh is None:  # hard negatives in no term (bce_weight 0 in "bce" mode): no gradient
            dh[sl].zero_()
        elif need_dh:
            torch.mul(gh.to(compute_dtype)[:, :, None], q_rows[:, None, :], out=dh[sl])
    dtau = -(a / tau) * stat if need_dtau else None
    return loss * w, dq, dc, dh, dtau, a
