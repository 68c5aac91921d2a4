"""Triton kernels for nGPT: the geodesic residual update, L2 normalisation, multi-tensor renormalisation.

Norm(x) = x / max(||x||, eps). Geodesic residual per row: hn = Norm(h), fn = Norm(f), a = |alpha|,
y = hn + a (fn - hn), out = Norm(y). Backward (g = grad_out; r_x = 1 / max(||x||, eps); a row with
||x|| < eps has the Jacobian I / eps, i.e. no tangent projection):
    g_y = r_y (g - out <g, out>),  g_hn = (1 - a) g_y,  g_fn = a g_y,
    g_h = r_h (g_hn - hn <g_hn, hn>),  g_f likewise,  g_alpha = sign(alpha) sum_rows (fn - hn) g_y.
The forward stores the UNCLAMPED norms (||h||, ||f||, ||y||) per row; the backward derives r and the
clamp flag from them and recomputes hn, fn, y, out from h, f. Math: spherekit.reference.ngpt.

Robust norms: where the fp32 sum of x^2 overflows (|x| >= ~1.8e19) a row uses the sum of (c x)^2, c = 2^-80:
||x|| = ||c x|| / c, r = c / max(||c x||, c eps). c is a power of two, so the scaling is exact and ordinary
rows are unchanged. Row kernels compute the scaled sum only when a row of the tile overflowed; the chunked
renormalisation loops sum both. The saved fp32 norm is inf past 3.4e38 (the forward is still right; the
backward needs ||x|| <= 3.4e38).

Layout: a program owns BLOCK_R whole rows (BLOCK_D = next power of two >= d; BLOCK_R > 1 only for small
d), loads each row once and does all math in fp32. grad_alpha is deterministic without atomics: the
backward runs a fixed number of programs, each looping over row blocks pid, pid + G, ... and writing
one fp32 partial row (G, d); the launcher sums the partials with torch (fixed order). Rows longer than
4096 do not fit in registers for the backward: it reads them twice in column chunks instead (pass 1 the row
dots, pass 2 the gradients), which costs one more read of h, f and grad_out but never spills.
renormalize_ is one launch for a list of tensors of any float dtypes: a device table of per-tensor
descriptors (data_ptr, outer, n, inner, dtype code) plus a cumulative table of program counts; each
program binary-searches its tensor and normalises whole rows (inner == 1) or column tiles (inner > 1).
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from ._common import INTERPRET

MAX_D = 16384  # the forward holds a row in registers (one program per row); longer rows are refused
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
SMALL = tl.constexpr(2.0 ** -80)  # the scale of the robust norm (exact in fp32)


# ---- row helpers ---------------------------------------------------------------------------------------

@triton.jit
def _row_block(rb, R, D, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    """Rows rb * BLOCK_R ... (int64 offsets) by all BLOCK_D columns: (o_r, o_d, m_r, m_d, m = the tile's mask)."""
    o_r = rb * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)  # int64 before the stride products
    o_d = tl.arange(0, BLOCK_D)
    m_r = o_r < R
    m_d = o_d < D
    return o_r, o_d, m_r, m_d, m_r[:, None] & m_d[None, :]


@triton.jit
def _load_rows(p, stride_r, stride_d, o_r, o_d, m):
    """(BLOCK_R, BLOCK_D) tile as fp32 (0 outside the mask)."""
    return tl.load(p + o_r[:, None] * stride_r + o_d[None, :] * stride_d, mask=m, other=0.0).to(tl.float32)


@triton.jit
def _store_rows(p, stride_r, stride_d, o_r, o_d, m, b_x):
    """Stores the fp32 tile b_x in p's dtype (inside the mask)."""
    tl.store(p + o_r[:, None] * stride_r + o_d[None, :] * stride_d, b_x.to(p.dtype.element_ty), mask=m)


@triton.jit
def _sum_squares(b_x, axis: tl.constexpr):
    """(sum x^2, sum (SMALL x)^2) along axis, for _robust_norm."""
    b_s = b_x * SMALL
    return tl.sum(b_x * b_x, axis=axis), tl.sum(b_s * b_s, axis=axis)


@triton.jit
def _row_norm(b_x, eps):
    """_robust_norm of each row of a tile; the scaled sums are only computed when some row's plain sum overflowed."""
    ss = tl.sum(b_x * b_x, axis=1)
    ss_small = ss
    if tl.max(ss) == float("inf"):
        b_s = b_x * SMALL
        ss_small = tl.sum(b_s * b_s, axis=1)
    return _robust_norm(ss, ss_small, eps)


