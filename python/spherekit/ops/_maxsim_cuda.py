"""CUDA launcher of ragged MaxSim scoring (csrc/cuda/maxsim.cu, spherekit._cuda.maxsim_ragged).

One query q (m, h) against N documents packed without padding: document k is docs[offsets[k]:offsets[k+1]].

    score_k = (1/|Q|) sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <qn_i, dn_t>      (N,) fp32

qn, dn = Norm(q), Norm(d) with Norm(x) = x / max(||x||, eps) computed INSIDE the kernel when normalize
(no normalised copy of docs is written), else the raw inner product. fp32 / fp16 / bf16 storage, fp32
math; no autograd (a scoring entry point for reranking). An empty document scores 0, a query without valid
tokens scores 0; the max propagates NaN (a NaN similarity gives a NaN score). This launcher
validates, allocates the output on the device and launches on torch's current stream.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend
from ._dtype_codes import DTYPE_CODES, dtype_code
from .checks import full_checks


def _check(q, q_mask, docs, offsets) -> None:
    for name, x, ndim in (("q", q, 2), ("docs", docs, 2), ("offsets", offsets, 1)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != ndim:
            raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if q.dtype not in DTYPE_CODES:
        raise TypeError(f"q must have dtype in {[str(d) for d in DTYPE_CODES]}, got {q.dtype}")
    if docs.dtype != q.dtype:
        raise TypeError(f"docs must have the dtype of q ({q.dtype}), got {docs.dtype}")
    if docs.shape[1] != q.shape[1]:
        raise ValueError(f"docs.shape[1] must equal the hidden size h of q ({q.shape[1]}), "
                         f"got shape {tuple(docs.shape)}")
    if q.shape[0] < 1 or q.shape[1] < 1:
        raise ValueError(f"q is empty (shape {tuple(q.shape)})")
    if offsets.dtype != torch.int64:
        raise TypeError(f"offsets must have dtype torch.int64, got {offsets.dtype}")
    if offsets.shape[0] < 1:
        raise ValueError("offsets must have N + 1 >= 1 entries, got shape (0,)")
    if q.device.type != "cuda":
        raise ValueError(f"q must be a CUDA tensor for the cuda backend, got device {q.device}")
    for name, x in (("docs", docs), ("offsets", offsets)):
        if x.device != q.device:
            raise ValueError(f"{name} must be on the device of q ({q.device}), got {x.device}")
    if q_mask is not None:
        if not isinstance(q_mask, Tensor) or q_mask.dtype != torch.bool:
            raise TypeError(f"q_mask must be a bool torch.Tensor or None, got {getattr(q_mask, 'dtype', type(q_mask))}")
        if tuple(q_mask.shape) != (q.shape[0],):
            raise ValueError(f"q_mask must have shape ({q.shape[0]},), got {tuple(q_mask.shape)}")
        if q_mask.device != q.device:
            raise ValueError(f"q_mask must be on the device of q ({q.device}), got {q_mask.device}")


def _rows(x: Tensor) -> tuple[Tensor, int]:
    """x with unit stride over h and non-overlapping rows, and its row stride."""
    if x.stride(1) != 1 or (x.shape[0] > 1 and x.stride(0) < x.shape[1]):
        x = x.contiguous()
    return x, (x.stride(0) if x.shape[0] > 1 else x.shape[1])


def check_offsets(offsets: Tensor, total: int) -> None:
    """offsets non-decreasing within [0, total] (one device -> host copy of N + 1 integers)."""
    o = offsets.cpu()
    lo, hi = int(o.min()), int(o.max())
    if lo < 0 or hi > total:
        raise ValueError(f"offsets must lie in [0, {total}] (docs.shape[0]), got values in [{lo}, {hi}]")
    if o.numel() > 1 and bool((o[1:] < o[:-1]).any()):
        k = int(torch.nonzero(o[1:] < o[:-1])[0, 0])
        raise ValueError(f"offsets must be non-decreasing, got offsets[{k}]={int(o[k])} > "
                         f"offsets[{k + 1}]={int(o[k + 1])}")


def maxsim_ragged(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, *, normalize: bool = True,
                  eps: float = 1e-6, validate: bool | None = None) -> Tensor:
    """-> (N,) fp32 scores on q's device (see the module docstring). validate: check the offsets' values (a device
    -> host copy); None (the default) does so only in the "full" check mode (spherekit.checks("full")). The kernel
    clamps offsets to [0, T] either way (a range that steps backwards is an empty document)."""
    _check(q, q_mask, docs, offsets)
    if not isinstance(normalize, bool):
        raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
    if normalize and not float(eps) > 0.0:
        raise ValueError(f"eps must be > 0, got {eps}")
    T = docs.shape[0]
    if full_checks() if validate is None else validate:
        check_offsets(offsets, T)
    n_docs = offsets.shape[0] - 1
    scores = torch.zeros(n_docs, dtype=torch.float32, device=q.device)
    if n_docs == 0 or T == 0:  # nothing to read: every document is empty and scores 0
        return scores
    ext = _backend.cuda_extension()
    if ext is None or not hasattr(ext, "maxsim_ragged"):
        raise RuntimeError("maxsim_ragged: spherekit._cuda is not built with maxsim_ragged (SPHEREKIT_WITH_CUDA=ON)")
    q, stride_q = _rows(q)
    docs, stride_docs = _rows(docs)
    offsets = offsets.contiguous()
    mask = q_mask.contiguous().view(torch.uint8) if q_mask is not None else None
    with torch.cuda.device(q.device):
        stream = torch.cuda.current_stream(q.device).cuda_stream
        ext.maxsim_ragged(scores.data_ptr(), q.data_ptr(), stride_q, 0 if mask is None else mask.data_ptr(),
                          docs.data_ptr(), stride_docs, offsets.data_ptr(), q.shape[0], q.shape[1], n_docs, T,
                          dtype_code(q.dtype), normalize, float(eps), stream)
    return scores
