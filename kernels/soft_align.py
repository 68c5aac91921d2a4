"""Triton kernels for paired soft alignment with positional bias ("Training for Compositional Sensitivity Reduces
Dense Retrieval Generalization" (arXiv:2604.16351) eq. 7 and 10).

For one pair (q (m, h), d (n, h), L2-normalised, so M = q d^T is the cosine map), over valid j:
    z_ij = (M_ij - lam * |i - j|) / tau,   A_ij = softmax_j z_ij,   s_i = sum_j A_ij M_ij,
    score = (1 / |valid q|) sum_{valid i} s_i
(i, j are the padded token positions; a query without valid tokens scores 0; a row whose document has
no valid token has s_i = 0, lse_i = -inf and no gradient; a NaN in a valid entry gives NaN). lam and tau are read
from 1-element fp32 device tensors inside the kernels (no host copy).

Forward (flash-attention-like, M never written): a program owns (pair b, block of query tokens) and
streams document-token tiles through an online softmax with V = M itself (it accumulates sum_j p_ij M_ij);
it stores lse_i (of z) and s_i per row and the block's part of the score; the launcher adds the blocks.
Backward (tiles recomputed), with c_b = g_b / |valid q_b| and P_ij = A_ij (1 + (M_ij - s_i) / tau):
    dscore/dM_ij = c_b P_ij    ->  grad_q = c_b P d,  grad_d = c_b P^T q
    grad_lam_b = -(c_b / tau) sum_{valid i, j} A_ij |i - j| (M_ij - s_i)
    grad_tau_b = -(c_b / tau) sum_{valid i, j} A_ij z_ij (M_ij - s_i)
c_b is constant over the pair, so it multiplies the fp32 results and the tile given to tl.dot is P itself
(|P| <= 1 + 2 / tau: no fp16 underflow from small gradients). Two kernels, no atomics: the dq kernel owns
(pair, query block, h slice) and also writes the lam/tau parts; the dd kernel owns (pair, document
block, h slice) and loops over query blocks. fp32 math; fp16/bf16 operands go to tl.dot as loaded.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import INTERPRET, dot_precision, dot_tile, online_softmax_step, span, token_block
from ..ops.checks import check_shape
from ._sim_map_common import check_paired, inv_valid_count, mask_strides, unit_last

PTR_TYPES = {"q_ptr": None, "d_ptr": None, "dq_ptr": None, "dd_ptr": None, "qm_ptr": "*u8", "dm_ptr": "*u8",
             "part_ptr": "*fp32", "lse_ptr": "*fp32", "s_ptr": "*fp32", "inv_ptr": "*fp32", "g_ptr": "*fp32",
             "plam_ptr": "*fp32", "ptau_ptr": "*fp32", "lam_ptr": "*fp32", "tau_ptr": "*fp32"}


@triton.jit
def _scalars(lam_ptr, tau_ptr):
    """(lam, 1 / tau) read on the device (1-element fp32 tensors): the launch needs no host copy of either."""
    return tl.load(lam_ptr), 1.0 / tl.load(tau_ptr)


@triton.jit
def _logits(x, o_m, o_n, valid, lam, inv_tau):
    """z = (M - lam |i - j|) / tau on valid entries, -inf elsewhere; also |i - j| as fp32."""
    dist = tl.abs(o_m[:, None] - o_n[None, :]).to(tl.float32)
    return tl.where(valid, (x - lam * dist) * inv_tau, float("-inf")), dist


@triton.jit
def _soft_align_fwd_kernel(
    part_ptr, lse_ptr, s_ptr,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmn,
    inv_ptr,
    M, N, H, MB,
    lam_ptr, tau_ptr,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """Program (pair b, query block): lse (B, M), s (B, M) contiguous; part (B, MB) = inv[b] * sum of valid s_i."""
    b = tl.program_id(0).to(tl.int64)
    lam, inv_tau = _scalars(lam_ptr, tau_ptr)
    pid_m = tl.program_id(1).to(tl.int64)
    o_m, m_m, valid_m = token_block(qm_ptr, stride_qmb, stride_qmm, b, pid_m * BLOCK_M, M, HAS_QMASK, BLOCK_M)
    p_q = q_ptr + b * stride_qb
    p_d = d_ptr + b * stride_db

    max_run = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    sum_run = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    seen = tl.zeros((), dtype=tl.int32)  # the document has a valid token
    for n0 in range(0, N, BLOCK_N):
        o_n, m_n, valid_n = token_block(dm_ptr, stride_dmb, stride_dmn, b, n0, N, HAS_DMASK, BLOCK_N)
        seen = tl.maximum(seen, tl.max(valid_n.to(tl.int32), axis=0))
        x = dot_tile(p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                     BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        z, _ = _logits(x, o_m, o_n, valid_n[None, :], lam, inv_tau)
        max_run, rescale, p = online_softmax_step(max_run, z)
        sum_run = sum_run * rescale + tl.sum(p, axis=1)
        acc = acc * rescale + tl.sum(p * x, axis=1)
    # an empty document (no valid token: by the mask, not by the values) gives s_i = 0, lse_i = -inf; otherwise
    # a NaN anywhere in the row (or logits that are all -inf) leaves s_i NaN, never a finite wrong value
    s = tl.where(seen > 0, acc / sum_run, 0.0)
    lse = tl.where(seen > 0, max_run + tl.log(sum_run), float("-inf"))
    tl.store(lse_ptr + b * M + o_m, lse, mask=m_m)
    tl.store(s_ptr + b * M + o_m, s, mask=m_m)
    inv = tl.load(inv_ptr + b)
    tl.store(part_ptr + b * MB + pid_m, tl.sum(tl.where(valid_m, s, 0.0), axis=0) * inv)


@triton.jit
def _p_tile(x, o_m, o_n, valid, b_lse, b_s, lam, inv_tau):
    """-> (P = A (1 + (M - s) / tau), A, z (0 where invalid), |i - j|, M - s) of one recomputed tile."""
    z, dist = _logits(x, o_m, o_n, valid, lam, inv_tau)
    a = tl.where(valid, tl.exp(z - b_lse[:, None]), 0.0)
    dlt = x - b_s[:, None]
    return a * (1.0 + dlt * inv_tau), a, tl.where(valid, z, 0.0), dist, dlt


@triton.jit
def _soft_align_bwd_dq_kernel(
    dq_ptr, stride_dqb, stride_dqm, stride_dqd,
    plam_ptr, ptau_ptr,
    g_ptr, inv_ptr, lse_ptr, s_ptr,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmn,
    M, N, H, MB,
    lam_ptr, tau_ptr,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_HV: tl.constexpr,
):
    """Program (pair b, query block, h slice): grad_q[b, block, slice] = c_b P d; the slice-0 programs
    write the block's parts of grad_lam and grad_tau at plam/ptau (B, MB)."""
    b = tl.program_id(0).to(tl.int64)
    lam, inv_tau = _scalars(lam_ptr, tau_ptr)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_v = tl.program_id(2).to(tl.int64)
    o_m, m_m, valid_m = token_block(qm_ptr, stride_qmb, stride_qmm, b, pid_m * BLOCK_M, M, HAS_QMASK, BLOCK_M)
    o_v, m_v = span(pid_v * BLOCK_HV, H, BLOCK_HV)
    b_lse = tl.load(lse_ptr + b * M + o_m, mask=m_m, other=0.0)
    b_s = tl.load(s_ptr + b * M + o_m, mask=m_m, other=0.0)
    c = tl.load(g_ptr + b) * tl.load(inv_ptr + b)
    p_q = q_ptr + b * stride_qb
    p_d = d_ptr + b * stride_db

    acc = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    lam_acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    tau_acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        o_n, m_n, valid_n = token_block(dm_ptr, stride_dmb, stride_dmn, b, n0, N, HAS_DMASK, BLOCK_N)
        valid = valid_m[:, None] & valid_n[None, :]
        x = dot_tile(p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                     BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        p, a, z, dist, dlt = _p_tile(x, o_m, o_n, valid, b_lse, b_s, lam, inv_tau)
        ad = a * dlt
        lam_acc += tl.sum(ad * dist, axis=1)
        tau_acc += tl.sum(ad * z, axis=1)
        b_d = tl.load(p_d + o_n[:, None] * stride_dn + o_v[None, :] * stride_dd,
                      mask=m_n[:, None] & m_v[None, :], other=0.0)
        acc = tl.dot(p.to(b_d.dtype), b_d, acc, input_precision=PRECISION)
    tl.store(dq_ptr + b * stride_dqb + o_m[:, None] * stride_dqm + o_v[None, :] * stride_dqd, acc * c,
             mask=m_m[:, None] & m_v[None, :])
    if pid_v == 0:
        tl.store(plam_ptr + b * MB + pid_m, -c * inv_tau * tl.sum(lam_acc, axis=0))
        tl.store(ptau_ptr + b * MB + pid_m, -c * inv_tau * tl.sum(tau_acc, axis=0))


@triton.jit
def _soft_align_bwd_dd_kernel(
    dd_ptr, stride_ddb, stride_ddn, stride_ddd,
    g_ptr, inv_ptr, lse_ptr, s_ptr,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmn,
    M, N, H,
    lam_ptr, tau_ptr,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_HV: tl.constexpr,
):
    """Program (pair b, document block, h slice): grad_d[b, block, slice] = c_b P^T q over all query blocks."""
    b = tl.program_id(0).to(tl.int64)
    lam, inv_tau = _scalars(lam_ptr, tau_ptr)
    pid_n = tl.program_id(1).to(tl.int64)
    pid_v = tl.program_id(2).to(tl.int64)
    o_n, m_n, valid_n = token_block(dm_ptr, stride_dmb, stride_dmn, b, pid_n * BLOCK_N, N, HAS_DMASK, BLOCK_N)
    o_v, m_v = span(pid_v * BLOCK_HV, H, BLOCK_HV)
    c = tl.load(g_ptr + b) * tl.load(inv_ptr + b)
    p_q = q_ptr + b * stride_qb
    p_d = d_ptr + b * stride_db

    acc = tl.zeros((BLOCK_N, BLOCK_HV), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        o_m, m_m, valid_m = token_block(qm_ptr, stride_qmb, stride_qmm, b, m0, M, HAS_QMASK, BLOCK_M)
        b_lse = tl.load(lse_ptr + b * M + o_m, mask=m_m, other=0.0)
        b_s = tl.load(s_ptr + b * M + o_m, mask=m_m, other=0.0)
        valid = valid_m[:, None] & valid_n[None, :]
        x = dot_tile(p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                     BLOCK_M, BLOCK_N, BLOCK_H, PRECISION)
        p, _, _, _, _ = _p_tile(x, o_m, o_n, valid, b_lse, b_s, lam, inv_tau)
        b_q = tl.load(p_q + o_m[:, None] * stride_qm + o_v[None, :] * stride_qd,
                      mask=m_m[:, None] & m_v[None, :], other=0.0)
        acc = tl.dot(tl.trans(p.to(b_q.dtype)), b_q, acc, input_precision=PRECISION)
    tl.store(dd_ptr + b * stride_ddb + o_n[:, None] * stride_ddn + o_v[None, :] * stride_ddd, acc * c,
             mask=m_n[:, None] & m_v[None, :])


def _config(D: int, dtype: torch.dtype) -> dict:
    """Block sizes and launch options (D = h). The interpreter wants small tiles. GPU: a first guess (to be
    tuned on a GPU); compiled for sm_90 (benches/triton_resources.py) no kernel spills at h = 128 or 768 in
    fp16/bf16 or fp32 with 8 warps and BLOCK_H = 32 (registers: fwd 130, bwd_dq 227, bwd_dd 196); 4 warps or
    BLOCK_H = 64 spill. BLOCK_HV: the h slice of the backward accumulators."""
    if INTERPRET:
        return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_H=32, BLOCK_HV=32, num_warps=1, num_stages=1)
    return dict(BLOCK_M=64, BLOCK_N=64, BLOCK_H=32, BLOCK_HV=max(16, min(128, triton.next_power_of_2(D))),
                num_warps=8, num_stages=2)


def _scalar(name: str, x, device: torch.device) -> torch.Tensor:
    """A float or a 0-dim / 1-element tensor -> a 1-element fp32 tensor on device (a tensor's value is not read)."""
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise ValueError(f"{name} must be a float or a 1-element tensor, got shape {tuple(x.shape)}")
        return x.detach().reshape(1).to(device=device, dtype=torch.float32)
    if name == "tau" and not float(x) > 0.0:
        raise ValueError(f"tau must be > 0, got {x}")
    return torch.full((1,), float(x), dtype=torch.float32, device=device)


def _prepare(q, q_mask, d, d_mask, lam, tau):
    (B, M, N, H), (qm, has_qm), (dm, has_dm) = check_paired(q, q_mask, d, d_mask)
    cfg = _config(H, q.dtype)
    block_m = min(cfg["BLOCK_M"], max(16, triton.next_power_of_2(M)))
    qu, du = unit_last(q), unit_last(d)
    (stride_qmb, stride_qmm), (stride_dmb, stride_dmn) = mask_strides(qm, has_qm, 2), mask_strides(dm, has_dm, 2)
    args = dict(  # the kernels' shared arguments, by name
        q_ptr=qu, stride_qb=qu.stride(0), stride_qm=qu.stride(1), stride_qd=qu.stride(2),
        qm_ptr=qm, stride_qmb=stride_qmb, stride_qmm=stride_qmm,
        d_ptr=du, stride_db=du.stride(0), stride_dn=du.stride(1), stride_dd=du.stride(2),
        dm_ptr=dm, stride_dmb=stride_dmb, stride_dmn=stride_dmn,
        inv_ptr=inv_valid_count(q_mask, B, M, q.device), M=M, N=N, H=H, lam_ptr=_scalar("lam", lam, q.device),
        tau_ptr=_scalar("tau", tau, q.device),
        HAS_QMASK=has_qm, HAS_DMASK=has_dm, PRECISION=dot_precision(q.dtype), BLOCK_M=block_m,
        BLOCK_N=cfg["BLOCK_N"], BLOCK_H=cfg["BLOCK_H"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
    return (B, M, N, H), cfg, args


def soft_align_fwd(q, q_mask, d, d_mask, lam, tau):
    """-> (score (B,) fp32, lse (B, m) fp32, s (B, m) fp32). q (B, m, h), d (B, n, h) same dtype, masks bool
    (or uint8/int8) or None; lam, tau floats (tau > 0) or 1-element tensors on q's device (read in the kernels).
    See the module docstring."""
    (B, M, N, H), cfg, args = _prepare(q, q_mask, d, d_mask, lam, tau)
    mb = triton.cdiv(M, args["BLOCK_M"])
    part = torch.empty((B, mb), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, M), dtype=torch.float32, device=q.device)
    s = torch.empty((B, M), dtype=torch.float32, device=q.device)
    _soft_align_fwd_kernel[(B, mb)](part_ptr=part, lse_ptr=lse, s_ptr=s, MB=mb, **args)
    return (part[:, 0] if mb == 1 else part.sum(-1)), lse, s


def soft_align_bwd(grad, q, q_mask, d, d_mask, lam, tau, lse, s, *, need_dq: bool = True,
                   need_dd: bool = True):
    """-> (grad_q like q or None, grad_d like d or None, grad_lam (B,) fp32, grad_tau (B,) fp32).
    grad (B,) is the gradient of the score; lse, s from soft_align_fwd."""
    (B, M, N, H), cfg, args = _prepare(q, q_mask, d, d_mask, lam, tau)
    check_shape("grad", grad, (B,))
    check_shape("lse", lse, (B, M))
    check_shape("s", s, (B, M))
    g = grad.to(torch.float32).contiguous()
    lse, s = lse.float().contiguous(), s.float().contiguous()
    args = dict(args, g_ptr=g, lse_ptr=lse, s_ptr=s, BLOCK_HV=cfg["BLOCK_HV"])
    mb = triton.cdiv(M, args["BLOCK_M"])
    hb = triton.cdiv(H, cfg["BLOCK_HV"])
    dq = torch.empty_like(args["q_ptr"])
    plam = torch.empty((B, mb), dtype=torch.float32, device=q.device)
    ptau = torch.empty_like(plam)
    # the dq kernel also yields grad_lam/grad_tau; without dq only its h-slice 0 is launched
    _soft_align_bwd_dq_kernel[(B, mb, hb if need_dq else 1)](
        dq_ptr=dq, stride_dqb=dq.stride(0), stride_dqm=dq.stride(1), stride_dqd=dq.stride(2), plam_ptr=plam,
        ptau_ptr=ptau, MB=mb, **args)
    dd = None
    if need_dd:
        dd = torch.empty_like(args["d_ptr"])
        _soft_align_bwd_dd_kernel[(B, triton.cdiv(N, args["BLOCK_N"]), hb)](
            dd_ptr=dd, stride_ddb=dd.stride(0), stride_ddn=dd.stride(1), stride_ddd=dd.stride(2), **args)
    return (dq if need_dq else None), dd, plam.sum(-1), ptau.sum(-1)
