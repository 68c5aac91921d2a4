"""Triton kernels for MaxSim (late interaction; ColBERT's score, and F1 of "Training for Compositional Sensitivity
Reduces Dense Retrieval Generalization" (arXiv:2604.16351) eq. 6) over unified candidate layouts.

    score[a, k] = c_a * sum_{valid i} max_{valid j} <q[a, i], d[a, k, j]>
    c_a = 1 (MEAN=False: the sum, ColBERT / PyLate) or 1 / |valid q_a| (MEAN=True: the mean, the paper's F1)

The tokens arrive as the op wants them compared (normalised outside when the op normalises). Candidates come as
d4 (Bq_or_1, K, n, h) with a mask (Bq_or_1, K, n); `shared` (all-pairs layout, d4 = d[None]) reads d4[0] for every
query (batch stride 0). M is never written.

Conventions (the public op documents them): a query without valid tokens scores 0; a document without valid
tokens contributes 0 per query token (a max over the empty set := 0) and no gradient; ties go to the first
(lowest-index) token. The max propagates NaN (tl.maximum with PropagateNan.ALL; the GPU's plain max returns the
other operand), so a NaN similarity of a valid pair gives a NaN score, never a finite wrong one.

Forward: one persistent kernel. Program (query a, query-token block, slot s) loads its query tile once (all of h
when h <= BLOCK_H), computes c_a from the query mask itself (no 1 / count tensor, nothing when there is no mask or
the reduction is the sum), then walks the candidates k = s, s + SLOTS, ... in a tl.range pipelined num_stages
deep, so the next documents' loads are in flight while one is reduced. Each document is ONE masked tile of
BLOCK_N = next_pow2(n) tokens (capped at _config's BLOCK_N, 256: longer documents loop over tiles of that size),
S^T = D Q^T (BLOCK_N x BLOCK_M: the document tokens are the MMA's long side), the NaN-propagating max over the valid
document tokens (axis 0), the sum over the valid query tokens, times c_a. Only with STORE_ARG (a gradient is needed)
is the first argmax computed and written: (Bq, K, m) int32, -1 at padding query tokens and empty documents. SLOTS
per query make about PROGRAMS_PER_SM resident programs per SM over the whole grid.

Roofline of the goal row (issue 57: rerank, 1 query of m = 32 tokens x K = 10,000 documents of n = 180 tokens,
h = 128, bf16, document mask given, no gradient), at the H200 ceilings measured before (benches/results/gpu/
h200_ceilings.csv: copy 4,106 GB/s, bf16 matmul 764 TFLOP/s):

    FLOPs       2 m K n h                  = 14.75 GFLOP useful (the 256-token tile executes 20.97 GFLOP)
    HBM bytes   documents K n h 2          = 460.80 MB
                document mask K n          =   1.80 MB   (none without a mask)
                query m h 2 + scores K 4   =   0.05 MB   (+ argmax K m 4 = 1.28 MB only with a gradient)
                total                      = 462.65 MB
    time        462.65 MB / 4,106 GB/s     = 0.1127 ms   (compute: 14.75 GFLOP / 764 TFLOP/s = 0.0193 ms;
                                                          intensity 32 FLOP/B, ridge 186 FLOP/B: memory-bound)
    goal        >= 5x the masked einsum's device time, which no run has measured yet: the masked einsum took
                0.663 ms by wall clock (h200_bench.csv) and the unmasked einsum + amax + mean 0.319 ms on CUDA
                events (h200_tune.csv). At this row's 0.1127 ms the goal holds only if the masked einsum's device
                time is >= 0.563 ms; against 0.663 ms it asks for <= 0.133 ms, i.e. >= 85% of the copy ceiling.
    before      the previous kernel (one program per (query, document), the n-tile loop not pipelined, the
                argmax always written): 0.369 ms alone, 0.262 ms at its best configuration (1,248-1,758 GB/s).

Backward: the gradient flows only through the argmax entries. With w_ak = g[a, k] * c_a:
    grad_q[a, i] = sum_k w_ak * d[a, k, argmax[a, k, i]]                 (a gather, no atomics)
    grad_d[a, k, argmax[a, k, i]] += w_ak * q[a, i]                      (fp32 atomics, then cast)
One program owns (query a, block of query tokens, h slice) and loops over the candidates starting at
k = a mod K, so queries of the shared layout do not all hit the same candidate rows at once.
fp32 math; fp16/bf16 operands go to tl.dot as loaded, fp32 with "ieee" precision.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._common import INTERPRET, dot_precision, dot_tile, load_valid, named, nan_max, span, token_block
from ..ops.checks import KERNEL_DTYPES, check_same, check_shape, check_tokens
from ._sim_map_common import mask_arg, mask_strides, unit_last

# pointer types for benches/triton_resources.py (None: the embedding dtype)
PTR_TYPES = {"q_ptr": None, "d_ptr": None, "dq_ptr": None, "qm_ptr": "*u8", "dm_ptr": "*u8",
             "arg_ptr": "*i32", "score_ptr": "*fp32", "g_ptr": "*fp32", "dd_ptr": "*fp32"}


@triton.jit
def _query_scale(qm_ptr, stride_qmb, stride_qmm, a, M, HAS_QMASK: tl.constexpr, MEAN: tl.constexpr,
                 BLOCK_M: tl.constexpr):
    """c_a: 1 for the sum; 1 / |valid q_a| for the mean (1 / M without a mask, 0 for a query without valid tokens),
    counted from the mask row here (M bytes, once per program)."""
    scale = tl.full((), 1.0, tl.float32)
    if MEAN:
        if HAS_QMASK:
            count = tl.zeros((), dtype=tl.float32)
            for m0 in range(0, M, BLOCK_M):
                _, valid = load_valid(qm_ptr, stride_qmb, stride_qmm, a, m0 + tl.arange(0, BLOCK_M), M, True)
                count += tl.sum(valid.to(tl.float32), axis=0)
            scale = tl.where(count > 0, 1.0 / tl.maximum(count, 1.0), 0.0)
        else:
            scale = scale / M
    return scale


@triton.jit
def _doc_sims(b_q, p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
              ONE_H: tl.constexpr, PRECISION: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr):
    """S^T (BLOCK_N, BLOCK_M) fp32: <d_j, q_i> over all of h; ONE_H: one masked document tile against the query tile
    b_q loaded by the caller, else an h loop that reloads the query slices (L1 / L2 hits)."""
    if ONE_H:
        o_h = tl.arange(0, BLOCK_H)
        b_d = tl.load(p_d + o_n[:, None] * stride_dn + o_h[None, :] * stride_dd,
                      mask=m_n[:, None] & (o_h < H)[None, :], other=0.0)
        x = tl.dot(b_d, tl.trans(b_q), input_precision=PRECISION)
    else:
        x = dot_tile(p_d, stride_dn, stride_dd, o_n, m_n, p_q, stride_qm, stride_qd, o_m, m_m, H,
                     BLOCK_N, BLOCK_M, BLOCK_H, PRECISION)
    return x


@triton.jit
def _running_max(run_max, run_arg, x, valid_n, n0, STORE_ARG: tl.constexpr):
    """One document tile x (BLOCK_N, BLOCK_M) into the running (max, first argmax) per query token (axis 1)."""
    x = tl.where(valid_n[:, None], x, float("-inf"))
    t_max = tl.reduce(x, 0, nan_max)
    if STORE_ARG:
        t_arg = tl.argmax(x, 0, tie_break_left=True).to(tl.int32) + n0
        run_arg = tl.where(t_max > run_max, t_arg, run_arg)  # strict: an equal later maximum keeps the earlier
    return nan_max(run_max, t_max), run_arg


@triton.jit
def _maxsim_fwd_kernel(
    score_ptr, stride_sa, stride_sk,
    arg_ptr, stride_ga, stride_gk,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dk, stride_dn, stride_dd,
    dm_ptr, stride_dmb, stride_dmk, stride_dmn,
    K, M, N, H, SLOTS,
    HAS_QMASK: tl.constexpr, HAS_DMASK: tl.constexpr, MEAN: tl.constexpr, STORE_ARG: tl.constexpr,
    ONE_N: tl.constexpr, ONE_H: tl.constexpr, PRECISION: tl.constexpr, NUM_STAGES: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """Program (query a, query-token block, slot s): candidates k = s, s + SLOTS, ... Writes score[a, k, block] =
    c_a * the block's sum of valid maxima (the launcher adds the blocks when there are several) and, with
    STORE_ARG, argmax[a, k, block] (int32, contiguous last axis)."""
    a = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    slot = tl.program_id(2).to(tl.int64)  # the loop over candidates runs in int64: k * stride_dk may pass 2^31
    o_m, m_m, valid_m = token_block(qm_ptr, stride_qmb, stride_qmm, a, pid_m * BLOCK_M, M, HAS_QMASK, BLOCK_M)
    scale = _query_scale(qm_ptr, stride_qmb, stride_qmm, a, M, HAS_QMASK, MEAN, BLOCK_M)
    p_q = q_ptr + a * stride_qb
    b_q = tl.zeros((BLOCK_M, BLOCK_H), dtype=q_ptr.dtype.element_ty)
    if ONE_H:  # the query tile, loaded once for every candidate of the program
        o_h = tl.arange(0, BLOCK_H)
        b_q = tl.load(p_q + o_m[:, None] * stride_qm + o_h[None, :] * stride_qd,
                      mask=m_m[:, None] & (o_h < H)[None, :], other=0.0)
    p_dm = dm_ptr + a * stride_dmb
    for k in tl.range(slot, K, SLOTS, num_stages=NUM_STAGES):
        p_d = d_ptr + a * stride_db + k * stride_dk
        run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
        run_arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)
        if ONE_N:  # the whole document is one masked tile: no inner loop, so the candidate loop is pipelined
            o_n = tl.arange(0, BLOCK_N)
            m_n, valid_n = load_valid(p_dm, stride_dmk, stride_dmn, k, o_n, N, HAS_DMASK)
            x = _doc_sims(b_q, p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                          ONE_H, PRECISION, BLOCK_M, BLOCK_N, BLOCK_H)
            run_max, run_arg = _running_max(run_max, run_arg, x, valid_n, 0, STORE_ARG)
            seen = tl.max(valid_n.to(tl.int32), axis=0)
        else:
            seen = tl.zeros((), dtype=tl.int32)
            for n0 in range(0, N, BLOCK_N):
                o_n, _ = span(n0, N, BLOCK_N)
                m_n, valid_n = load_valid(p_dm, stride_dmk, stride_dmn, k, o_n, N, HAS_DMASK)
                x = _doc_sims(b_q, p_q, stride_qm, stride_qd, o_m, m_m, p_d, stride_dn, stride_dd, o_n, m_n, H,
                              ONE_H, PRECISION, BLOCK_M, BLOCK_N, BLOCK_H)
                run_max, run_arg = _running_max(run_max, run_arg, x, valid_n, n0, STORE_ARG)
                seen = tl.maximum(seen, tl.max(valid_n.to(tl.int32), axis=0))
        found = valid_m & (seen > 0)
        b_max = tl.where(found, run_max, 0.0)
        tl.store(score_ptr + a * stride_sa + k * stride_sk + pid_m, tl.sum(b_max, axis=0) * scale)
        if STORE_ARG:
            tl.store(arg_ptr + a * stride_ga + k * stride_gk + o_m, tl.where(found, run_arg, -1), mask=m_m)


@triton.jit
def _maxsim_bwd_kernel(
    dq_ptr, stride_dqb, stride_dqm, stride_dqd,
    dd_ptr, stride_ddb, stride_ddk, stride_ddn, stride_ddd,
    g_ptr, stride_gra, stride_grk,
    arg_ptr, stride_ga, stride_gk,
    q_ptr, stride_qb, stride_qm, stride_qd,
    qm_ptr, stride_qmb, stride_qmm,
    d_ptr, stride_db, stride_dk, stride_dn, stride_dd,
    K, M, H,
    HAS_QMASK: tl.constexpr, MEAN: tl.constexpr, NEED_DQ: tl.constexpr, NEED_DD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_HV: tl.constexpr,
):
    """Program (query a, query-token block, h slice): grad_q by gathering the argmax rows of every
    candidate; grad_d by atomically adding w_ak * q[a, i] into the argmax rows (fp32 buffer)."""
    a = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_v = tl.program_id(2).to(tl.int64)
    o_m, m_m = span(pid_m * BLOCK_M, M, BLOCK_M)
    o_v, m_v = span(pid_v * BLOCK_HV, H, BLOCK_HV)
    scale = _query_scale(qm_ptr, stride_qmb, stride_qmm, a, M, HAS_QMASK, MEAN, BLOCK_M)
    b_q = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    if NEED_DD:
        b_q = tl.load(q_ptr + a * stride_qb + o_m[:, None] * stride_qm + o_v[None, :] * stride_qd,
                      mask=m_m[:, None] & m_v[None, :], other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_HV), dtype=tl.float32)
    for kk in range(0, K):
        k = (kk + a) % K  # stagger the candidate order across queries (fewer colliding atomics)
        w = tl.load(g_ptr + a * stride_gra + k * stride_grk) * scale
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


# Launch options worth sweeping on a GPU (scripts/gpu_tune.py merges each into _config()'s result; {} = the
# default). The forward's document tile is next_pow2(n) up to BLOCK_N: 256 keeps a 180-token document one tile;
# 128 splits it in two (less shared memory per stage, an inner loop, so no pipelining across documents). Shared
# memory per stage at h = 128 bf16: BLOCK_N x BLOCK_H x 2 B = 64 KB (256 x 128), so 3 stages fit an H100's 227 KB
# and 4 do not. PROGRAMS_PER_SM sets the persistent grid (programs beyond one per SM queue behind it).
TUNE_CANDIDATES = [
    {},
    dict(num_warps=4),
    dict(num_stages=2),
    dict(num_stages=2, num_warps=4),
    dict(num_stages=3, PROGRAMS_PER_SM=2),
    dict(num_stages=2, PROGRAMS_PER_SM=2, num_warps=4),
    dict(num_stages=1, PROGRAMS_PER_SM=2),
    dict(BLOCK_H=64),
    dict(BLOCK_H=64, num_stages=4),
    dict(BLOCK_N=128, num_stages=3),
    dict(BLOCK_N=128, BLOCK_H=64, num_warps=4, num_stages=4),
    dict(BLOCK_M=16, num_warps=4),
    dict(num_warps=2, num_stages=2, PROGRAMS_PER_SM=4),
]


def _config(D: int, dtype: torch.dtype) -> dict:
    """Launch options (D = h); every key is a tunable (TUNE_CANDIDATES). Forward: BLOCK_M the query tile (shrunk
    to the query length), BLOCK_N the largest document tile (one tile per document up to it), BLOCK_H the largest h
    tile (one tile up to it: the query stays in registers), num_warps, num_stages (documents in flight; the h or
    n tiles in flight when a document takes several),
    PROGRAMS_PER_SM (the persistent grid). Backward: BLOCK_HV its h slice, bwd_num_warps. The interpreter wants
    small tiles (and they exercise the multi-tile paths in the tests). GPU: a first guess from the roofline (to be
    swept on a GPU: the previous kernel's measurements do not carry over). Compiled for sm_90 with triton 3.7.1
    (benches/triton_resources.py, no GPU): at h = 128 bf16 the forward is one 256 x 128 document tile per document,
    loaded by cp.async in 3 stages (206 KB shared memory), multiplied by wgmma, reduced with max.NaN; 109-187
    registers, no spills."""
    if INTERPRET:
        return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_H=32, BLOCK_HV=32, num_warps=1, num_stages=2, PROGRAMS_PER_SM=2,
                    bwd_num_warps=1)
    wide = dtype == torch.float32  # a 256 x 128 fp32 tile is 128 KB: two stages of 256 x 64 fit instead
    return dict(BLOCK_M=64, BLOCK_N=256, BLOCK_H=max(16, min(64 if wide else 128, triton.next_power_of_2(D))),
                BLOCK_HV=max(16, min(64, triton.next_power_of_2(D))), num_warps=8, num_stages=2 if wide else 3,
                PROGRAMS_PER_SM=1, bwd_num_warps=8)


@functools.lru_cache(maxsize=None)
def _multiprocessors(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (1 for CPU tensors under the interpreter): host metadata."""
    if device.type != "cuda":
        return 1
    return torch.cuda.get_device_properties(device).multi_processor_count


def _pow2(x: int, low: int, high: int) -> int:
    """next_pow2(x) within [low, high] (high a power of two)."""
    return max(low, min(high, triton.next_power_of_2(max(x, 1))))


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


def _shared_args(argmax, q, qm, has_qm, d4, shared) -> dict:
    """The arguments both kernels take, by name: the argmax, the query tokens and mask, the candidates (batch
    stride 0 when shared)."""
    return dict(**named("arg_ptr stride_ga stride_gk", (argmax, *argmax.stride()[:2])),
                **named("q_ptr stride_qb stride_qm stride_qd", (q, *q.stride())),
                **named("qm_ptr stride_qmb stride_qmm", (qm, *mask_strides(qm, has_qm, 2))),
                **named("d_ptr stride_db stride_dk stride_dn stride_dd", (d4, 0 if shared else d4.stride(0),
                                                                          *d4.stride()[1:])))


def _forward(q, q_mask, d4, d_mask4, shared, mean=True, store_argmax=True):
    """-> (scores (Bq, K) fp32, argmax (Bq, K, m) int32 or None); one kernel launch (two when m > BLOCK_M: the
    blocks' partial scores are added)."""
    (Bq, K, M, N, H), (qm, has_qm), (dm, has_dm) = _check(q, q_mask, d4, d_mask4, shared)
    q, d4 = unit_last(q), unit_last(d4)
    cfg = _config(H, q.dtype)
    block_m = _pow2(M, 16, cfg["BLOCK_M"])
    block_n = _pow2(N, 16, cfg["BLOCK_N"])
    block_h = _pow2(H, 16, cfg["BLOCK_H"])
    mb = triton.cdiv(M, block_m)
    slots = max(1, min(K, triton.cdiv(cfg["PROGRAMS_PER_SM"] * _multiprocessors(q.device), Bq * mb)))
    part = torch.empty((Bq, K, mb), dtype=torch.float32, device=q.device)
    argmax = torch.empty((Bq, K, M) if store_argmax else (1, 1, 1), dtype=torch.int32, device=q.device)
    smb, smk, smn = mask_strides(dm, has_dm, 3)
    _maxsim_fwd_kernel[(Bq, mb, slots)](
        score_ptr=part, stride_sa=part.stride(0), stride_sk=part.stride(1),
        **_shared_args(argmax, q, qm, has_qm, d4, shared),
        dm_ptr=dm, stride_dmb=0 if shared else smb, stride_dmk=smk, stride_dmn=smn,
        K=K, M=M, N=N, H=H, SLOTS=slots,
        HAS_QMASK=has_qm, HAS_DMASK=has_dm, MEAN=bool(mean), STORE_ARG=bool(store_argmax), ONE_N=N <= block_n,
        ONE_H=H <= block_h, PRECISION=dot_precision(q.dtype), NUM_STAGES=cfg["num_stages"],
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_H=block_h, num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],  # the inner loops of long documents / wide h pipeline as deep
    )
    scores = part.view(Bq, K) if mb == 1 else part.sum(-1)
    return scores, (argmax if store_argmax else None)


