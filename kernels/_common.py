"""Pieces shared by the Triton kernel files: index blocks, the tiled dot product, the online-softmax step, softplus,
and launch helpers."""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
# Target of a row that takes no part in the loss, as a tl.constexpr; equals spherekit.reference.contrastive.IGNORE_INDEX
# (the Triton kernels do not import spherekit.reference; tests/ops/test_contracts.py checks the two agree).
IGNORE_INDEX = tl.constexpr(-100)


def vectors(*xs):
    """The 1-D per-row arguments (targets, labels, row statistics) made contiguous, None kept: kernels index
    them as ptr + row, so a strided or expanded (stride-0) view must not reach them as it is. O(rows) copies."""
    return tuple(None if x is None else x.contiguous() for x in xs)


def named(names: str, values) -> dict:
    """Keyword arguments of a kernel launch from a space-separated list of parameter names and their values, e.g.
    named("x_ptr stride_xb stride_xr stride_xd", (x, *x.stride())) for a strided 3-D argument."""
    keys = names.split()
    values = tuple(values)
    assert len(keys) == len(values), f"{len(keys)} names for {len(values)} values: {names}"
    return dict(zip(keys, values))


def scaled_grad(grad_rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(grad_rows / scale in fp32, scale (1,)) with scale = max |grad_rows| (1 when all are 0): a backward kernel
    takes the scaled gradient, so that fp16 tiles built from it stay in the normal range, and multiplies its
    fp32 result back by scale (a device tensor: no host sync)."""
    g = grad_rows.float()
    scale = g.abs().amax()
    scale = torch.where(scale > 0, scale, torch.ones_like(scale)).reshape(1)
    return g / scale, scale


def dot_precision(dtype: torch.dtype) -> str:
    """tl.dot input precision: full fp32 ("ieee") for fp32 operands; ignored for fp16/bf16 operands."""
    return "ieee" if dtype == torch.float32 else "tf32"


def gram_config(D: int, dtype: torch.dtype) -> dict:
    """Block sizes of the B x B Gram-matrix kernels (sincere, circular_cse). The interpreter wants few,
    small tiles. GPU sizes are a first guess, to be tuned on a GPU; with 8 warps, sm_90 compiles report
    no register spills for fp16/bf16 at d=384 (benches/triton_resources.py)."""
    if INTERPRET:
        return dict(BLOCK_B=32, BLOCK_N=32, BLOCK_D=32, BLOCK_DV=32, num_warps=4)
    return dict(BLOCK_B=64, BLOCK_N=32, BLOCK_D=32 if dtype == torch.float32 else 64,
                BLOCK_DV=max(16, min(64, triton.next_power_of_2(D))), num_warps=8)


@triton.jit
def span(start, n, BLOCK: tl.constexpr):
    """The BLOCK indices start, start + 1, ... of an axis of length n and their in-range mask: (offsets, offsets < n).
    A program's block i is span(i * BLOCK, n, BLOCK) (with i int64, the offsets are int64)."""
    o = start + tl.arange(0, BLOCK)
    return o, o < n


@triton.jit
def online_softmax_step(max_run, s):
    """One column tile of a streaming softmax over the rows of s (rows, cols) ("Online normalizer calculation for
    softmax", Milakov and Gimelshein 2018, arXiv:1805.02867):

        max_new = max(max_run, max_j s_j),   rescale = exp(max_run - max_new),   p_j = exp(s_j - max_new)

    The caller updates its running sums as sum_run * rescale + sum_j p_j (and any p-weighted accumulator the
    same way), so that after the last tile logsumexp = max_run + log(sum_run). A row that has seen only -inf keeps
    max -inf, and its rescale and p are taken against 0 (no -inf - -inf = NaN). -> (max_new, rescale, p)."""
    max_new = tl.maximum(max_run, tl.max(s, axis=1))
    max_safe = tl.where(max_new == float("-inf"), 0.0, max_new)
    return max_new, tl.exp(max_run - max_safe), tl.exp(s - max_safe[:, None])


@triton.jit
def softplus(x):
    """log(1 + e^x) without overflow."""
    return tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))


@triton.jit
def load_valid(m_ptr, stride_mb, stride_mt, b, o_t, L, HAS_MASK: tl.constexpr):
    """(in range, valid) flags of token positions o_t of sequence b: valid = in range and mask != 0
    (every in-range token when HAS_MASK is False)."""
    m_t = o_t < L
    valid = m_t
    if HAS_MASK:
        valid = m_t & (tl.load(m_ptr + b * stride_mb + o_t * stride_mt, mask=m_t, other=0) != 0)
    return m_t, valid


@triton.jit
def token_block(m_ptr, stride_mb, stride_mt, b, start, L, HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
    """The BLOCK token positions o_t = start, start + 1, ... of sequence b: (o_t, in range, valid) (load_valid)."""
    o_t = start + tl.arange(0, BLOCK)
    m_t, valid = load_valid(m_ptr, stride_mb, stride_mt, b, o_t, L, HAS_MASK)
    return o_t, m_t, valid


@triton.jit
def dot_tile(a_ptr, stride_a0, stride_a1, o_a, m_a, b_ptr, stride_b0, stride_b1, o_b, m_b, D,
             BLOCK_A: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    """x[i, j] = <a[o_a[i]], b[o_b[j]]> over all of D with fp32 accumulation; operands go to tl.dot as loaded."""
    acc = tl.zeros((BLOCK_A, BLOCK_B), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        o_d, m_d = span(d0, D, BLOCK_D)
        b_a = tl.load(a_ptr + o_a[:, None] * stride_a0 + o_d[None, :] * stride_a1,
                      mask=m_a[:, None] & m_d[None, :], other=0.0)
        b_b = tl.load(b_ptr + o_b[:, None] * stride_b0 + o_d[None, :] * stride_b1,
                      mask=m_b[:, None] & m_d[None, :], other=0.0)
        acc = tl.dot(b_a, tl.trans(b_b), acc, input_precision=PRECISION)
    return acc


@triton.jit
def nan_max(a, b):
    """max(a, b) propagating NaN: the GPU's plain max (tl.maximum, tl.max) returns the other operand, which would turn
    a NaN similarity into a finite maximum. Also a tl.reduce combine function: tl.reduce(x, axis, nan_max)."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
