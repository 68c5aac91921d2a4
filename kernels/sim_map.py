"""Triton kernels for the token-similarity map phi(M) that the F3 / F4 verifiers consume ("Training for
Compositional Sensitivity Reduces Dense Retrieval Generalization" (arXiv:2604.16351) eqs. 8-9).

Paired q (B, m, h), d (B, n, h), L2-normalised (M = q d^T is the cosine map), masks over the tokens:
    M'_ij = clamp(M_ij, -1, 1) if clip else M_ij
    channel "sim"    M'_ij
    channel "rowmax" max_{valid j'} M'_ij'   (broadcast along j)
    channel "colmax" max_{valid i'} M'_i'j   (broadcast along i)
every channel 0 where i or j is padding; the clamp and the maxima propagate NaN. Output, in out_dtype: the map
(B, m, n, C) with the channels in the order asked, or with patch = p the patch sequence
(B, ceil(m/p) * ceil(n/p), p * p * C): patches
row-major over the patch grid (gi, gj), features inside a patch ordered (pi, pj, c), i.e. feature
(pi * p + pj) * C + c of patch gi * ceil(n/p) + gj holds map[gi p + pi, gj p + pj, c], 0 beyond m or n
(spherekit.reference.sim_map.patchify: einops "b (gm p1) (gn p2) c -> b (gm gn) (p1 p2 c)").

What is fused. Forward: rowmax / colmax need a full row / column before anything is written, so they
come first, from the row-statistics kernel (over q vs d and over d vs q, one streaming GEMM pass each,
only when the channel is asked for; they also give the argmax for the backward); then ONE kernel per
(pair, row tile, column tile) computes the M tile with tl.dot (skipped when "sim" is not asked) and writes
every channel straight into the map or patch layout, padding included, in out_dtype. The map is never
written in another layout and never copied.
Backward (G = incoming gradient, read in place from the map or patch layout, un-patched by address
arithmetic inside the kernels):
    r_i = [|rowmax_i| <= 1 if clip] sum_{valid j} G_rowmax[i, j],  c_j likewise over valid i for colmax
    dM_ij = [valid i, j] [|M_ij| <= 1 if clip] G_sim[i, j] + r_i [j = rowarg_i] + c_j [i = colarg_j]
    grad_q = dM d,  grad_d = dM^T q
One small reduction kernel gives r (and, with the roles of rows and columns swapped, c); one GEMM kernel
builds dM tile by tile (recomputing the M tile only when clip is on, for the clamp gate) and multiplies it
by the other side's tokens; it runs twice, for grad_q and (swapped) for grad_d: no atomics.
The clamp gate follows torch.clamp (gradient passes where -1 <= M <= 1); the max channels send their
gradient to the argmax of the unclipped row / column (first index on ties).

All pairs (all_pairs=True): q (Bq, m, h) against every d (Bd, n, h); pair p = a * Bd + b (query a, document b)
is one program row of every pair-indexed kernel, which reads query a and document b where they lie: no token
sequence is copied per pair. The output and the statistics are per pair ((Bq Bd, ...)); the backward GEMM
kernel runs over the sequences of one side (grad_q: a query a, grad_d: a document b) and loops over its Bd
(Bq) partners inside the program, so every gradient row is written once (no atomics):
    grad_q_a = sum_b dM_ab d_b,   grad_d_b = sum_a dM_ab^T q_a.
Paired (the default) is the same code with one partner, the sequence's own index.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import INTERPRET, dot_precision, dot_tile, load_valid, named, nan_max
from ..ops.checks import check_shape
from ._sim_map_common import check_paired, mask_strides, unit_last

CHANNELS = ("sim", "rowmax", "colmax")
PTR_TYPES = {"q_ptr": None, "d_ptr": None, "x_ptr": None, "y_ptr": None, "out_ptr": None, "g_ptr": None,
             "dx_ptr": None, "qm_ptr": "*u8", "dm_ptr": "*u8", "xm_ptr": "*u8", "ym_ptr": "*u8",
             "rmax_ptr": "*fp32", "cmax_ptr": "*fp32", "max_ptr": "*fp32", "sum_ptr": "*fp32",
             "rsum_ptr": "*fp32", "csum_ptr": "*fp32", "rarg_ptr": "*i32", "carg_ptr": "*i32"}


@triton.jit
def _layout_offsets(o_m, o_n, P: tl.constexpr, stride_pr, stride_r, stride_pc, stride_c):
    """Offset of map entry (i, j) in the map (P = 1) or patch layout: patch (i // P, j // P), in-patch
    position (i % P, j % P)."""
    if P == 1:
        return o_m[:, None] * stride_pr + o_n[None, :] * stride_pc
    return ((o_m // P) * stride_pr + (o_m % P) * stride_r)[:, None] + ((o_n // P) * stride_pc
                                                                      + (o_n % P) * stride_c)[None, :]


@triton.jit
def _clip(x):
    """clamp(x, -1, 1) keeping NaN (as torch.clamp does; the GPU's plain min / max would turn NaN into -1 or 1)."""
    return tl.clamp(x, -1.0, 1.0, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _pair_sides(p, BD, ALL_PAIRS: tl.constexpr, SWAP: tl.constexpr):
    """(x sequence, y sequence) of pair p: paired (p, p); all pairs p = a * BD + b -> (a, b), or (b, a) when
    SWAP (x is the document side)."""
    if ALL_PAIRS:
        if SWAP:
            return p % BD, p // BD
        return p // BD, p % BD
    return p, p


@triton.jit
def _sim_map_rowstat_kernel(
    max_ptr, arg_ptr,
    x_ptr, stride_xb, stride_xr, stride_xd,
    xm_ptr, stride_xmb, stride_xmr,
    y_ptr, stride_yb, stride_ys, stride_yd,
    ym_ptr, stride_ymb, stride_yms,
    R, S, H, BD,
    ALL_PAIRS: tl.constexpr, SWAP: tl.constexpr, HAS_XMASK: tl.constexpr, HAS_YMASK: tl.constexpr,
    PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """Program (pair p, row block): max_{valid j} <x_i, y_j> and its first argmax for the valid rows i of the
    pair's x sequence (0 / -1 at padding rows or when y has no valid token), fp32 / int32 at p * R + i."""
    p = tl.program_id(0).to(tl.int64)
    bx, by = _pair_sides(p, BD, ALL_PAIRS, SWAP)
    o_m = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_m, valid_m = load_valid(xm_ptr, stride_xmb, stride_xmr, bx, o_m, R, HAS_XMASK)
    best = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)
    seen = tl.zeros((), dtype=tl.int32)  # y has a valid token
    for n0 in range(0, S, BLOCK_N):
        o_n = n0 + tl.arange(0, BLOCK_N)
        m_n, valid_n = load_valid(ym_ptr, stride_ymb, stride_yms, by, o_n, S, HAS_YMASK)
        seen = tl.maximum(seen, tl.max(valid_n.to(tl.int32), axis=0))
        x = dot_tile(x_ptr + bx * stride_xb, stride_xr, stride_xd, o_m, m_m, y_ptr + by * stride_yb, stride_ys,
                     stride_yd, o_n, m_n, H, BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        x = tl.where(valid_n[None, :], x, float("-inf"))
        t_max = tl.reduce(x, 1, nan_max)  # a NaN entry makes the row's max NaN (the plain max would drop it)
        t_arg = tl.min(tl.where(x == t_max[:, None], o_n[None, :].to(tl.int32), 2147483647), axis=1)
        better = t_max > best  # strictly: an earlier tile keeps a tie (first index)
        arg = tl.where(better, t_arg, arg)
        best = nan_max(best, t_max)
    keep = valid_m & (seen > 0)
    tl.store(max_ptr + p * R + o_m, tl.where(keep, best, 0.0), mask=m_m)
    tl.store(arg_ptr + p * R + o_m, tl.where(keep, arg, -1), mask=m_m)


@triton.jit
def _sim_map_fwd_kernel(
    out_ptr, stride_ob, stride_opr, stride_or, stride_opc, stride_oc,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmn,
    rmax_ptr, cmax_ptr,
    M, N, MP, NP, H, BD,
    P: tl.constexpr, CH_SIM: tl.constexpr, CH_ROW: tl.constexpr, CH_COL: tl.constexpr, CLIP: tl.constexpr,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr, ALL_PAIRS: tl.constexpr = False,
):
    """Program (pair b, row tile over the padded extent MP, column tile over NP): every channel of the
    tile (0 at padding) written at its map / patch address. Channel c sits at offset c (unit stride)."""
    b = tl.program_id(0).to(tl.int64)
    bq, bd = _pair_sides(b, BD, ALL_PAIRS, False)
    o_m = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_n = tl.program_id(2).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_m, valid_m = load_valid(qm_ptr, stride_qmb, stride_qmm, bq, o_m, M, HAS_QMASK)
    m_n, valid_n = load_valid(dm_ptr, stride_dmb, stride_dmn, bd, o_n, N, HAS_DMASK)
    valid = valid_m[:, None] & valid_n[None, :]
    p_out = out_ptr + b * stride_ob + _layout_offsets(o_m, o_n, P, stride_opr, stride_or, stride_opc, stride_oc)
    m_out = (o_m < MP)[:, None] & (o_n < NP)[None, :]
    if CH_SIM >= 0:
        x = dot_tile(q_ptr + bq * stride_qb, stride_qm, stride_qd, o_m, m_m, d_ptr + bd * stride_db, stride_dn,
                     stride_dd, o_n, m_n, H, BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        if CLIP:
            x = _clip(x)
        tl.store(p_out + CH_SIM, tl.where(valid, x, 0.0).to(out_ptr.dtype.element_ty), mask=m_out)
    if CH_ROW >= 0:
        r = tl.load(rmax_ptr + b * M + o_m, mask=m_m, other=0.0)
        if CLIP:
            r = _clip(r)
        tl.store(p_out + CH_ROW, tl.where(valid, r[:, None], 0.0).to(out_ptr.dtype.element_ty), mask=m_out)
    if CH_COL >= 0:
        c = tl.load(cmax_ptr + b * N + o_n, mask=m_n, other=0.0)
        if CLIP:
            c = _clip(c)
        tl.store(p_out + CH_COL, tl.where(valid, c[None, :], 0.0).to(out_ptr.dtype.element_ty), mask=m_out)


@triton.jit
def _sim_map_chansum_kernel(
    sum_ptr,
    g_ptr, stride_gb, stride_gpr, stride_gr, stride_gpc, stride_gc, stride_gch,
    xm_ptr, stride_xmb, stride_xmr,
    ym_ptr, stride_ymb, stride_yms,
    max_ptr,
    R, S, CH, BD,
    P: tl.constexpr, CLIP: tl.constexpr, HAS_XMASK: tl.constexpr, HAS_YMASK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ALL_PAIRS: tl.constexpr = False, SWAP: tl.constexpr = False,
):
    """Program (pair b, row block): sum[b, i] = [|max_i| <= 1 if CLIP] sum_{valid j} G[b, i, j, CH] over the
    valid rows i (0 elsewhere). Called with rows/columns swapped (SWAP) for the column sums."""
    b = tl.program_id(0).to(tl.int64)
    bx, by = _pair_sides(b, BD, ALL_PAIRS, SWAP)
    o_m = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_m, valid_m = load_valid(xm_ptr, stride_xmb, stride_xmr, bx, o_m, R, HAS_XMASK)
    p_g = g_ptr + b * stride_gb + CH * stride_gch
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, S, BLOCK_N):
        o_n = n0 + tl.arange(0, BLOCK_N)
        m_n, valid_n = load_valid(ym_ptr, stride_ymb, stride_yms, by, o_n, S, HAS_YMASK)
        valid = valid_m[:, None] & valid_n[None, :]
        b_g = tl.load(p_g + _layout_offsets(o_m, o_n, P, stride_gpr, stride_gr, stride_gpc, stride_gc), mask=valid,
                      other=0.0).to(tl.float32)
        acc += tl.sum(b_g, axis=1)
    if CLIP:
        b_max = tl.load(max_ptr + b * R + o_m, mask=m_m, other=0.0)
        acc = tl.where(tl.abs(b_max) <= 1.0, acc, 0.0)
    tl.store(sum_ptr + b * R + o_m, acc, mask=m_m)


@triton.jit
def _sim_map_bwd_kernel(
    dx_ptr, stride_dxb, stride_dxr, stride_dxd,
    g_ptr, stride_gb, stride_gpr, stride_gr, stride_gpc, stride_gc, stride_gch,
    x_ptr, stride_xb, stride_xr, stride_xd,
    xm_ptr, stride_xmb, stride_xmr,
    y_ptr, stride_yb, stride_ys, stride_yd,
    ym_ptr, stride_ymb, stride_yms,
    rsum_ptr, rarg_ptr, csum_ptr, carg_ptr,
    R, S, H, BD, NPART,
    P: tl.constexpr, CH_SIM: tl.constexpr, HAS_ROW: tl.constexpr, HAS_COL: tl.constexpr, CLIP: tl.constexpr,
    HAS_XMASK: tl.constexpr, HAS_YMASK: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_HV: tl.constexpr, ALL_PAIRS: tl.constexpr = False,
    SWAP: tl.constexpr = False,
):
    """Program (x sequence bx, row block of x, h slice): dx = sum over its NPART partners y of dM y, over all
    column tiles, dM as in the module docstring with rows = x tokens (R), columns = y tokens (S); r / rarg per
    row, c / carg per column of each pair. Paired: one partner, bx itself. All pairs: partner k is document k
    (pair bx * BD + k) or, SWAP (x = the documents), query k (pair k * BD + bx)."""
    bx = tl.program_id(0).to(tl.int64)
    o_m = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_v = tl.program_id(2).to(tl.int64) * BLOCK_HV + tl.arange(0, BLOCK_HV)
    m_v = o_v < H
    m_m, valid_m = load_valid(xm_ptr, stride_xmb, stride_xmr, bx, o_m, R, HAS_XMASK)
    p_x = x_ptr + bx * stride_xb
    acc = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    for k in range(0, NPART):
        if ALL_PAIRS:
            by = tl.full((), k, tl.int64)
            if SWAP:
                b = by * BD + bx
            else:
                b = bx * BD + by
        else:
            by = bx
            b = bx
        p_g = g_ptr + b * stride_gb + CH_SIM * stride_gch
        p_y = y_ptr + by * stride_yb
        if HAS_ROW:
            b_rsum = tl.load(rsum_ptr + b * R + o_m, mask=m_m, other=0.0)
            b_rarg = tl.load(rarg_ptr + b * R + o_m, mask=m_m, other=-1)
        for n0 in range(0, S, BLOCK_N):
            o_n = n0 + tl.arange(0, BLOCK_N)
            m_n, valid_n = load_valid(ym_ptr, stride_ymb, stride_yms, by, o_n, S, HAS_YMASK)
            dm = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            if CH_SIM >= 0:
                valid = valid_m[:, None] & valid_n[None, :]
                dm = tl.load(p_g + _layout_offsets(o_m, o_n, P, stride_gpr, stride_gr, stride_gpc, stride_gc),
                             mask=valid, other=0.0).to(tl.float32)
                if CLIP:
                    x = dot_tile(p_x, stride_xr, stride_xd, o_m, m_m, p_y, stride_ys, stride_yd, o_n, m_n, H,
                                 BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
                    dm = tl.where(tl.abs(x) <= 1.0, dm, 0.0)
            if HAS_ROW:
                dm += tl.where(o_n[None, :] == b_rarg[:, None], b_rsum[:, None], 0.0)
            if HAS_COL:
                b_csum = tl.load(csum_ptr + b * S + o_n, mask=m_n, other=0.0)
                b_carg = tl.load(carg_ptr + b * S + o_n, mask=m_n, other=-1)
                dm += tl.where(o_m[:, None] == b_carg[None, :], b_csum[None, :], 0.0)
            b_y = tl.load(p_y + o_n[:, None] * stride_ys + o_v[None, :] * stride_yd,
                          mask=m_n[:, None] & m_v[None, :], other=0.0)
            acc = tl.dot(dm.to(b_y.dtype), b_y, acc, input_precision=PRECISION)
    tl.store(dx_ptr + bx * stride_dxb + o_m[:, None] * stride_dxr + o_v[None, :] * stride_dxd, acc,
             mask=m_m[:, None] & m_v[None, :])


def _config(D: int, dtype: torch.dtype) -> dict:
    """Block sizes and launch options (D = h). The interpreter wants small tiles. GPU: a first guess (to be
    tuned on a GPU); compiled for sm_90 (benches/triton_resources.py) no kernel spills at h = 128 or 768 in
    fp16/bf16 (8 warps; registers 114-214). BLOCK_HV is the h slice of the backward accumulator."""
    if INTERPRET:
        return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_H=32, BLOCK_HV=32, num_warps=1, num_stages=1)
    hv = 64 if dtype == torch.float32 else 128  # fp32 + clip at 128 spills ~2.4 KB; 64 spills 8 bytes
    return dict(BLOCK_M=64, BLOCK_N=64, BLOCK_H=32, BLOCK_HV=max(16, min(hv, triton.next_power_of_2(D))),
                num_warps=8, num_stages=2)


def _channel_slots(channels) -> dict:
    if isinstance(channels, str) or not isinstance(channels, (tuple, list)) or not channels:
        raise ValueError(f"channels must be a non-empty tuple of names from {CHANNELS}, got {channels!r}")
    for name in channels:
        if name not in CHANNELS:
            raise ValueError(f"channels: unknown channel {name!r}; choose from {CHANNELS}")
    if len(set(channels)) != len(channels):
        raise ValueError(f"channels must not repeat a name, got {tuple(channels)!r}")
    return {name: (tuple(channels).index(name) if name in channels else -1) for name in CHANNELS}


def _layout(B, M, N, C, patch):
    """-> (output shape, padded extents (MP, NP), patch P, element strides (pr, r, pc, c, ch)) of a contiguous map."""
    if patch is None:
        return (B, M, N, C), (M, N), 1, (N * C, 0, C, 0, 1)
    if isinstance(patch, bool) or not isinstance(patch, int) or patch < 1:
        raise ValueError(f"patch must be None or an int >= 1, got {patch!r}")
    gm, gn = triton.cdiv(M, patch), triton.cdiv(N, patch)
    pp = patch * patch * C
    return (B, gm * gn, pp), (gm * patch, gn * patch), patch, (gn * pp, patch * C, pp, C, 1)


def _grad_strides(grad, N, C, patch):
    """(pr, r, pc, c, ch) element strides of an arbitrarily strided gradient in the map / patch layout."""
    if patch is None:
        return grad.stride(1), 0, grad.stride(2), 0, grad.stride(3)
    gn = triton.cdiv(N, patch)
    s1, s2 = grad.stride(1), grad.stride(2)
    return gn * s1, patch * C * s2, s1, C * s2, s2


def _prepare(q, q_mask, d, d_mask, all_pairs):
    """(sizes, unit q, unit d, q side, d side); a side is (mask, its stride over sequences, over tokens, has mask)."""
    sizes, (qm, has_qm), (dm, has_dm) = check_paired(q, q_mask, d, d_mask, all_pairs=bool(all_pairs))
    qa = (qm, *mask_strides(qm, has_qm, 2), has_qm)
    da = (dm, *mask_strides(dm, has_dm, 2), has_dm)
    return sizes, unit_last(q), unit_last(d), qa, da


def _tokens(x, tag: str, axis: str) -> dict:
    """A (sequences, tokens, h) argument by the kernels' names: {tag}_ptr, stride_{tag}b, stride_{tag}{axis},
    stride_{tag}d."""
    return named(f"{tag}_ptr stride_{tag}b stride_{tag}{axis} stride_{tag}d", (x, *x.stride()))


def _mask(side, tag: str, axis: str, flag: str) -> dict:
    """A side's token mask by the kernels' names: {tag}m_ptr, stride_{tag}mb, stride_{tag}m{axis} and its flag."""
    return named(f"{tag}m_ptr stride_{tag}mb stride_{tag}m{axis} {flag}", side)


def sim_map_fwd(q, q_mask, d, d_mask, *, patch, channels, clip: bool, out_dtype, all_pairs: bool = False):
    """-> (out, rowmax, rowarg, colmax, colarg). out: the map (P, m, n, C) or the patches
    (P, ceil(m/p) ceil(n/p), p p C) in out_dtype (see the module docstring), P = B paired or Bq Bd for
    all_pairs (pair a * Bd + b). For the backward, per pair: rowmax (P, m) fp32 / rowarg (P, m) int32 when
    "rowmax" is asked (else empty (0,) tensors), colmax / colarg (P, n) likewise for "colmax" (unclipped maxima
    over valid tokens; 0 / -1 at padding rows)."""
    (B, M, N, H), q, d, qa, da = _prepare(q, q_mask, d, d_mask, all_pairs)
    BD = d.shape[0]
    pairs = B * BD if all_pairs else B
    slots = _channel_slots(channels)
    if not isinstance(out_dtype, torch.dtype) or not out_dtype.is_floating_point or out_dtype == torch.float64:
        raise TypeError(f"out_dtype must be torch.float32, float16 or bfloat16, got {out_dtype}")
    shape, (MP, NP), P, out_strides = _layout(pairs, M, N, len(channels), patch)
    empty_f = torch.empty(0, dtype=torch.float32, device=q.device)
    empty_i = torch.empty(0, dtype=torch.int32, device=q.device)
    cfg = _config(H, q.dtype)
    rowmax, rowarg = _stats(q, qa, d, da, M, N, H, pairs, BD, all_pairs, False, cfg) if slots["rowmax"] >= 0 \
        else (empty_f, empty_i)
    colmax, colarg = _stats(d, da, q, qa, N, M, H, pairs, BD, all_pairs, True, cfg) if slots["colmax"] >= 0 \
        else (empty_f, empty_i)
    out = torch.empty(shape, dtype=out_dtype, device=q.device)
    grid = (pairs, triton.cdiv(MP, cfg["BLOCK_M"]), triton.cdiv(NP, cfg["BLOCK_N"]))
    _sim_map_fwd_kernel[grid](
        out_ptr=out, **named("stride_ob stride_opr stride_or stride_opc stride_oc", (out.stride(0), *out_strides[:4])),
        **_tokens(q, "q", "m"), **_mask(qa, "q", "m", "HAS_QMASK"),
        **_tokens(d, "d", "n"), **_mask(da, "d", "n", "HAS_DMASK"),
        rmax_ptr=rowmax.contiguous() if rowmax.numel() else empty_f,
        cmax_ptr=colmax.contiguous() if colmax.numel() else empty_f,
        M=M, N=N, MP=MP, NP=NP, H=H, BD=BD,
        P=P, CH_SIM=slots["sim"], CH_ROW=slots["rowmax"], CH_COL=slots["colmax"], CLIP=bool(clip),
        ALL_PAIRS=bool(all_pairs), PRECISION=dot_precision(q.dtype),
        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_H=cfg["BLOCK_H"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
    return out, rowmax, rowarg, colmax, colarg


def _stats(x, xa, y, ya, R, S, H, pairs, BD, all_pairs, swap, cfg):
    """(max (pairs, R) fp32, argmax (pairs, R) int32): every pair's x rows against its y sequence; xa / ya are
    the sides (_prepare)."""
    maxima = torch.empty((pairs, R), dtype=torch.float32, device=x.device)
    arg = torch.empty((pairs, R), dtype=torch.int32, device=x.device)
    _sim_map_rowstat_kernel[(pairs, triton.cdiv(R, cfg["BLOCK_M"]))](
        max_ptr=maxima, arg_ptr=arg, **_tokens(x, "x", "r"), **_mask(xa, "x", "r", "HAS_XMASK"),
        **_tokens(y, "y", "s"), **_mask(ya, "y", "s", "HAS_YMASK"), R=R, S=S, H=H, BD=BD, ALL_PAIRS=bool(all_pairs),
        SWAP=swap, PRECISION=dot_precision(x.dtype), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
        BLOCK_H=cfg["BLOCK_H"], num_warps=cfg["num_warps"])
    return maxima, arg


def _given(stats, i: int):
    """Entry i of a sim_map_fwd statistics tuple, None when absent or empty (then the backward recomputes it)."""
    x = None if stats is None else stats[i]
    return None if x is None or x.numel() == 0 else x


def sim_map_bwd(grad_out, q, q_mask, d, d_mask, *, patch, channels, clip: bool, stats=None, need_dq: bool = True,
                need_dd: bool = True, all_pairs: bool = False):
    """-> (grad_q like q or None, grad_d like d or None) from the gradient of sim_map_fwd's output (P, ...)
    (any strides, any float dtype). stats: the (rowmax, rowarg, colmax, colarg) sim_map_fwd returned; None (or
    empty entries) recomputes them (one extra streaming pass over M per max channel)."""
    (B, M, N, H), q, d, qa, da = _prepare(q, q_mask, d, d_mask, all_pairs)
    BD = d.shape[0]
    pairs = B * BD if all_pairs else B
    slots = _channel_slots(channels)
    cfg = _config(H, q.dtype)
    rowmax, rowarg, colmax, colarg = (_given(stats, i) for i in range(4))
    if slots["rowmax"] >= 0 and (rowmax is None or rowarg is None):
        rowmax, rowarg = _stats(q, qa, d, da, M, N, H, pairs, BD, all_pairs, False, cfg)
    if slots["colmax"] >= 0 and (colmax is None or colarg is None):
        colmax, colarg = _stats(d, da, q, qa, N, M, H, pairs, BD, all_pairs, True, cfg)
    C = len(channels)
    shape, _, P, _ = _layout(pairs, M, N, C, patch)
    if not isinstance(grad_out, torch.Tensor) or not grad_out.is_floating_point():
        raise TypeError(f"grad_out must be a floating-point torch.Tensor, got {type(grad_out).__name__}")
    check_shape("grad_out", grad_out, shape)
    gs = (grad_out.stride(0), *_grad_strides(grad_out, N, C, patch))
    gs_t = (gs[0], gs[3], gs[4], gs[1], gs[2], gs[5])  # rows <-> columns
    has_row, has_col = slots["rowmax"] >= 0, slots["colmax"] >= 0
    for name, t, want, dt in (("rowmax", rowmax, (pairs, M), torch.float32),
                              ("rowarg", rowarg, (pairs, M), torch.int32),
                              ("colmax", colmax, (pairs, N), torch.float32),
                              ("colarg", colarg, (pairs, N), torch.int32)):
        if (has_row if name.startswith("row") else has_col):
            check_shape(name, t, want)
            if t.dtype != dt:
                raise TypeError(f"{name} must have dtype {dt}, got {t.dtype}")
    dummy_f = torch.empty(1, dtype=torch.float32, device=q.device)
    dummy_i = torch.empty(1, dtype=torch.int32, device=q.device)
    ap = bool(all_pairs)

    def grad_args(strides):
        return named("g_ptr stride_gb stride_gpr stride_gr stride_gpc stride_gc stride_gch", (grad_out, *strides))

    def chansum(ch, xa, ya, R, S, maxima, strides, swap):
        out = torch.empty((pairs, R), dtype=torch.float32, device=q.device)
        _sim_map_chansum_kernel[(pairs, triton.cdiv(R, cfg["BLOCK_M"]))](
            sum_ptr=out, **grad_args(strides), **_mask(xa, "x", "r", "HAS_XMASK"), **_mask(ya, "y", "s", "HAS_YMASK"),
            max_ptr=maxima.contiguous(), R=R, S=S, CH=ch, BD=BD, P=P, CLIP=bool(clip), ALL_PAIRS=ap, SWAP=swap,
            BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"])
        return out

    rsum = chansum(slots["rowmax"], qa, da, M, N, rowmax, gs, False) if has_row else dummy_f
    csum = chansum(slots["colmax"], da, qa, N, M, colmax, gs_t, True) if has_col else dummy_f
    rarg = rowarg.contiguous() if has_row else dummy_i
    carg = colarg.contiguous() if has_col else dummy_i

    def grad_of(x, xa, y, ya, R, S, strides, row_stats, col_stats, has_r, has_c, swap):
        dx = torch.empty_like(x)
        grid = (x.shape[0], triton.cdiv(R, cfg["BLOCK_M"]), triton.cdiv(H, cfg["BLOCK_HV"]))
        _sim_map_bwd_kernel[grid](
            **_tokens(dx, "dx", "r"), **grad_args(strides), **_tokens(x, "x", "r"), **_mask(xa, "x", "r", "HAS_XMASK"),
            **_tokens(y, "y", "s"), **_mask(ya, "y", "s", "HAS_YMASK"),
            **named("rsum_ptr rarg_ptr csum_ptr carg_ptr", (*row_stats, *col_stats)),
            R=R, S=S, H=H, BD=BD, NPART=y.shape[0] if ap else 1, P=P, CH_SIM=slots["sim"], HAS_ROW=has_r,
            HAS_COL=has_c, CLIP=bool(clip), ALL_PAIRS=ap, SWAP=swap, PRECISION=dot_precision(q.dtype),
            BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_H=cfg["BLOCK_H"], BLOCK_HV=cfg["BLOCK_HV"],
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        return dx

    gq = grad_of(q, qa, d, da, M, N, gs, (rsum, rarg), (csum, carg), has_row, has_col, False) if need_dq else None
    gd = grad_of(d, da, q, qa, N, M, gs_t, (csum, carg), (rsum, rarg), has_col, has_row, True) if need_dd else None
    return gq, gd
