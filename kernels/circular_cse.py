"""Triton kernels for circular_cse: a streaming forward of per-row sums and a one-pass symmetric backward.

No kernel ever writes a B x B tensor and none uses atomics. With x_ij = <e_i, e_j> and
c_ij = cos_i cos_j + sin_i sin_j (exactly 1 when y_i = y_j), computed in-tile from per-row cos/sin:
    r_ij = sign(x_ij - c_ij) max(0, |x_ij - c_ij| - m) if y_i = y_j, else x_ij - c_ij;   r_ii = 0
    forward:  rows_i = sum_{j != i} r_ij^2
    backward: dE_i = sum_{j != i} 2 r_ij (w_i + w_j) e_j     (w: upstream gradient of rows; x, r symmetric)
A backward program owns (row block I, d-slice V) and loops over column blocks J. Products accumulate in
fp32; fp16/bf16 operands go to tl.dot as loaded, fp32 with "ieee" precision.
Math: spherekit.reference.circular_cse.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import dot_precision, dot_tile, gram_config, scaled_grad, span, vectors


@triton.jit
def _row_targets(y_ptr, cos_ptr, sin_ptr, o, m):
    """Per-row label, cos and sin of rows o (0 on padding)."""
    return (tl.load(y_ptr + o, mask=m, other=0), tl.load(cos_ptr + o, mask=m, other=0.0),
            tl.load(sin_ptr + o, mask=m, other=0.0))


@triton.jit
def _residual_tile(e_ptr, stride_eb, stride_ed, y_ptr, cos_ptr, sin_ptr, o_b, m_b, y_b, cos_b, sin_b, o_n, m_n,
                   margin, D, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                   PRECISION: tl.constexpr):
    """r[b, n] (fp32) for rows o_b and columns o_n; 0 on the diagonal and on padding."""
    x = dot_tile(e_ptr, stride_eb, stride_ed, o_b, m_b, e_ptr, stride_eb, stride_ed, o_n, m_n, D,
                 BLOCK_B, BLOCK_N, BLOCK_D, PRECISION)
    y_n, cos_n, sin_n = _row_targets(y_ptr, cos_ptr, sin_ptr, o_n, m_n)
    same = y_b[:, None] == y_n[None, :]
    target = tl.where(same, 1.0, cos_b[:, None] * cos_n[None, :] + sin_b[:, None] * sin_n[None, :])
    diff = x - target
    shrunk = tl.where(diff > 0, tl.maximum(diff - margin, 0.0), tl.minimum(diff + margin, 0.0))
    r = tl.where(same, shrunk, diff)
    keep = m_b[:, None] & m_n[None, :] & (o_b[:, None] != o_n[None, :])
    return tl.where(keep, r, 0.0)


@triton.jit
def _circular_cse_fwd_kernel(
    rows_ptr,
    e_ptr, stride_eb, stride_ed,
    y_ptr, cos_ptr, sin_ptr,
    margin, B, D,
    PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    o_b, m_b = span(tl.program_id(0).to(tl.int64) * BLOCK_B, B, BLOCK_B)
    y_b, cos_b, sin_b = _row_targets(y_ptr, cos_ptr, sin_ptr, o_b, m_b)
    acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for n0 in range(0, B, BLOCK_N):
        o_n, m_n = span(n0, B, BLOCK_N)
        r = _residual_tile(e_ptr, stride_eb, stride_ed, y_ptr, cos_ptr, sin_ptr, o_b, m_b, y_b, cos_b, sin_b, o_n,
                           m_n, margin, D, BLOCK_B, BLOCK_N, BLOCK_D, PRECISION)
        acc += tl.sum(r * r, axis=1)
    tl.store(rows_ptr + o_b, acc, mask=m_b)


@triton.jit
def _circular_cse_bwd_kernel(
    de_ptr, stride_deb, stride_ded,
    w_ptr, w_scale_ptr,
    e_ptr, stride_eb, stride_ed,
    y_ptr, cos_ptr, sin_ptr,
    margin, B, D,
    PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    """Program (row block I, d-slice V): dE[I, V] = sum_J 2 r_IJ (w_I + w_J) @ E_J[:, V]. w is the upstream
    gradient divided by w_scale (fp16 tiles stay in the normal range); the output is multiplied back."""
    pid_b = tl.program_id(0).to(tl.int64)
    pid_v = tl.program_id(1).to(tl.int64)
    o_b, m_b = span(pid_b * BLOCK_B, B, BLOCK_B)
    y_b, cos_b, sin_b = _row_targets(y_ptr, cos_ptr, sin_ptr, o_b, m_b)
    w_b = tl.load(w_ptr + o_b, mask=m_b, other=0.0)
    o_v, m_v = span(pid_v * BLOCK_DV, D, BLOCK_DV)
    acc = tl.zeros((BLOCK_B, BLOCK_DV), dtype=tl.float32)
    for n0 in range(0, B, BLOCK_N):
        o_n, m_n = span(n0, B, BLOCK_N)
        r = _residual_tile(e_ptr, stride_eb, stride_ed, y_ptr, cos_ptr, sin_ptr, o_b, m_b, y_b, cos_b, sin_b, o_n,
                           m_n, margin, D, BLOCK_B, BLOCK_N, BLOCK_D, PRECISION)
        w_n = tl.load(w_ptr + o_n, mask=m_n, other=0.0)
        h = r * (w_b[:, None] + w_n[None, :])
        b_e = tl.load(e_ptr + o_n[:, None] * stride_eb + o_v[None, :] * stride_ed,
                      mask=m_n[:, None] & m_v[None, :], other=0.0)
        acc = tl.dot(h.to(b_e.dtype), b_e, acc, input_precision=PRECISION)
    w_scale = tl.load(w_scale_ptr)
    tl.store(de_ptr + o_b[:, None] * stride_deb + o_v[None, :] * stride_ded, acc * (2.0 * w_scale),
             mask=m_b[:, None] & m_v[None, :])


def circular_cse_fwd(e, labels, row_cos, row_sin, *, margin):
    """-> rows (B,) fp32: sum_{j != i} l_ij."""
    B, D = e.shape
    labels, row_cos, row_sin = vectors(labels, row_cos, row_sin)
    cfg = gram_config(D, e.dtype)
    rows = torch.empty(B, dtype=torch.float32, device=e.device)
    grid = (triton.cdiv(B, cfg["BLOCK_B"]),)
    _circular_cse_fwd_kernel[grid](
        rows_ptr=rows, e_ptr=e, stride_eb=e.stride(0), stride_ed=e.stride(1), y_ptr=labels, cos_ptr=row_cos,
        sin_ptr=row_sin, margin=float(margin), B=B, D=D, PRECISION=dot_precision(e.dtype),
        BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"],
    )
    return rows


def circular_cse_bwd(grad_rows, e, labels, row_cos, row_sin, *, margin):
    """-> dE (B, d) fp32."""
    B, D = e.shape
    cfg = gram_config(D, e.dtype)
    w, w_scale = scaled_grad(grad_rows)
    w, labels, row_cos, row_sin = vectors(w, labels, row_cos, row_sin)
    de = torch.empty((B, D), dtype=torch.float32, device=e.device)
    grid = (triton.cdiv(B, cfg["BLOCK_B"]), triton.cdiv(D, cfg["BLOCK_DV"]))
    _circular_cse_bwd_kernel[grid](
        de_ptr=de, stride_deb=de.stride(0), stride_ded=de.stride(1), w_ptr=w, w_scale_ptr=w_scale,
        e_ptr=e, stride_eb=e.stride(0), stride_ed=e.stride(1), y_ptr=labels, cos_ptr=row_cos, sin_ptr=row_sin,
        margin=float(margin), B=B, D=D, PRECISION=dot_precision(e.dtype),
        BLOCK_B=cfg["BLOCK_B"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=cfg["BLOCK_D"], BLOCK_DV=cfg["BLOCK_DV"],
        num_warps=cfg["num_warps"],
    )
    return de
