"""Triton kernels for MaxSim (late interaction, "Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization" (arXiv:2604.16351) eq. 6) over unified candidate layouts.

    score[a, k] = (1 / |valid q_a|) * sum_{valid i} max_{valid j} <q[a, i], d[a, k, j]>

The tokens arrive L2-normalised (the op normalises outside), so <.,.> is the cosine M_ij. Candidates
come as d4 (Bq_or_1, K, n, h) with a mask (Bq_or_1, K, n); `shared` (all-pairs layout, d4 = d[None])
reads d4[0] for every query (batch stride 0). M is never written: a forward program owns (query a,
candidate k, block of query tokens) and streams document-token tiles through a tl.dot over h slices,
keeping a running max and argmax per query token; it writes the argmax (B, K, m) int32 (-1 for padding
query tokens, and for every token when the document has no valid token) and the block's sum of maxima
times 1/|valid q_a|; the launcher adds the blocks (deterministic, no atomics).

Conventions: a query without valid tokens scores 0; a document without valid tokens contributes 0 per
query token (max over an empty set := 0) and no gradient. Ties go to the first (lowest-index) token.

Backward: the gradient flows only through the argmax entries. With w_ak = g[a, k] / |valid q_a|:
    grad_q[a, i] = sum_k w_ak * d[a, k, argmax[a, k, i]]                 (a gather, no atomics)
    grad_d[a, k, argmax[a, k, i]] += w_ak * q[a, i]                      (fp32 atomics, then cast)
One program owns (query a, block of query tokens, h slice) and loops over the candidates starting at
k = a mod K, so queries of the shared layout do not all hit the same candidate rows at once.
fp32 math; fp16/bf16 operands go to tl.dot as loaded, fp32 with "ieee" precision.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import INTERPRET, dot_precision, dot_tile, span, token_block
from ..ops.checks import KERNEL_DTYPES, check_same, check_shape, check_tokens
from ._sim_map_common import inv_valid_count, mask_arg, mask_strides, unit_last

# pointer types for benches/triton_resources.py (None: the embedding dtype)
PTR_TYPES = {"q_ptr": None, "d_ptr": None, "dq_ptr": None, "qm_ptr": "*u8", "dm_ptr": "*u8",
             "arg_ptr": "*i32", "part_ptr": "*fp32", "max_ptr": "*fp32", "inv_ptr": "*fp32", "g_ptr": "*fp32",
             "dd_ptr": "*fp32"}


@triton.jit
def _maxsim_fwd_kernel(
    part_ptr, stride_pa, stride_pk,
    arg_ptr, stride_ga, stride_gk,
    max_ptr,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dk, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmk, stride_dmn,
    inv_ptr,
    K, M, N, H,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, STORE_MAX: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """Program (a * K + k, query-token block): running max/argmax over document-token tiles.
    Writes argmax[a, k, block] (int32, contiguous last axis), part[a, k, block] = inv[a] * sum of the
    valid maxima, and with STORE_MAX the maxima themselves (0 where invalid) at max_ptr, laid out like argmax."""
    pid = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    a = pid // K
    k = pid % K
    o_m, m_m, valid_m = token_block(qm_ptr, stride_qmb, stride_qmm, a, pid_m * BLOCK_M, M, HAS_QMASK, BLOCK_M)
    p_q = q_ptr + a * stride_qb
    p_d = d_ptr + a * stride_db + k * stride_dk

    run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    run_arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)
    for n0 in range(0, N, BLOCK_N):
        o_n, m_n = span(n0, N, BLOCK_N)
        valid_n = m_n
        if HAS_DMASK:
            valid_n = m_n & (tl.load(dm_ptr + a * stride_dmb + k * stride_dmk + o_n * stride_dmn, mask=m_n,
                                     other=0) != 0)
        x = dot_tile(p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                     BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        x = tl.where(valid_n[None, :], x, float("-inf"))
        t_max = tl.max(x, axis=1)
        t_arg = tl.argmax(x, axis=1, tie_break_left=True).to(tl.int32) + n0
        upd = t_max > run_max  # strict: an equal later maximum keeps the earlier index
        run_arg = tl.where(upd, t_arg, run_arg)
        run_max = tl.where(upd, t_max, run_max)

    found = valid_m & (run_arg >= 0)
    b_max = tl.where(found, run_max, 0.0)
    b_arg = tl.where(found, run_arg, -1)
    tl.store(arg_ptr + a * stride_ga + k * stride_gk + o_m, b_arg, mask=m_m)
    if STORE_MAX:
        tl.store(max_ptr + a * stride_ga + k * stride_gk + o_m, b_max, mask=m_m)
    inv = tl.load(inv_ptr + a)
    tl.store(part_ptr + a * stride_pa + k * stride_pk + pid_m, tl.sum(b_max, axis=0) * inv)


@triton.jit
def _maxsim_bwd_kernel(
    dq_ptr, stride_dqb, stride_dqm, stride_dqd,
    dd_ptr, stride_ddb, stride_ddk, stride_ddn, stride_ddd,
    g_ptr, stride_gra, stride_grk,
    inv_ptr,
    arg_ptr, stride_ga, stride_gk,
    q_ptr, stride_qb, stride_qm, stride_qd,
    d_ptr, stride_db, stride_dk, stride_dn, stride_dd,
    K, M, H,
    NEED_DQ: tl.constexpr, NEED_DD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_HV: tl.constexpr,
):
    """Program (query a, query-token block, h slice): grad_q by gathering the argmax rows of every
    candidate; grad_d by atomically adding w_ak * q[a, i] into the argmax rows (fp32 buffer)."""
    a = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_v = tl.program_id(2).to(tl.int64)
    o_m, m_m = span(pid_m * BLOCK_M, M, BLOCK_M)
    o_v, m_v = span(pid_v * BLOCK_HV, H, BLOCK_HV)
    inv = tl.load(inv_ptr + a)
    b_q = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    if NEED_DD:
        b_q = tl.load(q_ptr + a * stride_qb + o_m[:, None] * stride_qm + o_v[None, :] * stride_qd,
                      mask=m_m[:, None] & m_v[None, :], other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    for kk in range(0, K):
        k = (kk + a) % K  # stagger the candidate order across queries (fewer colliding atomics)
        w = tl.load(g_ptr + a * stride_gra + k * stride_grk) * inv
        b_arg = tl.load(arg_ptr + a * stride_ga + k * stride_gk + o_m, mask=m_m, other=-1)
        ok = b_arg >= 0
        rows = tl.where(ok, b_arg, 0).to(tl.int64)
        m_t = ok[:, None] & m_v[None, :]
        if NEED_DQ:
            b_d = tl.load(d_ptr + a * stride_db + k * stride_dk + rows[:, None] * stride_dn + o_v[None, :] * stride_dd,
                          mask=m_t, other=0.0).to(tl.float32)
            acc += w * b_d
        if NEED_DD:
            tl.atomic_add(dd_ptr + a * stride_ddb + k * stride_ddk + rows[:, None] * stride_ddn
                          + o_v[None, :] * stride_ddd, w * b_q, mask=m_t)
    if NEED_DQ:
        tl.store(dq_ptr + a * stride_dqb + o_m[:, None] * stride_dqm + o_v[None, :] * stride_dqd, acc,
                 mask=m_m[:, None] & m_v[None, :])


def _config(D: int, dtype: torch.dtype) -> dict:
    """Block sizes and launch options (D = h). The interpreter wants small tiles. GPU: a first guess (to be
    tuned on a GPU); compiled for sm_90 (benches/triton_resources.py) no kernel spills at h = 128 or 768 in
    fp16/bf16 or fp32 with 8 warps and BLOCK_H = 32 (registers: fwd 128, bwd 170); 4 warps or BLOCK_H = 64
    spill. The launcher shrinks BLOCK_M to the query length. On an H200 (bf16 rerank, 1 query x 10,000 documents of
    180 tokens, h = 128) the forward kernel alone took 0.369 ms with these options and 0.262 ms with BLOCK_N =
    BLOCK_H = 64, 2 warps, 3 stages, without masks (scripts/gpu_tune.py, benches/results/gpu/h200_tune.csv); but
    the public maxsim() with masks measured 1.32 ms with those options against 1.07 ms with these (3 repeats each,
    benches/results/gpu/h200_bench_tuned.csv vs h200_bench.csv), so the defaults stay until a sweep of the
    masked path decides."""
    if INTERPRET:
        return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_H=32, BLOCK_HV=32, num_warps=1, num_stages=1)
    return dict(BLOCK_M=64, BLOCK_N=64, BLOCK_H=32, BLOCK_HV=max(16, min(64, triton.next_power_of_2(D))),
                num_warps=8, num_stages=2)


def _block_m(cfg: dict, M: int) -> int:
    return min(cfg["BLOCK_M"], max(16, triton.next_power_of_2(max(M, 1))))


def _check(q, q_mask, d4, d_mask4, shared):
    check_tokens("q", q, 3, dtypes=KERNEL_DTYPES, nonempty=False)
    check_tokens("d4", d4, 4, dtypes=KERNEL_DTYPES, nonempty=False)
    check_same("d4", d4, "q", q)
    Bq, M, H = q.shape
    Bd, K, N, Hd = d4.shape
    lead = 1 if shared else Bq
    if Bd != lead:
        raise ValueError(f"d4.shape[0] must be {lead} ({'shared' if shared else 'Bq'}), got shape {tuple(d4.shape)}")
    if Hd != H:
        raise ValueError(f"d4.shape[3] must equal q.shape[2] ({H}), got shape {tuple(d4.shape)}")
    if min(Bq, K, M, N, H) < 1:
        raise ValueError(f"empty input: q shape {tuple(q.shape)}, d4 shape {tuple(d4.shape)}")
    qm, has_qm = mask_arg("q_mask", q_mask, (Bq, M), q.device)
    dm, has_dm = mask_arg("d_mask4", d_mask4, (Bd, K, N), q.device)
    return (Bq, K, M, N, H), (qm, has_qm), (dm, has_dm)


def _forward(q, q_mask, d4, d_mask4, shared, inv, store_max):
    (Bq, K, M, N, H), (qm, has_qm), (dm, has_dm) = _check(q, q_mask, d4, d_mask4, shared)
    if inv is None:
        inv = inv_valid_count(q_mask, Bq, M, q.device)
    q, d4 = unit_last(q), unit_last(d4)
    cfg = _config(H, q.dtype)
    block_m = _block_m(cfg, M)
    mb = triton.cdiv(M, block_m)
    part = torch.empty((Bq, K, mb), dtype=torch.float32, device=q.device)
    argmax = torch.empty((Bq, K, M), dtype=torch.int32, device=q.device)
    maxima = torch.empty((Bq, K, M), dtype=torch.float32, device=q.device) if store_max else part
    sdb = 0 if shared else d4.stride(0)
    smb, smk, smn = mask_strides(dm, has_dm, 3)
    smb = 0 if shared else smb
    _maxsim_fwd_kernel[(Bq * K, mb)](
        part_ptr=part, stride_pa=part.stride(0), stride_pk=part.stride(1),
        arg_ptr=argmax, stride_ga=argmax.stride(0), stride_gk=argmax.stride(1),
        max_ptr=maxima,
        q_ptr=q, stride_qb=q.stride(0), stride_qm=q.stride(1), stride_qd=q.stride(2),
        qm_ptr=qm, **dict(zip(("stride_qmb", "stride_qmm"), mask_strides(qm, has_qm, 2))),
        d_ptr=d4, stride_db=sdb, stride_dk=d4.stride(1), stride_dn=d4.stride(2), stride_dd=d4.stride(3),
        dm_ptr=dm, stride_dmb=smb, stride_dmk=smk, stride_dmn=smn,
        inv_ptr=inv, K=K, M=M, N=N, H=H,
        HAS_QMASK=has_qm, HAS_DMASK=has_dm, STORE_MAX=store_max, PRECISION=dot_precision(q.dtype),
        BLOCK_M=block_m, BLOCK_N=cfg["BLOCK_N"], BLOCK_H=cfg["BLOCK_H"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
    scores = part[..., 0] if mb == 1 else part.sum(-1)
    return scores, argmax, (maxima if store_max else None)


def maxsim_fwd(q, q_mask, d4, d_mask4, *, shared: bool):
    """-> (scores (Bq, K) fp32, argmax (Bq, K, m) int32). q (Bq, m, h); d4 (Bq or 1, K, n, h), same dtype;
    masks bool (or uint8/int8) of the token axes, or None (all valid). See the module docstring."""
    scores, argmax, _ = _forward(q, q_mask, d4, d_mask4, bool(shared), None, False)
    return scores, argmax


def row_max(x, x_mask, y, y_mask):
    """Per-row statistics of M = x y^T over valid tokens (used by sim_map for the rowmax/colmax channels):
    x (B, R, h), y (B, S, h) -> (max_j M_ij (B, R) fp32, argmax (B, R) int32); both 0 / -1 for a padding
    row or when y has no valid token."""
    y_mask4 = None if y_mask is None else y_mask[:, None]
    _, argmax, maxima = _forward(x, x_mask, y[:, None], y_mask4, False, None, True)
    return maxima[:, 0], argmax[:, 0]


def maxsim_bwd(grad, q, q_mask, d4, d_mask4, argmax, *, shared: bool, need_dq: bool = True, need_dd: bool = True):
    """-> (grad_q like q, grad_d4 like d4); a gradient not asked for is None. grad (Bq, K);
    argmax from maxsim_fwd."""
    (Bq, K, M, N, H), _, _ = _check(q, q_mask, d4, d_mask4, shared)
    check_shape("grad", grad, (Bq, K))
    check_shape("argmax", argmax, (Bq, K, M))
    if not isinstance(grad, torch.Tensor) or not grad.is_floating_point():
        raise TypeError(f"grad must be a floating-point torch.Tensor, got {type(grad).__name__}")
    if argmax.dtype != torch.int32:
        raise TypeError(f"argmax must have dtype torch.int32, got {argmax.dtype}")
    q, d4 = unit_last(q), unit_last(d4)
    argmax = argmax.contiguous()
    g = grad.to(torch.float32)
    inv = inv_valid_count(q_mask, Bq, M, q.device)
    cfg = _config(H, q.dtype)
    block_m = _block_m(cfg, M)
    dq = torch.empty_like(q) if need_dq else q.new_empty((1, 1, 1))
    dd = torch.zeros(d4.shape, dtype=torch.float32, device=q.device) if need_dd else q.new_empty((1, 1, 1, 1),
                                                                                                dtype=torch.float32)
    sdb = 0 if shared else d4.stride(0)
    sddb = 0 if (shared or not need_dd) else dd.stride(0)
    grid = (Bq, triton.cdiv(M, block_m), triton.cdiv(H, cfg["BLOCK_HV"]))
    if need_dq or need_dd:
        dq_strides = dq.stride() if need_dq else (0, 0, 0)
        dd_strides = dd.stride()[1:] if need_dd else (0, 0, 0)
        _maxsim_bwd_kernel[grid](
            dq_ptr=dq, stride_dqb=dq_strides[0], stride_dqm=dq_strides[1], stride_dqd=dq_strides[2],
            dd_ptr=dd, stride_ddb=sddb, stride_ddk=dd_strides[0], stride_ddn=dd_strides[1], stride_ddd=dd_strides[2],
            g_ptr=g, stride_gra=g.stride(0), stride_grk=g.stride(1),
            inv_ptr=inv,
            arg_ptr=argmax, stride_ga=argmax.stride(0), stride_gk=argmax.stride(1),
            q_ptr=q, stride_qb=q.stride(0), stride_qm=q.stride(1), stride_qd=q.stride(2),
            d_ptr=d4, stride_db=sdb, stride_dk=d4.stride(1), stride_dn=d4.stride(2), stride_dd=d4.stride(3),
            K=K, M=M, H=H,
            NEED_DQ=bool(need_dq), NEED_DD=bool(need_dd), BLOCK_M=block_m, BLOCK_HV=cfg["BLOCK_HV"],
            num_warps=cfg["num_warps"],
        )
    grad_d = (dd if d4.dtype == torch.float32 else dd.to(d4.dtype)) if need_dd else None
    return (dq if need_dq else None), grad_d
