"""What the chunked one-pass losses share (spherekit.ops._info_nce_chunked, spherekit.ops._gram_chunked): how many
rows a logits chunk holds, and a GEMM that accumulates into the inputs' dtype or into fp32.

A chunk holds R = workspace_bytes // (columns x element size) rows, at least MIN_ROWS (fewer rows make
memory-bound products) and at most all of them. The default budget by device type: CPU 64 MiB
(cpu_budget.MIN_TILE_ELEMENTS fp32 elements: each pass over a chunk must outlast a scheduler time slice on a busy
machine, see cpu_budget); CUDA 32 MiB (R = 1,024 rows of N = 16,384 bf16 logits at the GPU goal shape, 16 chunks,
GEMMs of 25 GFLOP each).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import cpu_budget

MIN_ROWS = 64
DEFAULT_WORKSPACE_BYTES = {"cpu": 4 * cpu_budget.MIN_TILE_ELEMENTS, "cuda": 32 << 20}
ACCUMULATORS = ("input", "fp32")


def default_workspace_bytes(device: torch.device) -> int:
    """DEFAULT_WORKSPACE_BYTES for the device type (the CUDA value for any accelerator)."""
    return DEFAULT_WORKSPACE_BYTES.get(device.type, DEFAULT_WORKSPACE_BYTES["cuda"])


def chunk_rows(rows: int, columns: int, element_size: int, workspace_bytes: int) -> int:
    """Rows R of one chunk: workspace_bytes // (columns x element_size), clamped to [min(rows, MIN_ROWS), rows]."""
    fit = workspace_bytes // max(1, columns * element_size)
    return max(1, min(rows, max(MIN_ROWS, fit)))


def accumulator_dtype(compute_dtype: torch.dtype, accumulator: str) -> torch.dtype:
    """The dtype a gradient accumulates in over the chunks: fp32 when asked for fp16 / bf16 products, else theirs."""
    if accumulator == "fp32" and compute_dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    return compute_dtype


def accumulate(acc: Tensor, a: Tensor, b: Tensor, *, alpha: float = 1.0) -> None:
    """acc += alpha a b, with acc in the operands' dtype or in fp32 (cuBLAS's fp32-output GEMM on CUDA and for meta
    tensors, no temporary; a temporary product elsewhere, where aten has no such kernel)."""
    if acc.dtype == a.dtype:
        acc.addmm_(a, b, alpha=alpha)
    elif acc.device.type in ("cuda", "meta") and hasattr(torch.ops.aten.addmm, "dtype_out"):
        torch.ops.aten.addmm.dtype_out(acc, a, b, acc.dtype, alpha=alpha, out=acc)
    else:
        acc.add_(torch.mm(a, b), alpha=alpha)


def one_pass_function(name: str, op, grad_inputs: tuple[int, ...], scaled: tuple[bool, ...]) -> type:
    """The autograd Function of a one-pass custom op whose outputs are (loss, *the saved gradients, a): the
    gradient of input grad_inputs[k] is grad_loss x (a if scaled[k] else 1) x saved[k], in that input's dtype. The
    backward only scales (no sync, no recompute). A Function with setup_context, so torch.func transforms and
    torch.compile see through it; `name` names it (and its grad_fn, "<name>Backward")."""

    def forward(*args):
        return op(*args)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*output[1:])
        ctx.dtypes = tuple(None if inputs[i] is None else inputs[i].dtype for i in grad_inputs)
        ctx.n_inputs = len(inputs)
        ctx.mark_non_differentiable(*output[1:])

    def backward(ctx, grad_loss, *_unused):
        *saved, a = ctx.saved_tensors
        grads = [None] * ctx.n_inputs
        for k, i in enumerate(grad_inputs):
            g = saved[k]
            if ctx.needs_input_grad[i] and g.numel():
                factor = grad_loss * a if scaled[k] else grad_loss
                grads[i] = (g * factor.to(g.dtype)).to(ctx.dtypes[k])
        return tuple(grads)

    methods = dict(forward=staticmethod(forward), setup_context=staticmethod(setup_context),
                   backward=staticmethod(backward), __doc__=one_pass_function.__doc__)
    return type(name, (torch.autograd.Function,), methods)