@triton.jit
def _robust_norm(ss, ss_small, eps):
    """(||x||, c, den) from the plain and the SMALL-scaled sums of squares (module docstring): Norm(x) = c x / den,
    den = max(||c x||, c eps); c = 1 (den = max(||x||, eps)) unless the plain sum overflowed."""
    big = ss == float("inf")
    c = tl.where(big, SMALL, 1.0)
    s = tl.sqrt(tl.where(big, ss_small, ss))
    return s / c, c, tl.maximum(s, c * eps)


@triton.jit
def _inv_robust_norm(ss, ss_small, eps):
    """r = 1 / max(||x||, eps) = c / den (see _robust_norm)."""
    _, c, den = _robust_norm(ss, ss_small, eps)
    return c / den


@triton.jit
def _inv_norm(n, eps):
    """r = 1 / max(n, eps) and the projection flag (1 where n >= eps, 0 on clamped rows), per row."""
    return 1.0 / tl.maximum(n, eps), tl.where(n >= eps, 1.0, 0.0)


@triton.jit
def _norm_vjp(g, x_unit, r, proj):
    """Vector-Jacobian product of Norm at a row: r (g - x_unit <g, x_unit>), without projection if clamped."""
    dot = tl.sum(g * x_unit, axis=1)
    return r[:, None] * (g - (proj * dot)[:, None] * x_unit)


# ---- geodesic residual -----------------------------------------------------------------------------------

@triton.jit
def _geodesic_residual_fwd_kernel(
    out_ptr, stride_outr, stride_outd,
    norms_ptr,
    h_ptr, stride_hr, stride_hd,
    f_ptr, stride_fr, stride_fd,
    alpha_ptr,
    R, D, eps,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):
    o_r, o_d, m_r, m_d, m = _row_block(tl.program_id(0).to(tl.int64), R, D, BLOCK_R, BLOCK_D)
    b_h = _load_rows(h_ptr, stride_hr, stride_hd, o_r, o_d, m)
    b_f = _load_rows(f_ptr, stride_fr, stride_fd, o_r, o_d, m)
    b_a = tl.abs(tl.load(alpha_ptr + o_d, mask=m_d, other=0.0).to(tl.float32))[None, :]
    n_h, c_h, den_h = _row_norm(b_h, eps)
    n_f, c_f, den_f = _row_norm(b_f, eps)
    b_hn = b_h * c_h[:, None] / den_h[:, None]
    b_fn = b_f * c_f[:, None] / den_f[:, None]
    b_y = b_hn + b_a * (b_fn - b_hn)
    n_y = tl.sqrt(tl.sum(b_y * b_y, axis=1))
    b_out = b_y / tl.maximum(n_y, eps)[:, None]
    _store_rows(out_ptr, stride_outr, stride_outd, o_r, o_d, m, b_out)
    tl.store(norms_ptr + o_r * 3, n_h, mask=m_r)
    tl.store(norms_ptr + o_r * 3 + 1, n_f, mask=m_r)
    tl.store(norms_ptr + o_r * 3 + 2, n_y, mask=m_r)


