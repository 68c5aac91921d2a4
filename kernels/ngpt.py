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
rows are unchanged. Row kernels compute the scaled sum only when a row of the tile overflowed (the geodesic
forward: in its rare path); the chunked renormalisation loops sum both. The saved fp32 norm is inf past 3.4e38
(the forward is still right; the backward needs ||x|| <= 3.4e38).

Layout: a program owns BLOCK_R whole rows at a time (BLOCK_D = next power of two >= d; BLOCK_R > 1 only for small
d), loads each row once and does all math in fp32. The geodesic residual's kernels are persistent: G resident
programs (as many as fit on the SMs at once, from the compiled kernel's registers: one per SM for the bf16
backward at d = 4096) loop over row blocks pid, pid + G, ... with tl.range(num_stages=...), so the next blocks'
loads are in flight (cp.async into shared memory) while a block computes. Each row costs ONE reduction round
(one tuple reduction of five sums) in the forward and ONE in the backward (the five dots of the tangent
projections). grad_alpha is deterministic without atomics: each backward program writes one fp32 partial row
(G, d) and the launcher sums the partials with torch (fixed order). Rows longer than 4096 do not fit in registers
for the backward: it reads them twice in column chunks instead (pass 1 the row dots, pass 2 the gradients), which
costs one more read of h, f and grad_out but never spills; rows longer than 8192 also take the forward's explicit
path (two rounds), which fits the 64 registers of 32 warps without spilling.
renormalize_ is one launch for a list of tensors of any float dtypes: a device table of per-tensor
descriptors (data_ptr, outer, n, inner, dtype code) plus a cumulative table of program counts; each
program binary-searches its tensor and normalises whole rows (inner == 1) or column tiles (inner > 1).

Roofline of the goal row (geodesic_residual fwd + bwd, R x d = 65,536 x 4,096 = 268,435,456 elements, bf16;
H200 ceilings measured before in benches/results/gpu/: copy 4,106 GB/s, triad 4,276 GB/s):
    forward   HBM 1,611,399,168 B: h, f read and out written (3 x 536,870,912 B), norms written (786,432 B);
              19 flops per element (five sums, the step, the scaling) = 5.10e9 FLOP
    backward  HBM 2,689,466,368 B: grad_out, h, f read and grad_h, grad_f written (5 x 536,870,912 B), norms read
              (786,432 B), the (G, d) fp32 partials written and read (G = 132: 2 x 2,162,688 B);
              33 flops per element (five dots, g_y, g_h, g_f, the grad_alpha share) = 8.86e9 FLOP
    total     4,300,865,536 B, 1.40e10 FLOP (3.2 FLOP/B: memory-bound; at the 67 TFLOP/s fp32 datasheet rate
              the math alone would take 0.21 ms)
    predicted at copy 4,106 GB/s: forward 0.392 ms + backward 0.655 ms = 1.047 ms (at triad: 1.006 ms);
    the goal, >= 80% of the measured copy bandwidth over the bench's 4,295,753,728 B, is <= 1.308 ms
    (measured before with the three-round kernels: 2.86 ms, 2.02 ms at 4 warps; not yet measured for these).
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from ._common import INTERPRET

MAX_D = 16384  # the forward holds a whole row in registers; longer rows are refused
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
SMALL = tl.constexpr(2.0 ** -80)  # the scale of the robust norm (exact in fp32)
CANCEL = tl.constexpr(0.5)  # the geodesic forward keeps its one-round ||y|| while ||y||^2 >= CANCEL x its terms


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
def _add5(a0, a1, a2, a3, a4, b0, b1, b2, b3, b4):
    """The combine function of a five-sum tuple reduction."""
    return a0 + b0, a1 + b1, a2 + b2, a3 + b3, a4 + b4


@triton.jit
def _add4(a0, a1, a2, a3, b0, b1, b2, b3):
    """The combine function of a four-sum tuple reduction."""
    return a0 + b0, a1 + b1, a2 + b2, a3 + b3


@triton.jit
def _sum5(x0, x1, x2, x3, x4):
    """Five row sums (axis 1) in ONE reduction (one round of cross-warp exchanges, not five)."""
    return tl.reduce((x0, x1, x2, x3, x4), 1, _add5)


