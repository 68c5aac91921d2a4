"""The chunked orchestrator of the losses over a Gram matrix S = E E^T (SINCERE / SoftCSE, CircularCSE): the scalar
loss and its gradient from one pass, on every device, as spherekit.ops._info_nce_chunked does for InfoNCE.

Per chunk of R rows of the embeddings:

    S = E_r E^T                        one GEMM into a reused R x B buffer (BLAS / cuBLAS, fp32 accumulation)
    row kernel over S                  the rows' loss terms and the gradient G' with respect to the dots, over S
    dE'_r += G' E,   dE' += G'^T E_r   two GEMMs (one when G is symmetric: dE'_r += 2 G' E)

since the loss depends on x_ij = <e_i, e_j> through both rows i and j: dE = a (G' + G'^T) E with one scalar a (the
mean's weight over the temperature: the row kernel's G' entries stay of order 1). The backward only multiplies
dE' by the incoming scalar. 3 x 2B^2 d matmul FLOPs (2 x for a symmetric G), where the forward + recomputing
backward took 4 (and the Triton flash kernels recomputed each logit tile once per slice of d).

Row kernels: kernels/gram_rows.py (Triton), ops/_sincere_cpu.py and ops/_circular_cse_cpu.py (torch); each takes
the chunk S (raw dots), the rows' slice and its loss's tensors, overwrites S with G' and returns (the rows' loss
terms summed, their temperature statistic r = sum_j G'_ij x_ij summed, or None).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from ._chunked_gemm import accumulate, accumulator_dtype, chunk_rows
from .cpu_budget import row_chunks

RowKernel = Callable[[Tensor, slice], tuple[Tensor, Tensor | None]]


def gram_fwd_bwd(e: Tensor, rows: RowKernel, *, compute_dtype: torch.dtype, symmetric: bool, need_de: bool,
                 workspace_bytes: int, accumulator: str = "input") -> tuple[Tensor, Tensor | None, Tensor | None]:
    """-> (sum of the row kernel's loss terms, dE' (B, d) or None, sum of its statistics r or None), with the loss's
    gradient a (dE' ) for the caller's scalar a. rows(S, sl) sees S = E[sl] E^T in compute_dtype."""
    B = e.shape[0]
    e_ = e.to(compute_dtype)
    R = chunk_rows(B, B, e_.element_size(), workspace_bytes)
    buffer = torch.empty((R, B), dtype=compute_dtype, device=e.device)
    de = None
    if need_de:
        de = torch.zeros((B, e.shape[1]), dtype=accumulator_dtype(compute_dtype, accumulator), device=e.device)
    loss, stat = None, None
    for sl in row_chunks(B, R):
        e_rows = e_[sl]
        S = buffer[: e_rows.shape[0]]
        torch.mm(e_rows, e_.T, out=S)
        part, part_stat = rows(S, sl)
        loss = part if loss is None else loss + part
        if part_stat is not None:
            stat = part_stat if stat is None else stat + part_stat
        if need_de:
            accumulate(de[sl], S, e_, alpha=2.0 if symmetric else 1.0)  # G' = G'^T: both terms are G' E
            if not symmetric:
                accumulate(de, S.T, e_rows)
    return loss, de, stat