def maxsim_fwd(q, q_mask, d4, d_mask4, *, shared: bool, mean: bool = True, store_argmax: bool = True):
    """-> (scores (Bq, K) fp32, argmax (Bq, K, m) int32, None when not store_argmax). q (Bq, m, h); d4 (Bq or 1, K,
    n, h), same dtype; masks bool (or uint8/int8) of the token axes, or None (all valid); mean: divide by the valid
    query tokens (else the sum). See the module docstring."""
    return _forward(q, q_mask, d4, d_mask4, bool(shared), mean, store_argmax)


def maxsim_bwd(grad, q, q_mask, d4, d_mask4, argmax, *, shared: bool, mean: bool = True, need_dq: bool = True,
               need_dd: bool = True):
    """-> (grad_q like q, grad_d4 like d4); a gradient not asked for is None. grad (Bq, K);
    argmax from maxsim_fwd; mean as given to it."""
    (Bq, K, M, N, H), (qm, has_qm), _ = _check(q, q_mask, d4, d_mask4, shared)
    check_shape("grad", grad, (Bq, K))
    check_shape("argmax", argmax, (Bq, K, M))
    if not isinstance(grad, torch.Tensor) or not grad.is_floating_point():
        raise TypeError(f"grad must be a floating-point torch.Tensor, got {type(grad).__name__}")
    if argmax.dtype != torch.int32:
        raise TypeError(f"argmax must have dtype torch.int32, got {argmax.dtype}")
    if not (need_dq or need_dd):
        return None, None
    q, d4 = unit_last(q), unit_last(d4)
    argmax = argmax.contiguous()
    g = grad.to(torch.float32)
    cfg = _config(H, q.dtype)
    block_m = _pow2(M, 16, cfg["BLOCK_M"])
    dq = torch.empty_like(q) if need_dq else q.new_empty((1, 1, 1))
    dd = torch.zeros(d4.shape, dtype=torch.float32, device=q.device) if need_dd else q.new_empty((1, 1, 1, 1),
                                                                                                dtype=torch.float32)
    dq_strides = dq.stride() if need_dq else (0, 0, 0)
    dd_strides = dd.stride()[1:] if need_dd else (0, 0, 0)
    _maxsim_bwd_kernel[(Bq, triton.cdiv(M, block_m), triton.cdiv(H, cfg["BLOCK_HV"]))](
        dq_ptr=dq, stride_dqb=dq_strides[0], stride_dqm=dq_strides[1], stride_dqd=dq_strides[2],
        dd_ptr=dd, stride_ddb=0 if (shared or not need_dd) else dd.stride(0), stride_ddk=dd_strides[0],
        stride_ddn=dd_strides[1], stride_ddd=dd_strides[2],
        g_ptr=g, stride_gra=g.stride(0), stride_grk=g.stride(1),
        **_shared_args(argmax, q, qm, has_qm, d4, shared),
        K=K, M=M, H=H,
        HAS_QMASK=has_qm, MEAN=bool(mean), NEED_DQ=bool(need_dq), NEED_DD=bool(need_dd), BLOCK_M=block_m,
        BLOCK_HV=cfg["BLOCK_HV"], num_warps=cfg["bwd_num_warps"],
    )
    grad_d = (dd if d4.dtype == torch.float32 else dd.to(d4.dtype)) if need_dd else None
    return (dq if need_dq else None), grad_d
