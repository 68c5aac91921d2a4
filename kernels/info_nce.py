"""Triton kernels for info_nce: one streaming forward, a dq/dh backward and a dc backward.

No kernel ever writes a B x N tensor. The forward streams candidate tiles through an online
logsumexp and computes the target dot, the hard-negative dots and the BCE term in the same pass; it
stores only per-row statistics (loss, logsumexp). Each backward kernel recomputes its logit tiles.
Products accumulate in fp32; fp16/bf16 operands go to tl.dot as they are, fp32 with "ieee" precision.
Math: spherekit.reference.info_nce.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import IGNORE_INDEX, INTERPRET, dot_precision, dot_tile, online_softmax_step, softplus, span, vectors


@triton.jit
def _load_rows(t_ptr, ql_ptr, o_b, m_b, HAS_LABELS: tl.constexpr, BLOCK_B: tl.constexpr):
    """Targets (ignored and padding rows -> 0), row validity and query labels (0 without labels)."""
    b_t = tl.load(t_ptr + o_b, mask=m_b, other=IGNORE_INDEX)
    valid = m_b & (b_t != IGNORE_INDEX)
    b_ql = tl.zeros((BLOCK_B,), dtype=tl.int64)
    if HAS_LABELS:
        b_ql = tl.load(ql_ptr + o_b, mask=m_b, other=0)
    return tl.where(valid, b_t, 0), valid, b_ql


@triton.jit
def _row_dots(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, h_ptr, stride_hb, stride_hk, stride_hd,
              o_b, m_b, b_t, D, K, HAS_HN: tl.constexpr,
              BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):
    """Per-row dots in fp32: <q_i, c_{t_i}> (BLOCK_B,) and <q_i, h_ik> (BLOCK_B, BLOCK_K)."""
    o_k = tl.arange(0, BLOCK_K)
    dot_t = tl.zeros((BLOCK_B,), dtype=tl.float32)
    dot_h = tl.zeros((BLOCK_B, BLOCK_K), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        o_d, m_d = span(d0, D, BLOCK_D)
        m_bd = m_b[:, None] & m_d[None, :]
        b_q = tl.load(q_ptr + o_b[:, None] * stride_qb + o_d[None, :] * stride_qd, mask=m_bd, other=0.0)
        b_q = b_q.to(tl.float32)
        b_ct = tl.load(c_ptr + b_t[:, None] * stride_cn + o_d[None, :] * stride_cd, mask=m_bd, other=0.0)
        dot_t += tl.sum(b_q * b_ct.to(tl.float32), axis=1)
        if HAS_HN:  # a loop over k keeps every tile 2-D (registers stay O(BLOCK_B x BLOCK_D))
            for kk in range(K):
                b_h = tl.load(h_ptr + o_b[:, None] * stride_hb + kk * stride_hk + o_d[None, :] * stride_hd,
                              mask=m_bd, other=0.0).to(tl.float32)
                dot_h += tl.where(o_k[None, :] == kk, tl.sum(b_q * b_h, axis=1)[:, None], 0.0)
    return dot_t, dot_h


@triton.jit
def _logits_tile(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, o_b, m_b, o_n, m_n, D, inv_tau, b_t, b_ql,
                 cl_ptr, lb_ptr, stride_lb0, stride_lb1, HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr,
                 PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """The (rows o_b, candidates o_n) tile: dots x = <q_b, c_n> (fp32), logits s = x / tau + label bias on negatives
    with false negatives and padding at -inf, and is_t (the target column of each row). -> (x, s, is_t)."""
    x = dot_tile(q_ptr, stride_qb, stride_qd, o_b, m_b, c_ptr, stride_cn, stride_cd, o_n, m_n, D,
                 BLOCK_B, BLOCK_N, BLOCK_D, PRECISION)
    s = x * inv_tau
    is_t = o_n[None, :] == b_t[:, None]
    allowed = m_n[None, :]  # padding columns out; broadcasts against the (rows, cols) masks below
    if HAS_LABELS:
        b_cl = tl.load(cl_ptr + o_n, mask=m_n, other=0)
        allowed = allowed & ((b_cl[None, :] != b_ql[:, None]) | is_t)
        if HAS_BIAS:
            m_bias = allowed & (is_t == 0)
            b_bias = tl.load(lb_ptr + b_ql[:, None] * stride_lb0 + b_cl[None, :] * stride_lb1, mask=m_bias,
                             other=0.0)
            s = s + tl.where(m_bias, b_bias, 0.0)
    return x, tl.where(allowed, s, float("-inf")), is_t


@triton.jit
def _info_nce_fwd_kernel(
    loss_ptr, lse_ptr,
    q_ptr, stride_qb, stride_qd,
    c_ptr, stride_cn, stride_cd,
    h_ptr, stride_hb, stride_hk, stride_hd,
    t_ptr, ql_ptr, cl_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr,
    B, N, D, K,
    bce_weight, bce_scale, bce_bias,
    HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_HN: tl.constexpr, HN_SOFTMAX: tl.constexpr,
    HAS_BCE: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr,
):
    o_b, m_b = span(tl.program_id(0).to(tl.int64) * BLOCK_B, B, BLOCK_B)
    b_t, valid, b_ql = _load_rows(t_ptr, ql_ptr, o_b, m_b, HAS_LABELS, BLOCK_B)
    inv_tau = 1.0 / tl.load(tau_ptr)

    max_run = tl.full((BLOCK_B,), float("-inf"), dtype=tl.float32)
    sum_run = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        o_n, m_n = span(n0, N, BLOCK_N)
        _, s, _ = _logits_tile(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, o_b, m_b, o_n, m_n, D, inv_tau,
                               b_t, b_ql, cl_ptr, lb_ptr, stride_lb0, stride_lb1, HAS_LABELS, HAS_BIAS, PRECISION,
                               BLOCK_B, BLOCK_N, BLOCK_D)
        max_run, rescale, p = online_softmax_step(max_run, s)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)

    dot_t, dot_h = _row_dots(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, h_ptr, stride_hb,
                             stride_hk, stride_hd, o_b, m_b, b_t, D, K, HAS_HN, BLOCK_B, BLOCK_K, BLOCK_D)
    m_k = tl.arange(0, BLOCK_K) < K
    if HN_SOFTMAX:
        s_h = tl.where(m_k[None, :], dot_h * inv_tau, float("-inf"))
        max_run, rescale, p = online_softmax_step(max_run, s_h)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)
    lse = max_run + tl.log(sum_run)
    loss = lse - dot_t * inv_tau
    if HAS_BCE:
        z_pos = bce_scale * dot_t + bce_bias
        z_neg = bce_scale * dot_h + bce_bias
        bce = softplus(-z_pos) + tl.sum(tl.where(m_k[None, :], softplus(z_neg), 0.0), axis=1)
        loss += bce_weight * bce / (K + 1)
    tl.store(loss_ptr + o_b, tl.where(valid, loss, 0.0), mask=m_b)
    tl.store(lse_ptr + o_b, lse, mask=m_b)


@triton.jit
def _row_grad_terms(dot_t, dot_h, b_g, b_lse, inv_tau, K, bce_weight, bce_scale, bce_bias,
                    HN_SOFTMAX: tl.constexpr, HAS_BCE: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr):
    """Per-row pieces of the backward that need no candidate tile (symbols of spherekit.reference.info_nce):
    beta = dL/d<q, c_t> beyond the softmax term (-g/tau, plus the BCE positive pair's -g w s sigmoid(-z_t) / (k+1)),
    g_h (BLOCK_B, BLOCK_K) = dL/d<q, h_k> (the softmax weight of h_k when it joins the denominator, plus its BCE
    g w s sigmoid(z_k) / (k+1)), and the row's dtau terms from the target and the hard negatives."""
    g_tau = b_g * inv_tau
    m_k = tl.arange(0, BLOCK_K) < K
    beta = -g_tau
    tau_acc = -g_tau * dot_t
    g_h = tl.zeros((BLOCK_B, BLOCK_K), dtype=tl.float32)
    if HN_SOFTMAX:
        g_h = tl.where(m_k[None, :], tl.exp(dot_h * inv_tau - b_lse[:, None]) * g_tau[:, None], 0.0)
        tau_acc += tl.sum(g_h * dot_h, axis=1)
    if HAS_BCE:
        coef = b_g * bce_weight * bce_scale / (K + 1)
        beta += -tl.sigmoid(-(bce_scale * dot_t + bce_bias)) * coef
        g_h += tl.where(m_k[None, :], tl.sigmoid(bce_scale * dot_h + bce_bias) * coef[:, None], 0.0)
    return beta, g_h, tau_acc


@triton.jit
def _hard_negative_grads(g_h, q_ptr, stride_qb, stride_qd, h_ptr, stride_hb, stride_hk, stride_hd,
                         dh_ptr, stride_dhb, stride_dhk, stride_dhd, o_b, m_b, o_v, m_v, K,
                         NEED_DH: tl.constexpr, BLOCK_K: tl.constexpr):
    """The hard negatives' share of a (rows, d-slice) tile: returns sum_k g_h[:, k] h[:, k, slice] (added to dq)
    and, with NEED_DH, stores dh[:, k, slice] = g_h[:, k] q[:, slice]."""
    o_k = tl.arange(0, BLOCK_K)
    m_bv = m_b[:, None] & m_v[None, :]
    b_q = tl.load(q_ptr + o_b[:, None] * stride_qb + o_v[None, :] * stride_qd, mask=m_bv, other=0.0).to(tl.float32)
    acc = tl.zeros_like(b_q)
    for kk in range(K):
        g_k = tl.sum(tl.where(o_k[None, :] == kk, g_h, 0.0), axis=1)
        b_h = tl.load(h_ptr + o_b[:, None] * stride_hb + kk * stride_hk + o_v[None, :] * stride_hd,
                      mask=m_bv, other=0.0).to(tl.float32)
        acc += g_k[:, None] * b_h
        if NEED_DH:
            tl.store(dh_ptr + o_b[:, None] * stride_dhb + kk * stride_dhk + o_v[None, :] * stride_dhd,
                     g_k[:, None] * b_q, mask=m_bv)
    return acc


@triton.jit
def _info_nce_bwd_dq_kernel(
    dq_ptr, stride_dqb, stride_dqd,
    dh_ptr, stride_dhb, stride_dhk, stride_dhd,
    beta_ptr, dtau_ptr,
    g_ptr, lse_ptr,
    q_ptr, stride_qb, stride_qd,
    c_ptr, stride_cn, stride_cd,
    h_ptr, stride_hb, stride_hk, stride_hd,
    t_ptr, ql_ptr, cl_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr, scale_ptr,
    B, N, D, K,
    bce_weight, bce_scale, bce_bias,
    HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_HN: tl.constexpr, HN_SOFTMAX: tl.constexpr,
    HAS_BCE: tl.constexpr, NEED_DH: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    """Program (row block, d-slice): dq[rows, slice] (+ dh[rows, :, slice]); the d-slice-0 programs also
    write beta (the target's extra dot-gradient, reused by the dc kernel) and the per-row dtau term.
    The gradient tile is divided by `scale` before it is cast for tl.dot (and the fp32 result multiplied
    back), so fp16 tiles stay in the normal range: raw values are ~ 1 / (B N tau), subnormal in fp16."""
    pid_b = tl.program_id(0).to(tl.int64)
    pid_v = tl.program_id(1).to(tl.int64)
    o_b, m_b = span(pid_b * BLOCK_B, B, BLOCK_B)
    b_t, valid, b_ql = _load_rows(t_ptr, ql_ptr, o_b, m_b, HAS_LABELS, BLOCK_B)
    inv_tau = 1.0 / tl.load(tau_ptr)
    b_g = tl.where(valid, tl.load(g_ptr + o_b, mask=m_b, other=0.0), 0.0)
    b_lse = tl.load(lse_ptr + o_b, mask=m_b, other=0.0)
    g_tau = b_g * inv_tau

    dot_t, dot_h = _row_dots(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, h_ptr, stride_hb,
                             stride_hk, stride_hd, o_b, m_b, b_t, D, K, HAS_HN, BLOCK_B, BLOCK_K, BLOCK_D)
    beta, g_h, tau_acc = _row_grad_terms(dot_t, dot_h, b_g, b_lse, inv_tau, K, bce_weight, bce_scale, bce_bias,
                                         HN_SOFTMAX, HAS_BCE, BLOCK_B, BLOCK_K)

    o_v, m_v = span(pid_v * BLOCK_DV, D, BLOCK_DV)
    scale = tl.load(scale_ptr)
    inv_scale = 1.0 / scale
    acc = tl.zeros((BLOCK_B, BLOCK_DV), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        o_n, m_n = span(n0, N, BLOCK_N)
        x, s, is_t = _logits_tile(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, o_b, m_b, o_n, m_n, D,
                                  inv_tau, b_t, b_ql, cl_ptr, lb_ptr, stride_lb0, stride_lb1, HAS_LABELS, HAS_BIAS,
                                  PRECISION, BLOCK_B, BLOCK_N, BLOCK_D)
        p_g = tl.exp(s - b_lse[:, None]) * g_tau[:, None]
        tau_acc += tl.sum(p_g * x, axis=1)
        grad = (p_g + tl.where(is_t, beta[:, None], 0.0)) * inv_scale
        b_c = tl.load(c_ptr + o_n[:, None] * stride_cn + o_v[None, :] * stride_cd,
                      mask=m_n[:, None] & m_v[None, :], other=0.0)
        acc = tl.dot(grad.to(b_c.dtype), b_c, acc, input_precision=PRECISION)
    acc = acc * scale

    if HAS_HN:
        acc += _hard_negative_grads(g_h, q_ptr, stride_qb, stride_qd, h_ptr, stride_hb, stride_hk, stride_hd,
                                    dh_ptr, stride_dhb, stride_dhk, stride_dhd, o_b, m_b, o_v, m_v, K, NEED_DH,
                                    BLOCK_K)
    tl.store(dq_ptr + o_b[:, None] * stride_dqb + o_v[None, :] * stride_dqd, acc, mask=m_b[:, None] & m_v[None, :])
    if pid_v == 0:
        tl.store(beta_ptr + o_b, beta, mask=m_b)
        tl.store(dtau_ptr + o_b, -tau_acc * inv_tau, mask=m_b)


@triton.jit
def _info_nce_bwd_dc_kernel(
    dc_ptr, stride_dcn, stride_dcd,
    beta_ptr, g_ptr, lse_ptr,
    q_ptr, stride_qb, stride_qd,
    c_ptr, stride_cn, stride_cd,
    t_ptr, ql_ptr, cl_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr, scale_ptr,
    B, N, D,
    HAS_LABELS: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    """Program (candidate block, d-slice): dc[cols, slice] = sum over row blocks of grad^T q (the gradient
    tile scaled as in the dq kernel)."""
    pid_n = tl.program_id(0).to(tl.int64)
    pid_v = tl.program_id(1).to(tl.int64)
    o_n, m_n = span(pid_n * BLOCK_N, N, BLOCK_N)
    o_v, m_v = span(pid_v * BLOCK_DV, D, BLOCK_DV)
    inv_tau = 1.0 / tl.load(tau_ptr)
    scale = tl.load(scale_ptr)
    inv_scale = 1.0 / scale
    acc = tl.zeros((BLOCK_N, BLOCK_DV), dtype=tl.float32)
    for b0 in range(0, B, BLOCK_B):
        o_b, m_b = span(b0, B, BLOCK_B)
        b_t, valid, b_ql = _load_rows(t_ptr, ql_ptr, o_b, m_b, HAS_LABELS, BLOCK_B)
        g_tau = tl.where(valid, tl.load(g_ptr + o_b, mask=m_b, other=0.0), 0.0) * inv_tau
        b_lse = tl.load(lse_ptr + o_b, mask=m_b, other=0.0)
        beta = tl.load(beta_ptr + o_b, mask=m_b, other=0.0)
        _, s, is_t = _logits_tile(q_ptr, stride_qb, stride_qd, c_ptr, stride_cn, stride_cd, o_b, m_b, o_n, m_n, D,
                                  inv_tau, b_t, b_ql, cl_ptr, lb_ptr, stride_lb0, stride_lb1, HAS_LABELS, HAS_BIAS,
                                  PRECISION, BLOCK_B, BLOCK_N, BLOCK_D)
        grad = (tl.exp(s - b_lse[:, None]) * g_tau[:, None] + tl.where(is_t, beta[:, None], 0.0)) * inv_scale
        b_q = tl.load(q_ptr + o_b[:, None] * stride_qb + o_v[None, :] * stride_qd,
                      mask=m_b[:, None] & m_v[None, :], other=0.0)
        acc = tl.dot(tl.trans(grad.to(b_q.dtype)), b_q, acc, input_precision=PRECISION)
    acc = acc * scale
    tl.store(dc_ptr + o_n[:, None] * stride_dcn + o_v[None, :] * stride_dcd, acc, mask=m_n[:, None] & m_v[None, :])


def _config(D: int, K: int, labelled: bool = False, dtype: torch.dtype = torch.bfloat16) -> dict:
    """Block sizes and launch options; labelled: query/candidate labels or a label bias are present.

    The interpreter wants small tiles. GPU, fp16/bf16 without labels and with at most one hard negative: 128 x 128 logit
    tiles, BLOCK_D = 64, 8 warps, 3 stages, chosen by scripts/gpu_tune.py on an H200 (bf16, B = N = 16,384,
    d = 768; every candidate checked against the previous default's output; benches/results/gpu/h200_tune.csv):
    forward + dq + dc took 11.2 ms against 31.4 ms for the earlier 64 x 64 x 64, 2-stage guess (k = 0), and
    17.6 ms against 46.4 ms with one hard negative and BCE; 64 x 128 matched it in the forward only, 4 warps or
    2 stages were slower. Its backward kernels spill 16-216 B on sm_90 (benches/triton_resources.py allows
    them, citing this measurement). With labels, a label bias or more hard negatives the larger tiles spill
    0.8-1.8 KB and were not measured, so those launches keep the earlier 64 x 64 x 64, 2-stage tiles (no
    spills); so does fp32 (not measured; the larger tiles spill 3-5 KB there). The backward recomputes each
    logit tile once per BLOCK_DV-wide slice of d, so BLOCK_DV = 256 (d = 768: 3 slices) halves that work against
    128; with hard negatives the dq kernel also holds their slices: 128 there.
    A width d that is not a multiple of 16 loses the vectorised loads."""
    block_k = triton.next_power_of_2(max(K, 1))
    if INTERPRET:
        return dict(BLOCK_B=16, BLOCK_N=16, BLOCK_D=32, BLOCK_K=block_k, BLOCK_DV=32, num_warps=1, num_stages=1)
    block_dv = min(256 if K == 0 else 128, triton.next_power_of_2(D))
    if labelled or K > 1 or dtype == torch.float32:
        return dict(BLOCK_B=64, BLOCK_N=64, BLOCK_D=64, BLOCK_K=block_k, BLOCK_DV=block_dv, num_warps=8,
                    num_stages=2)
    return dict(BLOCK_B=128, BLOCK_N=128, BLOCK_D=64, BLOCK_K=block_k, BLOCK_DV=block_dv, num_warps=8, num_stages=3)


def _tensor_args(q, c, h, targets, ql, cl, label_bias, tau) -> dict:
    """The kernels' tensor arguments by name: the embeddings and label_bias with their strides, the per-row
    vectors contiguous, placeholders for what is absent (the HAS_* flags keep the kernels off them)."""
    targets, ql, cl = vectors(targets, ql, cl)
    dummy = torch.empty(0, dtype=torch.int64, device=q.device)
    h_ = h if h is not None else q.new_empty((1, 1, 1))
    lb = label_bias if label_bias is not None else q.new_empty((1, 1), dtype=torch.float32)
    return dict(q_ptr=q, stride_qb=q.stride(0), stride_qd=q.stride(1),
                c_ptr=c, stride_cn=c.stride(0), stride_cd=c.stride(1),
                h_ptr=h_, stride_hb=h_.stride(0), stride_hk=h_.stride(1), stride_hd=h_.stride(2),
                t_ptr=targets, ql_ptr=ql if ql is not None else dummy, cl_ptr=cl if cl is not None else dummy,
                lb_ptr=lb, stride_lb0=lb.stride(0), stride_lb1=lb.stride(1), tau_ptr=tau)


def _flags(h, ql, label_bias, hn_softmax, bce_weight) -> dict:
    """The constexpr switches that say which inputs and terms are present."""
    return dict(HAS_LABELS=ql is not None, HAS_BIAS=label_bias is not None, HAS_HN=h is not None,
                HN_SOFTMAX=bool(hn_softmax and h is not None), HAS_BCE=bool(h is not None and bce_weight != 0.0))


def info_nce_fwd(q, c, targets, h, tau, ql, cl, label_bias, *, hn_softmax, bce_weight, bce_scale, bce_bias):
    """-> (loss per row (B,) fp32, logsumexp per row (B,) fp32)."""
    B, D = q.shape
    N = c.shape[0]
    K = 0 if h is None else h.shape[1]
    cfg = _config(D, K, ql is not None or label_bias is not None, q.dtype)
    loss = torch.empty(B, dtype=torch.float32, device=q.device)
    lse = torch.empty_like(loss)
    grid = (triton.cdiv(B, cfg["BLOCK_B"]),)
    _info_nce_fwd_kernel[grid](
        loss_ptr=loss, lse_ptr=lse, **_tensor_args(q, c, h, targets, ql, cl, label_bias, tau), B=B, N=N, D=D, K=K,
        bce_weight=float(bce_weight), bce_scale=float(bce_scale), bce_bias=float(bce_bias),
        **_flags(h, ql, label_bias, hn_softmax, bce_weight), PRECISION=dot_precision(q.dtype),
        BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], BLOCK_K=cfg["BLOCK_K"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
    return loss, lse


def info_nce_bwd(grad_rows, q, c, targets, h, tau, ql, cl, label_bias, lse, *, hn_softmax, bce_weight, bce_scale,
                 bce_bias, need_dq, need_dc, need_dh, need_dtau, grad_dtype=None):
    """-> (dq or None, dc or None, dh or None, dtau 0-dim fp32 or None), the gradients in grad_dtype (default:
    the dtype of q, c and h). The kernels accumulate in fp32 and round once, at the store: no fp32 gradient
    buffers to cast afterwards (at B = N = 16,384, d = 768 in bf16 those were 96 of the 144 MiB of peak extra
    memory measured on an H200)."""
    B, D = q.shape
    N = c.shape[0]
    K = 0 if h is None else h.shape[1]
    cfg = _config(D, K, ql is not None or label_bias is not None, q.dtype)
    tensors = _tensor_args(q, c, h, targets, ql, cl, label_bias, tau)
    g, lse = vectors(grad_rows.float(), lse)
    out = grad_dtype or q.dtype
    dq = torch.empty((B, D), dtype=out, device=q.device)  # written with beta/dtau even when not needed
    dh = torch.empty((B, K, D), dtype=out, device=q.device) if need_dh else q.new_empty((1, 1, 1))
    beta = torch.empty(B, dtype=torch.float32, device=q.device)
    # |gradient tile| <= max|g| / tau * (1 + |BCE part|): dividing by scale brings it to <= 1024 before the
    # cast to the operand dtype (a device tensor: no host sync)
    bound = 1.0 + abs(bce_weight * bce_scale) / (K + 1) * tau
    scale = (g.abs().max() / tau * bound).clamp_min(1e-30) / 1024.0
    dtau_rows = torch.empty(B, dtype=torch.float32, device=q.device)
    flags = _flags(h, ql, label_bias, hn_softmax, bce_weight)
    shared = dict(beta_ptr=beta, g_ptr=g, lse_ptr=lse, scale_ptr=scale, B=B, N=N, D=D,
                  HAS_LABELS=flags["HAS_LABELS"], HAS_BIAS=flags["HAS_BIAS"], PRECISION=dot_precision(q.dtype),
                  BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], BLOCK_DV=cfg["BLOCK_DV"],
                  num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    grid = (triton.cdiv(B, cfg["BLOCK_B"]), triton.cdiv(D, cfg["BLOCK_DV"]))
    _info_nce_bwd_dq_kernel[grid](
        dq_ptr=dq, stride_dqb=dq.stride(0), stride_dqd=dq.stride(1),
        dh_ptr=dh, stride_dhb=dh.stride(0), stride_dhk=dh.stride(1), stride_dhd=dh.stride(2), dtau_ptr=dtau_rows,
        **tensors, K=K, bce_weight=float(bce_weight), bce_scale=float(bce_scale), bce_bias=float(bce_bias),
        HAS_HN=flags["HAS_HN"], HN_SOFTMAX=flags["HN_SOFTMAX"], HAS_BCE=flags["HAS_BCE"], NEED_DH=bool(need_dh),
        BLOCK_K=cfg["BLOCK_K"], **shared,
    )
    dc = None
    if need_dc:
        dc = torch.empty((N, D), dtype=out, device=q.device)
        grid = (triton.cdiv(N, cfg["BLOCK_N"]), triton.cdiv(D, cfg["BLOCK_DV"]))
        no_h = {k: v for k, v in tensors.items() if not k.startswith(("h_ptr", "stride_h"))}
        _info_nce_bwd_dc_kernel[grid](
            dc_ptr=dc, stride_dcn=dc.stride(0), stride_dcd=dc.stride(1), **no_h, **shared,
        )
    return (dq if need_dq else None, dc, dh if need_dh else None, dtau_rows.sum() if need_dtau else None)
