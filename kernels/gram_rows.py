"""Triton row kernels of the chunked Gram-matrix losses (spherekit.ops._gram_chunked): SINCERE / SoftCSE and
CircularCSE, BLOCK_R rows of the chunk S = E_r E^T per program, overwriting S with the gradient G' the orchestrator
multiplies back into the embeddings (dE' = (G' + G'^T) E, or 2 G' E for CircularCSE's symmetric residuals).
Statistics in fp32 whatever S's dtype. Math and symbols: spherekit.reference.sincere / circular_cse, and the torch
row kernels ops/_sincere_cpu.sincere_rows and ops/_circular_cse_cpu.circular_cse_rows, which these equal.

SINCERE reads its row three times (the negatives' logsumexp L; U and the positives' softplus; G') and writes it
once; CircularCSE reads and writes it once.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import INTERPRET, online_softmax_step, softplus, span


@triton.jit
def _sincere_tile(p_rows, o_n, m_r, m_n, gi, y_i, shift_i, inv_tau, y_ptr, p_lb, stride_lb1, HAS_BIAS: tl.constexpr):
    """(x, s, negative logits z, positives mask) of the rows' columns o_n."""
    m = m_r[:, None] & m_n[None, :]
    x = tl.load(p_rows[:, None] + o_n[None, :], mask=m, other=0.0).to(tl.float32)
    s = x * inv_tau
    b_y = tl.load(y_ptr + o_n, mask=m_n, other=0)
    same = b_y[None, :] == y_i[:, None]
    negative = m & (same == 0)
    z = s + shift_i[:, None]
    if HAS_BIAS:
        z += tl.load(p_lb[:, None] + b_y[None, :] * stride_lb1, mask=negative, other=0.0)
    positive = m & same & (o_n[None, :] != gi[:, None])
    return x, s, tl.where(negative, z, float("-inf")), positive


@triton.jit
def _sincere_rows_kernel(
    loss_ptr, stat_ptr,
    s_ptr, stride_sr,
    y_ptr, lb_ptr, stride_lb0, stride_lb1, shift_ptr, npos_ptr, tau_ptr,
    R, B, row0,
    HAS_BIAS: tl.constexpr, HAS_SHIFT: tl.constexpr, NEED_STAT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
):
    o_r, m_r = span(tl.program_id(0).to(tl.int64) * BLOCK_R, R, BLOCK_R)
    gi = row0 + o_r
    inv_tau = 1.0 / tl.load(tau_ptr).to(tl.float32)
    y_i = tl.load(y_ptr + gi, mask=m_r, other=0)
    shift_i = tl.zeros((BLOCK_R,), dtype=tl.float32)
    if HAS_SHIFT:
        shift_i = tl.load(shift_ptr + gi, mask=m_r, other=0.0).to(tl.float32)
    n_pos = tl.load(npos_ptr + gi, mask=m_r, other=0).to(tl.float32)
    c = tl.where(n_pos > 0, 1.0 / tl.maximum(n_pos, 1.0), 0.0)
    p_rows = s_ptr + o_r * stride_sr
    p_lb = lb_ptr + y_i * stride_lb0

    max_run = tl.full((BLOCK_R,), float("-inf"), dtype=tl.float32)
    sum_run = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for n0 in tl.range(0, B, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, B, BLOCK_N)
        _, _, z, _ = _sincere_tile(p_rows, o_n, m_r, m_n, gi, y_i, shift_i, inv_tau, y_ptr, p_lb, stride_lb1,
                                   HAS_BIAS)
        max_run, rescale, p = online_softmax_step(max_run, z)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)
    L = max_run + tl.log(tl.where(sum_run > 0, sum_run, 1.0))  # -inf: no negative (the sum is then 0)
    L_safe = tl.where(L == float("-inf"), 0.0, L)

    loss = tl.zeros((BLOCK_R,), dtype=tl.float32)
    u = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for n0 in tl.range(0, B, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, B, BLOCK_N)
        _, s, _, positive = _sincere_tile(p_rows, o_n, m_r, m_n, gi, y_i, shift_i, inv_tau, y_ptr, p_lb, stride_lb1,
                                          HAS_BIAS)
        t = tl.where(positive, L[:, None] - s, float("-inf"))
        loss += tl.sum(tl.where(positive, softplus(t), 0.0), axis=1)
        u += tl.sum(tl.where(positive, tl.sigmoid(t), 0.0), axis=1)

    stat = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for n0 in tl.range(0, B, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, B, BLOCK_N)
        x, s, z, positive = _sincere_tile(p_rows, o_n, m_r, m_n, gi, y_i, shift_i, inv_tau, y_ptr, p_lb,
                                          stride_lb1, HAS_BIAS)
        sig = tl.where(positive, tl.sigmoid(L[:, None] - s), 0.0)
        g = c[:, None] * (u[:, None] * tl.exp(z - L_safe[:, None]) - sig)
        if NEED_STAT:
            stat += tl.sum(g * x, axis=1)
        tl.store(p_rows[:, None] + o_n[None, :], g.to(s_ptr.dtype.element_ty), mask=m_r[:, None] & m_n[None, :])

    tl.store(loss_ptr + o_r, loss * c, mask=m_r)
    if NEED_STAT:
        tl.store(stat_ptr + o_r, stat, mask=m_r)


