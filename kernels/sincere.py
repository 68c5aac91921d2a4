"""Triton kernels for sincere (SINCERE / SoftCSE): a two-pass streaming forward and a symmetric backward.

No kernel ever writes a B x B tensor and none uses atomics.
Forward, per row block I: pass 1 streams column tiles J through an online logsumexp over the negatives
(-> L_i); pass 2 streams again and sums softplus(L_i - s_ij) and sigmoid(L_i - s_ij) over the positives.
It stores per-row statistics only: the anchor's loss, L_i, U_i = sum_{j in P_i} sigmoid(L_i - s_ij), |P_i|.
Backward: G = dLoss/ds (spherekit.reference.sincere states it) and s = s^T, so
dE = (G + G^T) E / tau. A program owns (row block I, d-slice V); for each column block J it recomputes
S_IJ once, builds G_IJ from row-I statistics and (G_JI)^T from row-J statistics on the same tile and
accumulates (G_IJ + G_JI^T) @ E_J[:, V]. Products accumulate in fp32; fp16/bf16 operands go to tl.dot as
loaded, fp32 with "ieee" precision. Math: spherekit.reference.sincere.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import dot_precision, dot_tile, gram_config, online_softmax_step, scaled_grad, softplus, span, vectors


@triton.jit
def _neg_logits(s, neg, y_row, y_col, shift_row, lb_ptr, stride_lb0, stride_lb1, HAS_BIAS: tl.constexpr):
    """s + label_bias[y_row, y_col] + shift_row on negatives, -inf elsewhere. y_row/shift_row are (R, 1)
    or (1, C) broadcasts, y_col the other one, so the same helper serves G_IJ and G_JI^T."""
    z = s
    if HAS_BIAS:
        b_bias = tl.load(lb_ptr + y_row * stride_lb0 + y_col * stride_lb1, mask=neg, other=0.0)
        z = s + b_bias + shift_row
    return tl.where(neg, z, float("-inf"))


@triton.jit
def _sim_tile(e_ptr, stride_eb, stride_ed, o_b, m_b, o_n, m_n, inv_tau, D, PRECISION: tl.constexpr,
              BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """s = <e_b, e_n> / tau (fp32) for rows o_b and columns o_n."""
    return dot_tile(e_ptr, stride_eb, stride_ed, o_b, m_b, e_ptr, stride_eb, stride_ed, o_n, m_n, D,
                    BLOCK_B, BLOCK_N, BLOCK_D, PRECISION) * inv_tau


@triton.jit
def _fwd_column_tile(e_ptr, stride_eb, stride_ed, y_ptr, o_b, m_b, n0, inv_tau, B, D, PRECISION: tl.constexpr,
                     BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """Column tile n0 of a forward pass: (o_n, m_n, labels y_n, s = <e_b, e_n> / tau)."""
    o_n, m_n = span(n0, B, BLOCK_N)
    y_n = tl.load(y_ptr + o_n, mask=m_n, other=0)
    s = _sim_tile(e_ptr, stride_eb, stride_ed, o_b, m_b, o_n, m_n, inv_tau, D, PRECISION, BLOCK_B, BLOCK_N, BLOCK_D)
    return o_n, m_n, y_n, s


@triton.jit
def _sincere_fwd_kernel(
    loss_ptr, lse_ptr, usum_ptr, npos_ptr,
    e_ptr, stride_eb, stride_ed,
    y_ptr, shift_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr,
    B, D,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    o_b, m_b = span(tl.program_id(0).to(tl.int64) * BLOCK_B, B, BLOCK_B)
    y_b = tl.load(y_ptr + o_b, mask=m_b, other=0)
    shift_b = tl.zeros((BLOCK_B,), dtype=tl.float32)
    if HAS_BIAS:
        shift_b = tl.load(shift_ptr + o_b, mask=m_b, other=0.0)
    inv_tau = 1.0 / tl.load(tau_ptr)

    # pass 1: L_i = logsumexp over negatives of (s_ik + bias_ik), online
    max_run = tl.full((BLOCK_B,), float("-inf"), dtype=tl.float32)
    sum_run = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for n0 in range(0, B, BLOCK_N):
        o_n, m_n, y_n, s = _fwd_column_tile(e_ptr, stride_eb, stride_ed, y_ptr, o_b, m_b, n0, inv_tau, B, D, PRECISION,
                                            BLOCK_B, BLOCK_N, BLOCK_D)
        neg = m_b[:, None] & m_n[None, :] & (y_n[None, :] != y_b[:, None])
        z = _neg_logits(s, neg, y_b[:, None], y_n[None, :], shift_b[:, None], lb_ptr, stride_lb0, stride_lb1,
                        HAS_BIAS)
        max_run, rescale, p = online_softmax_step(max_run, z)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)
    # sum_run >= 1 once max_run is finite; else (every negative has weight 0) L_i = -inf, without log(0)
    lse = max_run + tl.log(tl.maximum(sum_run, 1.0))

    # pass 2: softplus(L_i - s_ij) and sigmoid(L_i - s_ij) summed over positives j != i, y_j = y_i
    sp_acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    sg_acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    n_acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for n0 in range(0, B, BLOCK_N):
        o_n, m_n, y_n, s = _fwd_column_tile(e_ptr, stride_eb, stride_ed, y_ptr, o_b, m_b, n0, inv_tau, B, D, PRECISION,
                                            BLOCK_B, BLOCK_N, BLOCK_D)
        pos = m_b[:, None] & m_n[None, :] & (y_n[None, :] == y_b[:, None]) & (o_n[None, :] != o_b[:, None])
        t = lse[:, None] - s
        sp_acc += tl.sum(tl.where(pos, softplus(t), 0.0), axis=1)
        sg_acc += tl.sum(tl.where(pos, tl.sigmoid(t), 0.0), axis=1)
        n_acc += tl.sum(pos.to(tl.float32), axis=1)
    loss = tl.where(n_acc > 0, sp_acc / tl.maximum(n_acc, 1.0), 0.0)
    tl.store(loss_ptr + o_b, loss, mask=m_b)
    tl.store(lse_ptr + o_b, lse, mask=m_b)
    tl.store(usum_ptr + o_b, sg_acc, mask=m_b)
    tl.store(npos_ptr + o_b, n_acc, mask=m_b)


@triton.jit
def _row_stats(o, m, g_ptr, lse_ptr, usum_ptr, npos_ptr, y_ptr, shift_ptr, HAS_BIAS: tl.constexpr):
    """Per-row backward statistics of rows o: (y, c = g / |P|, c * U, L, L with -inf -> 0, shift)."""
    y = tl.load(y_ptr + o, mask=m, other=0)
    n = tl.load(npos_ptr + o, mask=m, other=0.0)
    g = tl.load(g_ptr + o, mask=m, other=0.0)
    c = tl.where(m & (n > 0), g / tl.maximum(n, 1.0), 0.0)
    cu = c * tl.load(usum_ptr + o, mask=m, other=0.0)
    lse = tl.load(lse_ptr + o, mask=m, other=0.0)
    lse_safe = tl.where(lse == float("-inf"), 0.0, lse)  # then exp(-inf - 0) = 0: no NaN
    shift = tl.zeros(o.shape, dtype=tl.float32)
    if HAS_BIAS:
        shift = tl.load(shift_ptr + o, mask=m, other=0.0)
    return y, c, cu, lse, lse_safe, shift


@triton.jit
def _sincere_bwd_kernel(
    de_ptr, stride_deb, stride_ded,
    dtau_ptr,
    g_ptr, g_scale_ptr, lse_ptr, usum_ptr, npos_ptr,
    e_ptr, stride_eb, stride_ed,
    y_ptr, shift_ptr,
    lb_ptr, stride_lb0, stride_lb1,
    tau_ptr,
    B, D,
    HAS_BIAS: tl.constexpr, NEED_DE: tl.constexpr, NEED_DTAU: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    """Program (row block I, d-slice V): dE[I, V] = sum_J (G_IJ + G_JI^T) @ E_J[:, V] / tau; the d-slice-0
    programs also write the per-row dtau terms -(1/tau) sum_j G_ij s_ij (without NEED_DE the grid has one
    d-slice and only dtau is computed). g is the upstream gradient divided
    by g_scale (so fp16 tiles stay in the normal range); the outputs are multiplied back by g_scale."""
    pid_b = tl.program_id(0).to(tl.int64)
    pid_v = tl.program_id(1).to(tl.int64)
    o_b, m_b = span(pid_b * BLOCK_B, B, BLOCK_B)
    y_b, c_b, cu_b, lse_b, lsafe_b, shift_b = _row_stats(o_b, m_b, g_ptr, lse_ptr, usum_ptr, npos_ptr, y_ptr,
                                                         shift_ptr, HAS_BIAS)
    inv_tau = 1.0 / tl.load(tau_ptr)
    o_v, m_v = span(pid_v * BLOCK_DV, D, BLOCK_DV)
    acc = tl.zeros((BLOCK_B, BLOCK_DV), dtype=tl.float32)
    tau_acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for n0 in range(0, B, BLOCK_N):
        o_n, m_n = span(n0, B, BLOCK_N)
        y_n, c_n, cu_n, lse_n, lsafe_n, shift_n = _row_stats(o_n, m_n, g_ptr, lse_ptr, usum_ptr, npos_ptr, y_ptr,
                                                             shift_ptr, HAS_BIAS)
        s = _sim_tile(e_ptr, stride_eb, stride_ed, o_b, m_b, o_n, m_n, inv_tau, D, PRECISION, BLOCK_B, BLOCK_N, BLOCK_D)
        valid = m_b[:, None] & m_n[None, :]
        same = y_b[:, None] == y_n[None, :]
        pos = valid & same & (o_b[:, None] != o_n[None, :])
        neg = valid & (same == 0)
        # G_IJ[i, j] = c_i (U_i p_ij [j in N_i] - sigmoid(L_i - s_ij) [j in P_i]), from row-I statistics
        z = _neg_logits(s, neg, y_b[:, None], y_n[None, :], shift_b[:, None], lb_ptr, stride_lb0, stride_lb1,
                        HAS_BIAS)
        g_ij = tl.where(neg, cu_b[:, None] * tl.exp(z - lsafe_b[:, None]), 0.0) \
            - tl.where(pos, c_b[:, None] * tl.sigmoid(lse_b[:, None] - s), 0.0)
        # (G_JI)^T[i, j] = G_ji, from row-J statistics on the same tile (bias [y_j, y_i] + shift_j)
        z = _neg_logits(s, neg, y_n[None, :], y_b[:, None], shift_n[None, :], lb_ptr, stride_lb0, stride_lb1,
                        HAS_BIAS)
        g_ji = tl.where(neg, cu_n[None, :] * tl.exp(z - lsafe_n[None, :]), 0.0) \
            - tl.where(pos, c_n[None, :] * tl.sigmoid(lse_n[None, :] - s), 0.0)
        if NEED_DTAU:
            tau_acc += tl.sum(g_ij * s, axis=1)
        if NEED_DE:
            b_e = tl.load(e_ptr + o_n[:, None] * stride_eb + o_v[None, :] * stride_ed,
                          mask=m_n[:, None] & m_v[None, :], other=0.0)
            acc = tl.dot((g_ij + g_ji).to(b_e.dtype), b_e, acc, input_precision=PRECISION)
    g_scale = tl.load(g_scale_ptr)
    if NEED_DE:
        tl.store(de_ptr + o_b[:, None] * stride_deb + o_v[None, :] * stride_ded, acc * (inv_tau * g_scale),
                 mask=m_b[:, None] & m_v[None, :])
    if NEED_DTAU:
        if pid_v == 0:
            tl.store(dtau_ptr + o_b, -tau_acc * (inv_tau * g_scale), mask=m_b)


def _tensor_args(e, labels, tau, label_bias, shift) -> dict:
    """The kernels' tensor arguments by name: e and label_bias with their strides, the per-row vectors
    contiguous, placeholders for an absent bias (HAS_BIAS keeps the kernels off them)."""
    labels, shift = vectors(labels, shift)
    lb = label_bias if label_bias is not None else e.new_empty((1, 1), dtype=torch.float32)
    sh = shift if shift is not None else e.new_empty(1, dtype=torch.float32)
    return dict(e_ptr=e, stride_eb=e.stride(0), stride_ed=e.stride(1), y_ptr=labels, shift_ptr=sh,
                lb_ptr=lb, stride_lb0=lb.stride(0), stride_lb1=lb.stride(1), tau_ptr=tau, B=e.shape[0], D=e.shape[1],
                HAS_BIAS=label_bias is not None, PRECISION=dot_precision(e.dtype))


def sincere_fwd(e, labels, tau, label_bias, shift):
    """-> (loss per anchor, L, U, |P|), each (B,) fp32."""
    B, D = e.shape
    cfg = gram_config(D, e.dtype)
    loss = torch.empty(B, dtype=torch.float32, device=e.device)
    lse, usum, npos = torch.empty_like(loss), torch.empty_like(loss), torch.empty_like(loss)
    grid = (triton.cdiv(B, cfg["BLOCK_B"]),)
    _sincere_fwd_kernel[grid](
        loss_ptr=loss, lse_ptr=lse, usum_ptr=usum, npos_ptr=npos, **_tensor_args(e, labels, tau, label_bias, shift),
        BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"],
    )
    return loss, lse, usum, npos


def sincere_bwd(grad_rows, e, labels, tau, label_bias, shift, lse, usum, npos, *, need_de, need_dtau):
    """-> (dE fp32 (B, d) or None, dtau 0-dim fp32 or None)."""
    B, D = e.shape
    cfg = gram_config(D, e.dtype)
    g, g_scale = scaled_grad(grad_rows)
    g, lse, usum, npos = vectors(g, lse, usum, npos)
    de = torch.empty((B, D) if need_de else (1, 1), dtype=torch.float32, device=e.device)
    dtau_rows = torch.empty(B if need_dtau else 1, dtype=torch.float32, device=e.device)
    grid = (triton.cdiv(B, cfg["BLOCK_B"]), triton.cdiv(D, cfg["BLOCK_DV"]) if need_de else 1)
    _sincere_bwd_kernel[grid](
        de_ptr=de, stride_deb=de.stride(0), stride_ded=de.stride(1), dtau_ptr=dtau_rows, g_ptr=g, g_scale_ptr=g_scale,
        lse_ptr=lse, usum_ptr=usum, npos_ptr=npos, **_tensor_args(e, labels, tau, label_bias, shift),
        NEED_DE=bool(need_de), NEED_DTAU=bool(need_dtau),
        BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], BLOCK_DV=cfg["BLOCK_DV"],
        num_warps=cfg["num_warps"],
    )
    return de if need_de else None, dtau_rows.sum() if need_dtau else None
