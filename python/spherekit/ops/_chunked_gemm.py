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