@triton.jit
def _alpha_row(alpha_ptr, o_d, m_d):
    """a = |alpha| as a (1, BLOCK_D) fp32 row (0 past D)."""
    return tl.abs(tl.load(alpha_ptr + o_d, mask=m_d, other=0.0).to(tl.float32))[None, :]


@triton.jit
def _explicit_norms(b_h, b_f, b_a, eps):
    """The residual's norms the long way, in two reduction rounds: the robust norms of h and f (their plain and
    SMALL-scaled sums of squares in one tuple reduction), then y built and reduced. -> (||h||, r_h, ||f||, r_f,
    ||y||) per row, for the rows _geodesic_residual_fwd_kernel cannot take from its five sums."""
    b_hs = b_h * SMALL
    b_fs = b_f * SMALL
    ss_h, ss_hs, ss_f, ss_fs = tl.reduce((b_h * b_h, b_hs * b_hs, b_f * b_f, b_fs * b_fs), 1, _add4)
    n_h, c_h, den_h = _robust_norm(ss_h, ss_hs, eps)
    n_f, c_f, den_f = _robust_norm(ss_f, ss_fs, eps)
    r_h = c_h / den_h
    r_f = c_f / den_f
    b_hn = b_h * r_h[:, None]
    b_y = b_hn + b_a * (b_f * r_f[:, None] - b_hn)
    return n_h, r_h, n_f, r_f, tl.sqrt(tl.sum(b_y * b_y, axis=1))


@triton.jit
def _one_round_norms(b_h, b_f, b_a, eps):
    """(||h||, r_h, ||f||, r_f, ||y||, direct) per row from ONE tuple reduction of five sums (see
    _geodesic_residual_fwd_kernel); direct is False where ||y|| must come from _explicit_norms instead."""
    b_wh = b_h - b_a * b_h
    b_af = b_a * b_f
    s_h, s_f, s_a, s_b, s_c = _sum5(b_h * b_h, b_f * b_f, b_wh * b_wh, b_wh * b_af, b_af * b_af)
    n_h = tl.sqrt(s_h)
    n_f = tl.sqrt(s_f)
    r_h = 1.0 / tl.maximum(n_h, eps)
    r_f = 1.0 / tl.maximum(n_f, eps)
    terms = r_h * r_h * s_a + r_f * r_f * s_c
    n_y2 = terms + 2.0 * r_h * r_f * s_b
    direct = (n_y2 >= terms * CANCEL) & (s_h < float("inf")) & (s_f < float("inf"))  # False on NaN
    return n_h, r_h, n_f, r_f, tl.sqrt(tl.maximum(n_y2, 0.0)), direct