@triton.jit
def _circular_cse_rows_kernel(
    loss_ptr,
    s_ptr, stride_sr,
    y_ptr, cos_ptr, sin_ptr,
    R, B, row0, margin,
    HAS_MARGIN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
):
    o_r, m_r = span(tl.program_id(0).to(tl.int64) * BLOCK_R, R, BLOCK_R)
    gi = row0 + o_r
    y_i = tl.load(y_ptr + gi, mask=m_r, other=0)
    cos_i = tl.load(cos_ptr + gi, mask=m_r, other=0.0).to(tl.float32)
    sin_i = tl.load(sin_ptr + gi, mask=m_r, other=0.0).to(tl.float32)
    p_rows = s_ptr + o_r * stride_sr
    total = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for n0 in tl.range(0, B, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, B, BLOCK_N)
        m = m_r[:, None] & m_n[None, :]
        x = tl.load(p_rows[:, None] + o_n[None, :], mask=m, other=0.0).to(tl.float32)
        b_y = tl.load(y_ptr + o_n, mask=m_n, other=0)
        b_cos = tl.load(cos_ptr + o_n, mask=m_n, other=0.0).to(tl.float32)
        b_sin = tl.load(sin_ptr + o_n, mask=m_n, other=0.0).to(tl.float32)
        same = b_y[None, :] == y_i[:, None]
        target = tl.where(same, 1.0, cos_i[:, None] * b_cos[None, :] + sin_i[:, None] * b_sin[None, :])
        r = x - target
        if HAS_MARGIN:
            shrunk = tl.maximum(tl.abs(r) - margin, 0.0)
            r = tl.where(same, tl.where(r < 0, -shrunk, shrunk), r)
        r = tl.where(m & (o_n[None, :] != gi[:, None]), r, 0.0)
        total += tl.sum(r * r, axis=1)
        tl.store(p_rows[:, None] + o_n[None, :], r.to(s_ptr.dtype.element_ty), mask=m)
    tl.store(loss_ptr + o_r, total, mask=m_r)


def _config(B: int, gpu_warps: int = 4) -> dict:
    """BLOCK_R rows per program, BLOCK_N columns per step, STAGES loads in flight: as kernels/info_nce_rows.py (1,024-wide steps over
    max(1, 4,096 // BLOCK_N) rows, 4 warps on a GPU; 16 rows and up to 512 columns in the interpreter). A first
    guess, to be swept on a GPU (TUNE_CANDIDATES). SINCERE takes 8 warps: at 4 its three passes spill 8 B on sm_90
    bf16 (benches/triton_resources.py)."""
    if INTERPRET:
        return dict(BLOCK_R=16, BLOCK_N=min(triton.next_power_of_2(max(B, 16)), 512), STAGES=1, num_warps=1)
    block_n = min(triton.next_power_of_2(max(B, 16)), 1024)
    return dict(BLOCK_R=max(1, 4096 // block_n), BLOCK_N=block_n, STAGES=2, num_warps=gpu_warps)


TUNE_CANDIDATES = [{}, dict(BLOCK_R=1, BLOCK_N=2048, num_warps=8), dict(BLOCK_R=2, BLOCK_N=512, num_warps=4),
                   dict(STAGES=3), dict(STAGES=1)]


def sincere_rows(S, sl, labels, tau, label_bias, shift, npos, *, need_stat):
    """The SINCERE / SoftCSE row kernel (spherekit.ops.contracts.GramRowsBackend): S (R, B) contiguous rows of the
    chunk sl, overwritten with G'. -> (the rows' loss sum, their temperature statistic sum or None), fp32."""
    R, B = S.shape
    assert S.stride(1) == 1, "the chunk must have contiguous rows"
    loss = torch.empty(R, dtype=torch.float32, device=S.device)
    stat = torch.empty_like(loss) if need_stat else loss
    lb = label_bias if label_bias is not None else loss.view(1, -1)
    cfg = _config(B, gpu_warps=8)
    _sincere_rows_kernel[(triton.cdiv(R, cfg["BLOCK_R"]),)](
        loss, stat, S, S.stride(0), labels, lb, lb.stride(0), lb.stride(1),
        shift if shift is not None else loss, npos, tau, R, B, sl.start,
        HAS_BIAS=label_bias is not None, HAS_SHIFT=shift is not None, NEED_STAT=bool(need_stat),
        BLOCK_R=cfg["BLOCK_R"], BLOCK_N=cfg["BLOCK_N"], STAGES=cfg["STAGES"], num_warps=cfg["num_warps"],
    )
    return loss.sum(), stat.sum() if need_stat else None


def circular_cse_rows(S, sl, labels, row_cos, row_sin, *, margin):
    """The CircularCSE row kernel (spherekit.ops.contracts.GramRowsBackend): S (R, B) overwritten with the
    residuals r. -> (the rows' sum of r^2, None), fp32."""
    R, B = S.shape
    assert S.stride(1) == 1, "the chunk must have contiguous rows"
    loss = torch.empty(R, dtype=torch.float32, device=S.device)
    cfg = _config(B)
    _circular_cse_rows_kernel[(triton.cdiv(R, cfg["BLOCK_R"]),)](
        loss, S, S.stride(0), labels, row_cos, row_sin, R, B, sl.start, float(margin),
        HAS_MARGIN=margin > 0, BLOCK_R=cfg["BLOCK_R"], BLOCK_N=cfg["BLOCK_N"], STAGES=cfg["STAGES"],
        num_warps=cfg["num_warps"],
    )
    return loss.sum(), None
