"""Triton row kernel of the chunked InfoNCE (spherekit.ops._info_nce_chunked): BLOCK_R query rows per program.

Over its rows of the logits chunk S (the dots x_ij = <q_i, c_j>, written by cuBLAS), a program takes two passes:
  1. an online logsumexp of s_ij = x_ij / tau + label bias on negatives (false negatives and padding at -inf),
     joined by the hard-negative logits y_ik / tau in the softmax modes;
  2. p_ij = exp(s_ij - lse_i), the temperature statistic sum_j p_ij x_ij, and G'_ij written over S:
        G'_ij = valid_i (p_ij - [j = t_i] + [j = t_i] beta'_i)
and stores its loss (softmax + BCE terms), r_i and Gh'_ik (orchestrator's docstring for the symbols). Statistics
in fp32 whatever S's dtype; S is read twice and written once: 3 R N x element size bytes per chunk.

A target or label out of range (which only the "full" check mode reports as an error) makes its row NaN: loss,
G' and Gh'. Math: spherekit.reference.info_nce.

Roofline at the GPU goal shape (B = N = 16,384, d = 768, bf16, H200: copy 4,106 GB/s): 3 x 2 B N x 2 bytes =
1.61 GB over all chunks, 0.39 ms; the three GEMMs are 3 x 2BNd = 1.24 TFLOP, 1.62 ms at the measured 764 TFLOP/s.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import IGNORE_INDEX, INTERPRET, online_softmax_step, softplus, span


@triton.jit
def _row_logits(p_rows, stride_sr, o_n, m_r, m_n, t, ql, inv_tau, cl_ptr, p_lb, stride_lb1, E,
                HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr):
    """(x, s) of the rows' columns o_n (BLOCK_R, BLOCK_N): x the dots (fp32), s the logits with the bias on
    negatives and -inf for false negatives and padding; a candidate label out of range for the bias gives NaN."""
    m = m_r[:, None] & m_n[None, :]
    x = tl.load(p_rows[:, None] + o_n[None, :], mask=m, other=0.0).to(tl.float32)
    s = x * inv_tau
    is_t = o_n[None, :] == t[:, None]
    allowed = m
    if HAS_LABELS:
        b_cl = tl.load(cl_ptr + o_n, mask=m_n, other=0)
        allowed = allowed & ((b_cl[None, :] != ql[:, None]) | is_t)
        if HAS_BIAS:
            in_range = (b_cl >= 0) & (b_cl < E)
            m_bias = allowed & (is_t == 0)
            b_bias = tl.load(p_lb[:, None] + tl.where(in_range, b_cl, 0)[None, :] * stride_lb1, mask=m_bias,
                             other=0.0)
            s = s + tl.where(m_bias, tl.where(in_range[None, :], b_bias, float("nan")), 0.0)
    return x, tl.where(allowed, s, float("-inf"))


@triton.jit
def _info_nce_rows_kernel(
    loss_ptr, stat_ptr,
    gh_ptr, stride_ghr, stride_ghk,
    s_ptr, stride_sr,
    y_ptr, stride_yr, stride_yk,
    t_ptr, ql_ptr, cl_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr,
    R, N, K, E,
    bce_weight, bce_scale, bce_bias,
    HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_HN: tl.constexpr, HN_SOFTMAX: tl.constexpr,
    HAS_BCE: tl.constexpr, NEED_STAT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr,
):
    o_r, m_r = span(tl.program_id(0).to(tl.int64) * BLOCK_R, R, BLOCK_R)
    tau = tl.load(tau_ptr).to(tl.float32)
    inv_tau = 1.0 / tau
    t = tl.load(t_ptr + o_r, mask=m_r, other=IGNORE_INDEX)
    valid = t != IGNORE_INDEX
    bad = valid & ((t < 0) | (t >= N))
    t = tl.where(valid & (bad == 0), t, 0)
    ql = tl.zeros((BLOCK_R,), dtype=tl.int64)
    if HAS_LABELS:
        ql = tl.load(ql_ptr + o_r, mask=m_r, other=0)
        if HAS_BIAS:
            bad = bad | (valid & ((ql < 0) | (ql >= E)))
            ql = tl.where((ql >= 0) & (ql < E), ql, 0)
    p_rows = s_ptr + o_r * stride_sr
    p_lb = lb_ptr + ql * stride_lb0
    x_t = tl.load(p_rows + t, mask=m_r, other=0.0).to(tl.float32)

    max_run = tl.full((BLOCK_R,), float("-inf"), dtype=tl.float32)
    sum_run = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for n0 in tl.range(0, N, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, N, BLOCK_N)
        _, s = _row_logits(p_rows, stride_sr, o_n, m_r, m_n, t, ql, inv_tau, cl_ptr, p_lb, stride_lb1, E,
                           HAS_LABELS, HAS_BIAS)
        max_run, rescale, p = online_softmax_step(max_run, s)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)

    o_k = tl.arange(0, BLOCK_K)
    m_rk = m_r[:, None] & (o_k < K)[None, :]
    y = tl.zeros((BLOCK_R, BLOCK_K), dtype=tl.float32)
    if HAS_HN:
        y = tl.load(y_ptr + o_r[:, None] * stride_yr + o_k[None, :] * stride_yk, mask=m_rk, other=0.0)
        y = y.to(tl.float32)
    if HN_SOFTMAX:
        max_run, rescale, p_h = online_softmax_step(max_run, tl.where(m_rk, y * inv_tau, float("-inf")))
        sum_run = sum_run * rescale + tl.sum(p_h, axis=1)
    lse = tl.where(m_r, max_run + tl.log(tl.where(m_r, sum_run, 1.0)), 0.0)  # rows past R: 0, never log(0)
    loss = lse - x_t * inv_tau
    stat = -x_t
    gh = tl.zeros((BLOCK_R, BLOCK_K), dtype=tl.float32)
    beta = tl.zeros((BLOCK_R,), dtype=tl.float32)
    if HN_SOFTMAX:
        gh = tl.where(m_rk, tl.exp(y * inv_tau - lse[:, None]), 0.0)
        stat += tl.sum(gh * y, axis=1)
    if HAS_BCE:
        z_pos = bce_scale * x_t + bce_bias
        z_neg = bce_scale * y + bce_bias
        loss += bce_weight * (softplus(-z_pos) + tl.sum(tl.where(m_rk, softplus(z_neg), 0.0), axis=1)) / (K + 1)
        coef = tau * bce_weight * bce_scale / (K + 1)
        beta = -tl.sigmoid(-z_pos) * coef
        gh += tl.where(m_rk, tl.sigmoid(z_neg) * coef, 0.0)

    row_scale = tl.where(valid, 1.0, 0.0)
    at_target = (beta - 1.0) * row_scale
    nan_row = tl.where(bad, float("nan"), 0.0)  # added: NaN on a bad row, 0 elsewhere
    for n0 in tl.range(0, N, BLOCK_N, num_stages=STAGES):
        o_n, m_n = span(n0, N, BLOCK_N)
        x, s = _row_logits(p_rows, stride_sr, o_n, m_r, m_n, t, ql, inv_tau, cl_ptr, p_lb, stride_lb1, E,
                           HAS_LABELS, HAS_BIAS)
        prob = tl.exp(s - lse[:, None])
        if NEED_STAT:
            stat += tl.sum(tl.where(s > float("-inf"), prob * x, 0.0), axis=1)
        g = prob * row_scale[:, None] + tl.where(o_n[None, :] == t[:, None], at_target[:, None], 0.0)
        tl.store(p_rows[:, None] + o_n[None, :], (g + nan_row[:, None]).to(s_ptr.dtype.element_ty),
                 mask=m_r[:, None] & m_n[None, :])

    tl.store(loss_ptr + o_r, tl.where(valid, loss, 0.0) + nan_row, mask=m_r)
    if NEED_STAT:
        tl.store(stat_ptr + o_r, stat * row_scale + nan_row, mask=m_r)
    if HAS_HN:
        tl.store(gh_ptr + o_r[:, None] * stride_ghr + o_k[None, :] * stride_ghk,
                 gh * row_scale[:, None] + nan_row[:, None], mask=m_rk)


def _config(N: int, labelled: bool = False) -> dict:
    """Launch options: BLOCK_R rows per program, BLOCK_N columns per step, STAGES the loads in flight along a row
    (tl.range: cp.async prefetch on sm_90; a plain range is not pipelined). The interpreter wants few programs and
    steps (16 rows, up to 512 columns). GPU: 1,024-wide steps (or the next power of two of N below it) over
    max(1, 4,096 // BLOCK_N) rows per program (one row per program at N >= 4,096), 4 warps, 8 with labels (the
    label loads, masks and bias: at 4 warps the full-featured variant spills 16 B on sm_90 bf16, none at 8; compiled
    by benches/triton_resources.py). A first guess, to be swept on a GPU (TUNE_CANDIDATES)."""
    if INTERPRET:
        return dict(BLOCK_R=16, BLOCK_N=min(triton.next_power_of_2(max(N, 16)), 512), STAGES=1, num_warps=1)
    block_n = min(triton.next_power_of_2(max(N, 16)), 1024)
    return dict(BLOCK_R=max(1, 4096 // block_n), BLOCK_N=block_n, STAGES=2, num_warps=8 if labelled else 4)


TUNE_CANDIDATES = [  # keys merged into _config() by the GPU sweeps; the default first
    {},
    dict(BLOCK_R=1, BLOCK_N=512, num_warps=4),
    dict(BLOCK_R=1, BLOCK_N=2048, num_warps=8),
    dict(BLOCK_R=2, BLOCK_N=1024, num_warps=8),
    dict(BLOCK_R=1, BLOCK_N=4096, num_warps=8),
    dict(BLOCK_R=4, BLOCK_N=512, num_warps=4),
    dict(STAGES=3),
    dict(STAGES=1),
]


def info_nce_rows(S, targets, ql, cl, label_bias, tau, y, *, hn_softmax, bce_weight, bce_scale, bce_bias,
                  need_stat):
    """The row kernel (spherekit.ops.contracts.InfoNCERowsBackend): S (R, N) contiguous rows, overwritten with G';
    -> (loss (R,) fp32, r (R,) fp32 or None, Gh' (R, k) fp32 or None)."""
    R, N = S.shape
    assert S.stride(1) == 1, "the logits chunk must have contiguous rows"
    K = 0 if y is None else y.shape[1]
    has_bce = y is not None and bce_weight != 0.0
    has_gh = y is not None and (hn_softmax or has_bce)
    loss = torch.empty(R, dtype=torch.float32, device=S.device)
    stat = torch.empty(R, dtype=torch.float32, device=S.device) if need_stat else loss
    gh = torch.empty((R, max(K, 1)), dtype=torch.float32, device=S.device)
    dummy = torch.empty(1, dtype=torch.int64, device=S.device)
    y_ = y if y is not None else gh
    lb = label_bias if label_bias is not None else gh
    cfg = _config(N, ql is not None)
    _info_nce_rows_kernel[(triton.cdiv(R, cfg["BLOCK_R"]),)](
        loss, stat, gh, gh.stride(0), gh.stride(1), S, S.stride(0), y_, y_.stride(0), y_.stride(1),
        targets, ql if ql is not None else dummy, cl if cl is not None else dummy,
        lb, lb.stride(0), lb.stride(1), tau, R, N, K, 0 if label_bias is None else label_bias.shape[0],
        float(bce_weight), float(bce_scale), float(bce_bias),
        HAS_LABELS=ql is not None, HAS_BIAS=label_bias is not None, HAS_HN=y is not None,
        HN_SOFTMAX=bool(hn_softmax and y is not None), HAS_BCE=has_bce, NEED_STAT=bool(need_stat),
        BLOCK_R=cfg["BLOCK_R"], BLOCK_N=cfg["BLOCK_N"], STAGES=cfg["STAGES"],
        BLOCK_K=triton.next_power_of_2(max(K, 1)), num_warps=cfg["num_warps"],
    )
    return loss, stat if need_stat else None, gh if has_gh else None