@triton.jit
def _geodesic_residual_fwd_kernel(
    out_ptr, stride_outr, stride_outd,
    norms_ptr,
    h_ptr, stride_hr, stride_hd,
    f_ptr, stride_fr, stride_fd,
    alpha_ptr,
    R, D, eps,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, NUM_STAGES: tl.constexpr, ONE_ROUND: tl.constexpr,
):
    """Program pid normalises row blocks pid, pid + G, ... (G resident programs; the loads of the next block are
    issued while this one computes: tl.range pipelining). Per row ONE tuple reduction gives
        S_h = sum h^2,  S_f = sum f^2,  A = sum ((1 - a) h)^2,  B = sum (1 - a) a h f,  C = sum (a f)^2,
    so r_h = 1 / max(sqrt(S_h), eps), r_f likewise and ||y||^2 = r_h^2 A + 2 r_h r_f B + r_f^2 C, with
    y = (1 - a) hn + a fn. That sum cancels when hn and fn point apart: its rounding error is ~ulp (r_h^2 A + r_f^2 C)
    and |2 r_h r_f B| <= r_h^2 A + r_f^2 C, so a row keeps it only while ||y||^2 >= CANCEL (r_h^2 A + r_f^2 C) (the
    error of ||y|| then stays within 4 ulp). A tile with a row that fails this (or whose S_h or S_f overflowed
    fp32, or holds NaN / Inf) takes _explicit_norms: two more reduction rounds that only such tiles pay. ONE_ROUND=False
    (tiles past 8,192 elements) takes _explicit_norms for every tile: the one-round path and its rare branch
    together do not fit the 64 registers a thread of 32 warps has, and spill."""
    pid = tl.program_id(0)
    o_d = tl.arange(0, BLOCK_D)
    m_d = o_d < D
    b_a = _alpha_row(alpha_ptr, o_d, m_d)  # 1 - a is recomputed where used: registers are the limit at large D
    for rb in tl.range(pid, tl.cdiv(R, BLOCK_R), tl.num_programs(0), num_stages=NUM_STAGES):
        o_r, _, m_r, _, m = _row_block(tl.full((), 0, tl.int64) + rb, R, D, BLOCK_R, BLOCK_D)
        b_h = _load_rows(h_ptr, stride_hr, stride_hd, o_r, o_d, m)
        b_f = _load_rows(f_ptr, stride_fr, stride_fd, o_r, o_d, m)
        if ONE_ROUND:
            n_h, r_h, n_f, r_f, n_y, direct = _one_round_norms(b_h, b_f, b_a, eps)
            if tl.min(tl.where(m_r, direct, True).to(tl.int32)) == 0:  # rare: cancellation, overflow, NaN / Inf
                n_h, r_h, n_f, r_f, n_y = _explicit_norms(b_h, b_f, b_a, eps)
        else:
            n_h, r_h, n_f, r_f, n_y = _explicit_norms(b_h, b_f, b_a, eps)
        b_hn = b_h * r_h[:, None]
        b_y = b_hn + b_a * (b_f * r_f[:, None] - b_hn)
        _store_rows(out_ptr, stride_outr, stride_outd, o_r, o_d, m, b_y / tl.maximum(n_y, eps)[:, None])
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
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, NUM_STAGES: tl.constexpr,
):
    """Program pid handles row blocks pid, pid + G, ... (G resident programs, the next block's loads in flight:
    tl.range pipelining) and writes the fp32 partial sign(alpha) * sum (fn - hn) g_y over its rows to part[pid, :D].
    Per row ONE tuple reduction of the five dots (the algebra of _geodesic_residual_bwd_chunked_kernel):
        k = p_y <g, out>,  dot_h = p_h r_y (<(1 - a) g, hn> - k <(1 - a) out, hn>),  dot_f likewise with a, fn;
        g_y = r_y (g - k out),  g_h = r_h ((1 - a) g_y - dot_h hn),  g_f = r_f (a g_y - dot_f fn)."""
    pid = tl.program_id(0)
    o_d = tl.arange(0, BLOCK_D)
    m_d = o_d < D
    b_a = _alpha_row(alpha_ptr, o_d, m_d)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for rb in tl.range(pid, tl.cdiv(R, BLOCK_R), tl.num_programs(0), num_stages=NUM_STAGES):
        o_r, _, m_r, _, m = _row_block(tl.full((), 0, tl.int64) + rb, R, D, BLOCK_R, BLOCK_D)
        r_h, p_h = _inv_norm(tl.load(norms_ptr + o_r * 3, mask=m_r, other=1.0), eps)
        r_f, p_f = _inv_norm(tl.load(norms_ptr + o_r * 3 + 1, mask=m_r, other=1.0), eps)
        r_y, p_y = _inv_norm(tl.load(norms_ptr + o_r * 3 + 2, mask=m_r, other=1.0), eps)
        b_hn = _load_rows(h_ptr, stride_hr, stride_hd, o_r, o_d, m) * r_h[:, None]
        b_fn = _load_rows(f_ptr, stride_fr, stride_fd, o_r, o_d, m) * r_f[:, None]
        b_g = _load_rows(dout_ptr, stride_doutr, stride_doutd, o_r, o_d, m)
        b_diff = b_fn - b_hn
        b_out = (b_hn + b_a * b_diff) * r_y[:, None]
        b_whn = b_hn - b_a * b_hn
        b_afn = b_a * b_fn
        s_go, s_gh, s_oh, s_gf, s_of = _sum5(b_g * b_out, b_g * b_whn, b_out * b_whn, b_g * b_afn, b_out * b_afn)
        k = p_y * s_go
        dot_h = p_h * r_y * (s_gh - k * s_oh)
        dot_f = p_f * r_y * (s_gf - k * s_of)
        b_gy = r_y[:, None] * (b_g - k[:, None] * b_out)
        acc += tl.sum(b_diff * b_gy, axis=0)
        b_gh = r_h[:, None] * (b_gy - b_a * b_gy - dot_h[:, None] * b_hn)
        b_gf = r_f[:, None] * (b_a * b_gy - dot_f[:, None] * b_fn)
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
    """Launch configuration for rows of length D (renormalize_: D = its longest row); scripts/gpu_tune.py merges
    the keys of TUNE_CANDIDATES into it.

    BLOCK_D = next power of two >= D; BLOCK_R rows per program (per loop step of the persistent kernels) so that a
    tile holds >= 1024 elements (at most 64 rows).
    Geodesic residual (persistent fwd and whole-row bwd): num_warps, num_stages (the depth of the tl.range
    pipelining of the row loop: S - 1 row blocks' loads in flight, cp.async into shared memory, while one computes)
    and PROGRAMS_PER_SM (None: as many as fit on an SM, from the compiled kernel's registers, shared memory and
    warps: _resident; an int: that many, for sweeps). num_warps so that a thread holds <= 16 elements of a tile: the
    whole-row backward keeps ~6 fp32 values per element live (hn, fn, g, out, a, the grad_alpha accumulator). sm_90
    bf16 compiles at D = 4096 (benches/triton_resources.py): 8 warps, 3 stages: backward 171 registers, forward
    103, no spills (1 and 2 programs per SM; 4 warps spill 80 B in the backward). num_stages = 3 keeps two row blocks
    (48 KB of h, f, grad_out at D = 4096 bf16) in flight per SM, twice the ~22 KB a program per SM needs to keep
    4.1 TB/s busy at an assumed 0.7 us of loaded latency (not measured); past 8,192-element tiles 2 (32 warps have
    64 registers a thread). ONE_ROUND: the forward's one-round path, up to 8,192-element tiles (past that it
    spills: the explicit path only). Rows
    longer than BLOCK_C = 4096 take the chunked backward (two passes of BLOCK_C columns, CHUNK_WARPS = 16, no
    spills). BLOCK_C = 0: the whole-row backward.
    l2_normalize and renormalize_: L2_WARPS so that a thread holds <= 8 elements of a tile (4 warps up to 1024
    elements, then 8/16/32); renormalisation row tiles BLOCK_U x BLOCK_K of <= 4096 elements (longer rows loop),
    column tiles BLOCK_N x BLOCK_I = 32 x 64.
    The interpreter gets one small configuration with several rows per program for small D (so the tests
    exercise the partial row blocks), three programs for the persistent kernels (several partials and loops),
    the chunked backward past 128 columns in chunks of 64, and small renormalisation tiles (every loop runs).
    Measured before (benches/results/gpu/h200_tune.csv, the earlier three-round kernels with 2,112 grid-stride
    backward programs): at D = 4096 bf16, 65,536 rows fwd + bwd, 4 warps 2.02 ms, 8 warps 2.86 ms, 16 warps 2.97 ms;
    the kernels here are not measured yet (TUNE_CANDIDATES lists the sweep)."""
    block_d = triton.next_power_of_2(max(int(D), 1))
    if INTERPRET:
        return dict(BLOCK_R=4 if block_d <= 64 else 1, BLOCK_D=block_d, BLOCK_C=64 if block_d > 128 else 0,
                    BLOCK_U=2, BLOCK_K=min(block_d, 32), BLOCK_N=8, BLOCK_I=8, num_warps=1, L2_WARPS=1,
                    CHUNK_WARPS=1, num_stages=1, PROGRAMS_PER_SM=None, ONE_ROUND=True)
    block_r = max(1, min(64, 1024 // block_d))
    tile = block_r * block_d
    l2_warps = 4 if tile <= 1024 else 8 if tile <= 2048 else 16 if tile <= 4096 else 32
    block_k = min(block_d, 4096)
    return dict(BLOCK_R=block_r, BLOCK_D=block_d, BLOCK_C=4096 if block_d > 4096 else 0,
                BLOCK_U=max(1, min(16, 4096 // block_k)), BLOCK_K=block_k, BLOCK_N=32, BLOCK_I=64,
                num_warps=max(4, min(32, tile // 512)), L2_WARPS=l2_warps, CHUNK_WARPS=16,
                num_stages=3 if tile <= 8192 else 2, PROGRAMS_PER_SM=None, ONE_ROUND=tile <= 8192)


# Launch options worth sweeping on a GPU for the geodesic residual (keys merged into _config(D); the default first):
# warps, rows per program, row-loop pipelining depth and resident programs per SM. Aimed at the goal row (65,536 x
# 4,096 bf16 fwd + bwd) but valid for every D.
TUNE_CANDIDATES: list[dict] = [
    {},
    dict(num_warps=4),
    dict(num_warps=16),
    dict(num_stages=1),
    dict(num_stages=2),
    dict(num_stages=4),
    dict(PROGRAMS_PER_SM=1),
    dict(PROGRAMS_PER_SM=2, num_warps=4),
    dict(PROGRAMS_PER_SM=4, num_warps=4),
    dict(BLOCK_R=2, num_warps=16),
    dict(BLOCK_R=2, num_warps=8, num_stages=1),
]


@functools.lru_cache(maxsize=None)
def _device_limits(index: int) -> tuple[int, int, int, int]:
    """(SMs, registers per SM, shared memory bytes per SM, warps per SM) of CUDA device `index`."""
    p = torch.cuda.get_device_properties(index)
    return (p.multi_processor_count, getattr(p, "regs_per_multiprocessor", 65536),
            getattr(p, "shared_memory_per_multiprocessor", 228 * 1024),
            getattr(p, "max_threads_per_multi_processor", 2048) // 32)


_RESIDENT: dict = {}


def _resident(kernel, key: tuple, device: torch.device, cfg: dict, row_blocks: int, launch: dict) -> int:
    """Programs of a persistent (grid-stride) launch: every program resident at once, so none waits for a second
    wave, and never more than there are row blocks. PROGRAMS_PER_SM (an int) fixes the count per SM; None takes
    what fits: the compiled kernel's registers (allocated per warp in units of 256), shared memory and warps
    against the SM's, cached per `key`. The interpreter (and CPU tensors) use 3 so the tests see several
    programs, partials and loop steps."""
    if INTERPRET or device.type != "cuda":
        return max(1, min(row_blocks, 3))
    sms, regs, smem, warps = _device_limits(device.index if device.index is not None else torch.cuda.current_device())
    per_sm = cfg["PROGRAMS_PER_SM"]
    if per_sm is None:
        per_sm = _RESIDENT.get(key)
        if per_sm is None:
            compiled = kernel.warmup(grid=(1,), **launch)  # compiles (cached by Triton), launches nothing
            if compiled is None:  # not compiled yet (an asynchronous compile): one per SM is resident always
                return max(1, min(row_blocks, sms))
            compiled._init_handles()
            w = compiled.metadata.num_warps
            regs_per_warp = -(-max(compiled.n_regs, 1) * 32 // 256) * 256
            per_sm = max(1, min(warps // w, regs // (regs_per_warp * w), smem // max(compiled.metadata.shared, 1), 32))
            _RESIDENT[key] = per_sm
    return max(1, min(row_blocks, sms * int(per_sm)))


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


def _l2_opts(cfg: dict) -> dict:
    """The l2_normalize kernels' block sizes and launch options (no loops: one stage)."""
    return dict(BLOCK_R=cfg["BLOCK_R"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["L2_WARPS"], num_stages=1)


def _residual_opts(cfg: dict) -> dict:
    """The persistent geodesic-residual kernels' block sizes and launch options (NUM_STAGES = the tl.range depth of
    the row loop, also the launch's default)."""
    return dict(BLOCK_R=cfg["BLOCK_R"], BLOCK_D=cfg["BLOCK_D"], NUM_STAGES=cfg["num_stages"],
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _programs(kernel, cfg: dict, row_blocks: int, launch: dict) -> int:
    """G, the resident programs of a persistent launch kernel[(G,)](**launch) (_resident), cached per kernel, dtype,
    device and configuration."""
    h = launch["h_ptr"]
    key = (kernel.fn.__name__, h.dtype, h.device, tuple(sorted((k, str(v)) for k, v in cfg.items())))
    return _resident(kernel, key, h.device, cfg, row_blocks, launch)


def geodesic_residual_fwd(h: torch.Tensor, f: torch.Tensor, alpha: torch.Tensor, *, eps: float):
    """h, f (R, d) same dtype, alpha (d,) fp32 -> out (R, d) in h.dtype, norms (R, 3) fp32 (||h||, ||f||, ||y||).

    Cost per element of h (fp32 math): 2 loads + 1 store of the storage dtype, ~19 flops (five fused sums, the step
    and the output scaling); the norms add 12 bytes per row (the roofline: module docstring)."""
    _check_rows("h", h)
    _check_rows("f", f, like=h)
    R, D = h.shape
    _check_fp32("alpha", alpha, (D,), h.device)
    cfg = _config(D)
    out = torch.empty_like(h)
    norms = torch.empty((R, 3), dtype=torch.float32, device=h.device)
    if R == 0:
        return out, norms
    launch = dict(out_ptr=out, stride_outr=out.stride(0), stride_outd=out.stride(1), norms_ptr=norms,
                  h_ptr=h, stride_hr=h.stride(0), stride_hd=h.stride(1), f_ptr=f, stride_fr=f.stride(0),
                  stride_fd=f.stride(1), alpha_ptr=alpha, R=R, D=D, eps=float(eps), ONE_ROUND=cfg["ONE_ROUND"],
                  **_residual_opts(cfg))
    G = _programs(_geodesic_residual_fwd_kernel, cfg, triton.cdiv(R, cfg["BLOCK_R"]), launch)
    _geodesic_residual_fwd_kernel[(G,)](**launch)
    return out, norms


def geodesic_residual_bwd(grad_out, h, f, alpha, norms, *, eps: float):
    """-> grad_h (R, d) h.dtype, grad_f (R, d) f.dtype, grad_alpha (d,) fp32 (deterministic: no atomics).

    Cost per element: 3 loads + 2 stores of the storage dtype, ~33 flops; plus 12 bytes of norms per row and the
    (G, d) fp32 partials (G resident programs: written once, summed by torch in a fixed order)."""
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
    # G and so the partials' size come first; the compile probe of _resident takes alpha for the fp32 partials
    if cfg["BLOCK_C"]:  # long rows: chunked, the partials accumulate in place (zeroed here)
        kernel, row_blocks = _geodesic_residual_bwd_chunked_kernel, R
        launch = dict(tensors, BLOCK_C=cfg["BLOCK_C"], num_warps=cfg["CHUNK_WARPS"], num_stages=1)
    else:
        kernel, row_blocks = _geodesic_residual_bwd_kernel, triton.cdiv(R, cfg["BLOCK_R"])
        launch = dict(tensors, **_residual_opts(cfg))
    G = _programs(kernel, cfg, row_blocks, dict(launch, part_ptr=alpha))
    partial = (torch.zeros if cfg["BLOCK_C"] else torch.empty)((G, D), dtype=torch.float32, device=h.device)
    kernel[(G,)](part_ptr=partial, **launch)
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
        x_ptr=x, stride_xr=x.stride(0), stride_xd=x.stride(1), R=R, D=D, eps=float(eps), **_l2_opts(cfg),
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
        **_l2_opts(cfg),
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
    the host-to-device copy happens once per set of tensors (the key is the table content itself). On a GPU the
    copy is from pinned memory and asynchronous (a pageable copy would synchronise the host with the stream)."""
    tables = (torch.tensor(meta, dtype=torch.int64).view(-1, 8), torch.tensor(starts, dtype=torch.int64))
    if device.type != "cuda":
        return tuple(t.to(device) for t in tables)
    return tuple(t.pin_memory().to(device, non_blocking=True) for t in tables)


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
        num_warps=cfg["L2_WARPS"], num_stages=1,
    )