@triton.jit
def _geodesic_residual_bwd_kernel(
    gh_ptr, stride_ghr, stride_ghd,
    gf_ptr, stride_gfr, stride_gfd,
    part_ptr,
    dout_ptr, stride_doutr, stride_doutd,
    h_ptr, stride_hr, stride_hd,
    f_ptr, stride_fr, stride_fd,
    alpha_ptr, norms_ptr,
    R, D, eps,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Program pid handles row blocks pid, pid + G, ... (G = number of programs) and writes the fp32
    partial sign(alpha) * sum (fn - hn) g_y over its rows to part[pid, :D]."""
    pid = tl.program_id(0)
    n_prog = tl.num_programs(0)
    o_d = tl.arange(0, BLOCK_D)
    m_d = o_d < D
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for rb in range(pid, tl.cdiv(R, BLOCK_R), n_prog):
        # alpha is re-read per row block (an L1/L2 hit) rather than held: registers are the limit here
        b_a = tl.abs(tl.load(alpha_ptr + o_d, mask=m_d, other=0.0))[None, :]
        o_r, _, m_r, _, m = _row_block(rb, R, D, BLOCK_R, BLOCK_D)
        r_h, p_h = _inv_norm(tl.load(norms_ptr + o_r * 3, mask=m_r, other=1.0), eps)
        r_f, p_f = _inv_norm(tl.load(norms_ptr + o_r * 3 + 1, mask=m_r, other=1.0), eps)
        r_y, p_y = _inv_norm(tl.load(norms_ptr + o_r * 3 + 2, mask=m_r, other=1.0), eps)
        b_hn = _load_rows(h_ptr, stride_hr, stride_hd, o_r, o_d, m) * r_h[:, None]
        b_fn = _load_rows(f_ptr, stride_fr, stride_fd, o_r, o_d, m) * r_f[:, None]
        b_g = _load_rows(dout_ptr, stride_doutr, stride_doutd, o_r, o_d, m)
        b_diff = b_fn - b_hn
        b_out = (b_hn + b_a * b_diff) * r_y[:, None]
        b_gy = _norm_vjp(b_g, b_out, r_y, p_y)
        acc += tl.sum(b_diff * b_gy, axis=0)
        b_gh = _norm_vjp((1.0 - b_a) * b_gy, b_hn, r_h, p_h)
        b_gf = _norm_vjp(b_a * b_gy, b_fn, r_f, p_f)
        _store_rows(gh_ptr, stride_ghr, stride_ghd, o_r, o_d, m, b_gh)
        _store_rows(gf_ptr, stride_gfr, stride_gfd, o_r, o_d, m, b_gf)
    b_alpha = tl.load(alpha_ptr + o_d, mask=m_d, other=0.0)
    sign = tl.where(b_alpha > 0, 1.0, tl.where(b_alpha < 0, -1.0, 0.0))
    tl.store(part_ptr + pid.to(tl.int64) * D + o_d, acc * sign, mask=m_d)


@triton.jit
def _chunk_terms(h_ptr, stride_hr, stride_hd, f_ptr, stride_fr, stride_fd, dout_ptr, stride_doutr, stride_doutd,
                 alpha_ptr, row, o_d, m_d, r_h, r_f, r_y):
    """One column chunk of one row as fp32: (|alpha|, sign(alpha), hn, fn, g, fn - hn, out)."""
    b_alpha = tl.load(alpha_ptr + o_d, mask=m_d, other=0.0)
    b_a = tl.abs(b_alpha)
    b_hn = tl.load(h_ptr + row * stride_hr + o_d * stride_hd, mask=m_d, other=0.0).to(tl.float32) * r_h
    b_fn = tl.load(f_ptr + row * stride_fr + o_d * stride_fd, mask=m_d, other=0.0).to(tl.float32) * r_f
    b_g = tl.load(dout_ptr + row * stride_doutr + o_d * stride_doutd, mask=m_d, other=0.0).to(tl.float32)
    b_diff = b_fn - b_hn
    sign = tl.where(b_alpha > 0, 1.0, tl.where(b_alpha < 0, -1.0, 0.0))
    return b_a, sign, b_hn, b_fn, b_g, b_diff, (b_hn + b_a * b_diff) * r_y


@triton.jit
def _geodesic_residual_bwd_chunked_kernel(
    gh_ptr, stride_ghr, stride_ghd,
    gf_ptr, stride_gfr, stride_gfd,
    part_ptr,
    dout_ptr, stride_doutr, stride_doutd,
    h_ptr, stride_hr, stride_hd,
    f_ptr, stride_fr, stride_fd,
    alpha_ptr, norms_ptr,
    R, D, eps,
    BLOCK_C: tl.constexpr,
):
    """The backward for rows too long to hold in registers: program pid takes rows pid, pid + G, ... one at a time,
    BLOCK_C columns per step. Pass 1 sums the five row dots the tangent projections need; with k = p_y <g, out>,
        <(1 - a) g_y, hn> = r_y (<(1 - a) g, hn> - k <(1 - a) out, hn>),   <a g_y, fn> = r_y (<a g, fn> - k <a out, fn>);
    pass 2 recomputes each chunk, writes grad_h and grad_f and adds sign(alpha) (fn - hn) g_y to the program's
    partial row part[pid, :D] (zeroed by the launcher; the program owns it: no atomics, deterministic)."""
    pid = tl.program_id(0)
    p_part = part_ptr + pid.to(tl.int64) * D
    o_c = tl.arange(0, BLOCK_C)
    for r in range(pid, R, tl.num_programs(0)):
        row = tl.full((), 0, tl.int64) + r  # int64 offsets (the loop index is i32 compiled, int interpreted)
        r_h, p_h = _inv_norm(tl.load(norms_ptr + row * 3), eps)
        r_f, p_f = _inv_norm(tl.load(norms_ptr + row * 3 + 1), eps)
        r_y, p_y = _inv_norm(tl.load(norms_ptr + row * 3 + 2), eps)
        s_go = tl.zeros((), dtype=tl.float32)
        s_gh = tl.zeros((), dtype=tl.float32)
        s_oh = tl.zeros((), dtype=tl.float32)
        s_gf = tl.zeros((), dtype=tl.float32)
        s_of = tl.zeros((), dtype=tl.float32)
        for c0 in range(0, D, BLOCK_C):
            o_d = c0 + o_c
            b_a, _, b_hn, b_fn, b_g, _, b_out = _chunk_terms(
                h_ptr, stride_hr, stride_hd, f_ptr, stride_fr, stride_fd, dout_ptr, stride_doutr, stride_doutd,
                alpha_ptr, row, o_d, o_d < D, r_h, r_f, r_y)
            s_go += tl.sum(b_g * b_out)
            s_gh += tl.sum((1.0 - b_a) * b_g * b_hn)
            s_oh += tl.sum((1.0 - b_a) * b_out * b_hn)
            s_gf += tl.sum(b_a * b_g * b_fn)
            s_of += tl.sum(b_a * b_out * b_fn)
        k = p_y * s_go
        dot_h = p_h * r_y * (s_gh - k * s_oh)
        dot_f = p_f * r_y * (s_gf - k * s_of)
        for c0 in range(0, D, BLOCK_C):
            o_d = c0 + o_c
            m_d = o_d < D
            b_a, sign, b_hn, b_fn, b_g, b_diff, b_out = _chunk_terms(
                h_ptr, stride_hr, stride_hd, f_ptr, stride_fr, stride_fd, dout_ptr, stride_doutr, stride_doutd,
                alpha_ptr, row, o_d, m_d, r_h, r_f, r_y)
            b_gy = r_y * (b_g - k * b_out)
            b_gh = r_h * ((1.0 - b_a) * b_gy - dot_h * b_hn)
            b_gf = r_f * (b_a * b_gy - dot_f * b_fn)
            tl.store(gh_ptr + row * stride_ghr + o_d * stride_ghd, b_gh.to(gh_ptr.dtype.element_ty), mask=m_d)
            tl.store(gf_ptr + row * stride_gfr + o_d * stride_gfd, b_gf.to(gf_ptr.dtype.element_ty), mask=m_d)
            b_part = tl.load(p_part + o_d, mask=m_d, other=0.0)
            tl.store(p_part + o_d, b_part + sign * b_diff * b_gy, mask=m_d)


# ---- l2 normalisation ------------------------------------------------------------------------------------

@triton.jit
def _l2_normalize_fwd_kernel(
    out_ptr, stride_outr, stride_outd,
    norms_ptr,
    x_ptr, stride_xr, stride_xd,
    R, D, eps,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):
    o_r, o_d, m_r, _, m = _row_block(tl.program_id(0).to(tl.int64), R, D, BLOCK_R, BLOCK_D)
    b_x = _load_rows(x_ptr, stride_xr, stride_xd, o_r, o_d, m)
    n_x, c_x, den_x = _row_norm(b_x, eps)
    b_out = b_x * c_x[:, None] / den_x[:, None]
    _store_rows(out_ptr, stride_outr, stride_outd, o_r, o_d, m, b_out)
    tl.store(norms_ptr + o_r, n_x, mask=m_r)


@triton.jit
def _l2_normalize_bwd_kernel(
    gx_ptr, stride_gxr, stride_gxd,
    dout_ptr, stride_doutr, stride_doutd,
    x_ptr, stride_xr, stride_xd,
    norms_ptr,
    R, D, eps,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):
    o_r, o_d, m_r, _, m = _row_block(tl.program_id(0).to(tl.int64), R, D, BLOCK_R, BLOCK_D)
    r_x, p_x = _inv_norm(tl.load(norms_ptr + o_r, mask=m_r, other=1.0), eps)
    b_out = _load_rows(x_ptr, stride_xr, stride_xd, o_r, o_d, m) * r_x[:, None]
    b_g = _load_rows(dout_ptr, stride_doutr, stride_doutd, o_r, o_d, m)
    b_gx = _norm_vjp(b_g, b_out, r_x, p_x)
    _store_rows(gx_ptr, stride_gxr, stride_gxd, o_r, o_d, m, b_gx)


# ---- multi-tensor renormalisation --------------------------------------------------------------------------

@triton.jit
def _renorm_rows(p, outer, n, b, eps, BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr):
    """Rows b*BLOCK_U ... of a contiguous (outer, n) tensor at p, BLOCK_K elements at a time (one load when
    n <= BLOCK_K)."""
    o_u = b * BLOCK_U + tl.arange(0, BLOCK_U)
    m_u = o_u < outer
    o_k = tl.arange(0, BLOCK_K)
    if n <= BLOCK_K:
        m = m_u[:, None] & (o_k < n)[None, :]
        p_t = p + o_u[:, None] * n + o_k[None, :]
        b_x = tl.load(p_t, mask=m, other=0.0).to(tl.float32)
        ss, ss_small = _sum_squares(b_x, 1)
        r = _inv_robust_norm(ss, ss_small, eps)
        tl.store(p_t, (b_x * r[:, None]).to(p.dtype.element_ty), mask=m)
    else:
        ss = tl.zeros((BLOCK_U,), dtype=tl.float32)
        ss_small = tl.zeros((BLOCK_U,), dtype=tl.float32)
        for k0 in range(0, n, BLOCK_K):
            m = m_u[:, None] & (k0 + o_k < n)[None, :]
            b_x = tl.load(p + o_u[:, None] * n + k0 + o_k[None, :], mask=m, other=0.0).to(tl.float32)
            c_ss, c_small = _sum_squares(b_x, 1)
            ss += c_ss
            ss_small += c_small
        r = _inv_robust_norm(ss, ss_small, eps)
        for k0 in range(0, n, BLOCK_K):
            m = m_u[:, None] & (k0 + o_k < n)[None, :]
            p_t = p + o_u[:, None] * n + k0 + o_k[None, :]
            b_x = tl.load(p_t, mask=m, other=0.0).to(tl.float32)
            tl.store(p_t, (b_x * r[:, None]).to(p.dtype.element_ty), mask=m)


@triton.jit
def _renorm_cols(p, n, inner, b, eps, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    """BLOCK_I adjacent columns of one (n, inner) slab of a contiguous (outer, n, inner) tensor at p,
    BLOCK_N of n at a time (loads coalesced along inner). Block b = slab * ceil(inner / BLOCK_I) + column block."""
    n_ib = tl.cdiv(inner, BLOCK_I)
    o_i = (b % n_ib) * BLOCK_I + tl.arange(0, BLOCK_I)
    m_i = o_i < inner
    p_s = p + (b // n_ib) * n * inner
    o_n = tl.arange(0, BLOCK_N)
    ss = tl.zeros((BLOCK_I,), dtype=tl.float32)
    ss_small = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for k0 in range(0, n, BLOCK_N):
        m = (k0 + o_n < n)[:, None] & m_i[None, :]
        b_x = tl.load(p_s + (k0 + o_n[:, None]) * inner + o_i[None, :], mask=m, other=0.0).to(tl.float32)
        c_ss, c_small = _sum_squares(b_x, 0)
        ss += c_ss
        ss_small += c_small
    r = _inv_robust_norm(ss, ss_small, eps)
    for k0 in range(0, n, BLOCK_N):
        m = (k0 + o_n < n)[:, None] & m_i[None, :]
        p_t = p_s + (k0 + o_n[:, None]) * inner + o_i[None, :]
        b_x = tl.load(p_t, mask=m, other=0.0).to(tl.float32)
        tl.store(p_t, (b_x * r[None, :]).to(p.dtype.element_ty), mask=m)


@triton.jit
def _renorm_tensor(p, outer, n, inner, b, eps,
                   BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    """Program-local block b of one (outer, n, inner) tensor at p, normalised over n in place: whole rows
    when inner == 1, else column tiles."""
    if inner == 1:
        _renorm_rows(p, outer, n, b, eps, BLOCK_U, BLOCK_K)
    else:
        _renorm_cols(p, n, inner, b, eps, BLOCK_N, BLOCK_I)


@triton.jit
def _renormalize_kernel(
    meta_ptr, starts_ptr,
    T, STEPS, eps,
    BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr,
):
    """meta (T, 8) int64 rows: data_ptr, outer, n, inner, dtype code (0 fp32, 1 fp16, 2 bf16), 0, 0, 0;
    starts (T + 1,) int64: first program of each tensor. STEPS = ceil(log2(T)) bisection steps."""
    pid = tl.program_id(0).to(tl.int64)
    lo = pid * 0
    hi = lo + T
    for _ in range(STEPS):  # invariant: starts[lo] <= pid < starts[hi]
        mid = (lo + hi) // 2
        go = tl.load(starts_ptr + mid) <= pid
        lo = tl.where(go, mid, lo)
        hi = tl.where(go, hi, mid)
    row = meta_ptr + lo * 8
    addr = tl.load(row)
    outer = tl.load(row + 1)
    n = tl.load(row + 2)
    inner = tl.load(row + 3)
    code = tl.load(row + 4)
    b = pid - tl.load(starts_ptr + lo)
    if code == 0:
        _renorm_tensor(addr.to(tl.pointer_type(tl.float32)), outer, n, inner, b, eps,
                       BLOCK_U, BLOCK_K, BLOCK_N, BLOCK_I)
    elif code == 1:
        _renorm_tensor(addr.to(tl.pointer_type(tl.float16)), outer, n, inner, b, eps,
                       BLOCK_U, BLOCK_K, BLOCK_N, BLOCK_I)
    else:
        _renorm_tensor(addr.to(tl.pointer_type(tl.bfloat16)), outer, n, inner, b, eps,
                       BLOCK_U, BLOCK_K, BLOCK_N, BLOCK_I)


# ---- configuration and launchers ---------------------------------------------------------------------------

def _config(D: int) -> dict:
    """Launch configuration for rows of length D (renormalize_: D = its longest row).

    Row kernels: BLOCK_D = next power of two >= D, BLOCK_R rows per program so that a tile holds >= 1024
    elements (at most 64 rows), and num_warps so that each thread holds <= 8 elements of a tile up to
    D = 4096 (4 warps up to 1024 elements, then 8/16/32). The backward keeps ~15 fp32 values per element
    live: at D = 4096 (16 warps) sm_90 bf16 compiles report 108 registers and no spills; past 4096 the 32-warp
    cap leaves 64 registers per thread, and the whole-row backward spilled (D = 8192: 104 B; D = MAX_D: 936 B),
    so rows longer than BLOCK_C = 4096 take the chunked backward (two passes of BLOCK_C columns, 16 warps; no
    spills), see benches/triton_resources.py. Renormalisation: row tiles BLOCK_U x BLOCK_K of <= 4096 elements
    (longer rows loop), column tiles BLOCK_N x BLOCK_I = 32 x 64.
    The interpreter gets one small configuration with several rows per program for small D (so the tests
    exercise the partial row blocks), the chunked backward past 128 columns in chunks of 64, and small
    renormalisation tiles (so the tests exercise every loop). BLOCK_C = 0: the whole-row backward.
    RESIDUAL_WARPS: the geodesic residual's whole-row forward and backward at BLOCK_D = 4096 run 4 warps, not 16:
    scripts/gpu_tune.py measured fwd + bwd of 65,536 rows in bf16 on an H200 at 2.02 ms with 4 warps against
    2.97 ms (16), 2.86 ms (8) and 2.82 ms (32) (benches/results/gpu/h200_tune.csv), although 4 warps hold
    4x the elements per thread and spill (benches/triton_resources.py allows it, citing this measurement).
    Every other width keeps num_warps (not measured on a GPU; nor was fp32 at d = 4096)."""
    block_d = triton.next_power_of_2(max(int(D), 1))
    if INTERPRET:
        return dict(BLOCK_R=4 if block_d <= 64 else 1, BLOCK_D=block_d, BLOCK_C=64 if block_d > 128 else 0,
                    BLOCK_U=2, BLOCK_K=min(block_d, 32), BLOCK_N=8, BLOCK_I=8, num_warps=1, RESIDUAL_WARPS=1,
                    num_stages=1)
    block_r = max(1, min(64, 1024 // block_d))
    tile = block_r * block_d
    num_warps = 4 if tile <= 1024 else 8 if tile <= 2048 else 16 if tile <= 4096 else 32
    block_k = min(block_d, 4096)
    # the geodesic residual's row kernels at d = 4096: 4 warps (see the docstring's measurement)
    residual_warps = 4 if block_d == 4096 and block_r == 1 else num_warps
    return dict(BLOCK_R=block_r, BLOCK_D=block_d, BLOCK_C=4096 if block_d > 4096 else 0,
                BLOCK_U=max(1, min(16, 4096 // block_k)), BLOCK_K=block_k, BLOCK_N=32, BLOCK_I=64, num_warps=num_warps,
                RESIDUAL_WARPS=residual_warps, num_stages=1)


@functools.lru_cache(maxsize=None)
def _num_sms(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _num_programs_bwd(row_blocks: int, num_warps: int, device: torch.device) -> int:
    """Programs of the grid-stride backward: ~ enough to fill the GPU (64 warps per SM), never more than
    there are row blocks. The interpreter uses 3 so the tests see several partials and several loops."""
    if INTERPRET or device.type != "cuda":
        return max(1, min(row_blocks, 3))
    return max(1, min(row_blocks, _num_sms(device.index or 0) * max(1, 64 // num_warps)))


def _check_rows(name: str, x: torch.Tensor, like: torch.Tensor | None = None) -> None:
    if x.dim() != 2 or (x.shape[1] > 1 and x.stride(1) != 1):
        raise ValueError(f"{name}: expected a 2-D (R, d) tensor with unit last-dim stride, got shape "
                         f"{tuple(x.shape)} strides {x.stride()}")
    if x.dtype not in DTYPE_CODES:
        raise TypeError(f"{name}: expected dtype in {list(DTYPE_CODES)}, got {x.dtype}")
    if like is not None and (x.shape != like.shape or x.device != like.device):
        raise ValueError(f"{name}: expected shape {tuple(like.shape)} on {like.device}, got {tuple(x.shape)} "
                         f"on {x.device}")
    if x.shape[1] > MAX_D:
        raise ValueError(f"{name}: expected d <= {MAX_D} (one row per program in registers), got d={x.shape[1]}")


def _check_fp32(name: str, x: torch.Tensor, shape: tuple, device: torch.device) -> None:
    if x.dtype != torch.float32 or tuple(x.shape) != shape or not x.is_contiguous() or x.device != device:
        raise ValueError(f"{name}: expected a contiguous float32 tensor of shape {shape} on {device}, got "
                         f"{x.dtype} shape {tuple(x.shape)} contiguous={x.is_contiguous()} on {x.device}")


def _launch_opts(cfg: dict, warps: str = "num_warps") -> dict:
    return dict(BLOCK_R=cfg["BLOCK_R"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg[warps], num_stages=cfg["num_stages"])


def geodesic_residual_fwd(h: torch.Tensor, f: torch.Tensor, alpha: torch.Tensor, *, eps: float):
    """h, f (R, d) same dtype, alpha (d,) fp32 -> out (R, d) in h.dtype, norms (R, 3) fp32 (||h||, ||f||, ||y||)."""
    _check_rows("h", h)
    _check_rows("f", f, like=h)
    R, D = h.shape
    _check_fp32("alpha", alpha, (D,), h.device)
    cfg = _config(D)
    out = torch.empty_like(h)
    norms = torch.empty((R, 3), dtype=torch.float32, device=h.device)
    if R == 0:
        return out, norms
    grid = (triton.cdiv(R, cfg["BLOCK_R"]),)
    _geodesic_residual_fwd_kernel[grid](
        out_ptr=out, stride_outr=out.stride(0), stride_outd=out.stride(1), norms_ptr=norms,
        h_ptr=h, stride_hr=h.stride(0), stride_hd=h.stride(1), f_ptr=f, stride_fr=f.stride(0), stride_fd=f.stride(1),
        alpha_ptr=alpha, R=R, D=D, eps=float(eps), **_launch_opts(cfg, "RESIDUAL_WARPS"),
    )
    return out, norms


def geodesic_residual_bwd(grad_out, h, f, alpha, norms, *, eps: float):
    """-> grad_h (R, d) h.dtype, grad_f (R, d) f.dtype, grad_alpha (d,) fp32 (deterministic: no atomics)."""
    _check_rows("h", h)
    _check_rows("f", f, like=h)
    _check_rows("grad_out", grad_out, like=h)
    R, D = h.shape
    _check_fp32("alpha", alpha, (D,), h.device)
    _check_fp32("norms", norms, (R, 3), h.device)
    cfg = _config(D)
    grad_h = torch.empty_like(h)
    grad_f = torch.empty_like(f)
    if R == 0:
        return grad_h, grad_f, torch.zeros(D, dtype=torch.float32, device=h.device)
    tensors = dict(
        gh_ptr=grad_h, stride_ghr=grad_h.stride(0), stride_ghd=grad_h.stride(1),
        gf_ptr=grad_f, stride_gfr=grad_f.stride(0), stride_gfd=grad_f.stride(1),
        dout_ptr=grad_out, stride_doutr=grad_out.stride(0), stride_doutd=grad_out.stride(1),
        h_ptr=h, stride_hr=h.stride(0), stride_hd=h.stride(1), f_ptr=f, stride_fr=f.stride(0), stride_fd=f.stride(1),
        alpha_ptr=alpha, norms_ptr=norms, R=R, D=D, eps=float(eps))
    if cfg["BLOCK_C"]:  # long rows: chunked, the partials accumulate in place (zeroed here)
        chunk = _config(cfg["BLOCK_C"])
        G = _num_programs_bwd(R, chunk["num_warps"], h.device)
        partial = torch.zeros((G, D), dtype=torch.float32, device=h.device)
        _geodesic_residual_bwd_chunked_kernel[(G,)](part_ptr=partial, **tensors, BLOCK_C=cfg["BLOCK_C"],
                                                    num_warps=chunk["num_warps"], num_stages=1)
    else:
        G = _num_programs_bwd(triton.cdiv(R, cfg["BLOCK_R"]), cfg["RESIDUAL_WARPS"], h.device)
        partial = torch.empty((G, D), dtype=torch.float32, device=h.device)
        _geodesic_residual_bwd_kernel[(G,)](part_ptr=partial, **tensors, **_launch_opts(cfg, "RESIDUAL_WARPS"))
    return grad_h, grad_f, partial.sum(0)


def l2_normalize_fwd(x: torch.Tensor, *, eps: float):
    """x (R, d) -> out (R, d) in x.dtype, norms (R,) fp32 unclamped."""
    _check_rows("x", x)
    R, D = x.shape
    cfg = _config(D)
    out = torch.empty_like(x)
    norms = torch.empty(R, dtype=torch.float32, device=x.device)
    if R == 0:
        return out, norms
    _l2_normalize_fwd_kernel[(triton.cdiv(R, cfg["BLOCK_R"]),)](
        out_ptr=out, stride_outr=out.stride(0), stride_outd=out.stride(1), norms_ptr=norms,
        x_ptr=x, stride_xr=x.stride(0), stride_xd=x.stride(1), R=R, D=D, eps=float(eps), **_launch_opts(cfg),
    )
    return out, norms


def l2_normalize_bwd(grad_out, x, norms, *, eps: float):
    """-> grad_x (R, d) in x.dtype."""
    _check_rows("x", x)
    _check_rows("grad_out", grad_out, like=x)
    R, D = x.shape
    _check_fp32("norms", norms, (R,), x.device)
    cfg = _config(D)
    grad_x = torch.empty_like(x)
    if R == 0:
        return grad_x
    _l2_normalize_bwd_kernel[(triton.cdiv(R, cfg["BLOCK_R"]),)](
        gx_ptr=grad_x, stride_gxr=grad_x.stride(0), stride_gxd=grad_x.stride(1),
        dout_ptr=grad_out, stride_doutr=grad_out.stride(0), stride_doutd=grad_out.stride(1),
        x_ptr=x, stride_xr=x.stride(0), stride_xd=x.stride(1), norms_ptr=norms, R=R, D=D, eps=float(eps),
        **_launch_opts(cfg),
    )
    return grad_x


def _renorm_plan(views, cfg: dict) -> tuple[list[int], list[int]]:
    """(meta rows flattened, starts) for the non-empty views."""
    meta, starts = [], [0]
    for v in views:
        outer, n, inner = v.shape
        if outer * n * inner == 0:
            continue
        blocks = triton.cdiv(outer, cfg["BLOCK_U"]) if inner == 1 else outer * triton.cdiv(inner, cfg["BLOCK_I"])
        meta += [v.data_ptr(), outer, n, inner, DTYPE_CODES[v.dtype], 0, 0, 0]
        starts.append(starts[-1] + blocks)
    return meta, starts


@functools.lru_cache(maxsize=16)
def _device_tables(meta: tuple, starts: tuple, device: torch.device):
    """The descriptor tables on the device, cached: a model renormalises the same weights every step, so
    the host-to-device copy happens once per set of tensors (the key is the table content itself)."""
    return (torch.tensor(meta, dtype=torch.int64, device=device).view(-1, 8),
            torch.tensor(starts, dtype=torch.int64, device=device))


def renormalize_(views, *, eps: float) -> None:
    """In place: each contiguous 3-D view (outer, n, inner) <- Norm over its middle axis n. One launch."""
    views = list(views)
    for i, v in enumerate(views):
        if not isinstance(v, torch.Tensor) or v.dim() != 3 or not v.is_contiguous():
            raise ValueError(f"views[{i}]: expected a contiguous 3-D (outer, n, inner) tensor, got "
                             + (f"shape {tuple(v.shape)} strides {v.stride()}" if isinstance(v, torch.Tensor)
                                else type(v).__name__))
        if v.dtype not in DTYPE_CODES:
            raise TypeError(f"views[{i}]: expected dtype in {list(DTYPE_CODES)}, got {v.dtype}")
        if v.device != views[0].device:
            raise ValueError(f"views[{i}]: expected device {views[0].device}, got {v.device}")
    rows = [v.shape[1] for v in views if v.shape[2] == 1 and v.numel() > 0]
    cfg = _config(max(rows, default=1))
    meta, starts = _renorm_plan(views, cfg)
    T = len(starts) - 1
    if T == 0:
        return
    meta_t, starts_t = _device_tables(tuple(meta), tuple(starts), views[0].device)
    _renormalize_kernel[(starts[-1],)](
        meta_ptr=meta_t, starts_ptr=starts_t, T=T, STEPS=math.ceil(math.log2(T)) if T > 1 else 0, eps=float(eps),
        BLOCK_U=cfg["BLOCK_U"], BLOCK_K=cfg["BLOCK_K"], BLOCK_N=cfg["BLOCK_N"], BLOCK_I=cfg["BLOCK_I"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
