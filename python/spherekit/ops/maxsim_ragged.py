"""maxsim_ragged: MaxSim scoring of one query against documents packed without padding (reranking), no
autograd. The math is in spherekit.reference.sim_map.maxsim_ragged.

Backends: "cuda" (csrc/cuda/maxsim.cu through spherekit.ops._maxsim_cuda, normalising inside the kernel),
"cpu" (chunked torch on any device: documents are normalised chunk by chunk, so no normalised copy of
`docs` is ever made), "reference". "auto" picks cuda on CUDA tensors when spherekit._cuda has the kernel, else cpu.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import _backend
from ..reference import sim_map as ref
from . import cpu_budget
from . import checks as C
from . import tokens as T
from .maxsim import REDUCTIONS

SUPPORTED = ("cuda", "cpu", "reference")


@torch.library.custom_op("spherekit::maxsim_ragged", mutates_args=())
def _maxsim_ragged(q: Tensor, q_mask: Tensor, docs: Tensor, offsets: Tensor, normalize: bool, backend: str) -> Tensor:
    """-> (N,) fp32 (fp64 for fp64 tokens). q (m, h), q_mask (m,) bool, docs (T, h), offsets (N + 1,) int64."""
    if backend == "cuda":
        from . import _maxsim_cuda

        return _maxsim_cuda.maxsim_ragged(q, q_mask, docs, offsets, normalize=normalize, validate=False)
    return _cpu(q, q_mask, docs, offsets, normalize)


@_maxsim_ragged.register_fake
def _(q, q_mask, docs, offsets, normalize, backend):
    return q.new_empty(offsets.shape[0] - 1, dtype=T.score_dtype(q))


def _cpu(q: Tensor, q_mask: Tensor, docs: Tensor, offsets: Tensor, normalize: bool) -> Tensor:
    """Chunks of whole documents, about cpu_budget.CHUNK_ELEMENTS entries of S = dn qn^T (tokens, m) each;
    per document the max over its token segment (torch.segment_reduce), then the mean over valid query tokens."""
    dt = T.score_dtype(q)
    m = q.shape[0]
    qn = q.to(dt)
    if normalize:
        qn = F.normalize(qn, dim=-1, eps=T.NORM_EPS)
    qm = q_mask.to(dt)
    bounds = offsets.tolist()
    lengths = offsets.diff()
    n_docs = len(bounds) - 1
    out = torch.empty(n_docs, dtype=dt, device=q.device)
    per_chunk = max(1, cpu_budget.CHUNK_ELEMENTS // m)
    k0 = 0
    while k0 < n_docs:
        k1 = k0 + 1  # at least one document; then as many as fit
        while k1 < n_docs and bounds[k1 + 1] - bounds[k0] <= per_chunk:
            k1 += 1
        chunk = docs[bounds[k0]:bounds[k1]].to(dt)
        if normalize:
            chunk = F.normalize(chunk, dim=-1, eps=T.NORM_EPS)
        sims = chunk @ qn.T  # (tokens, m)
        best = torch.segment_reduce(sims, "max", lengths=lengths[k0:k1], axis=0, unsafe=True)  # (docs, m)
        out[k0:k1] = (best @ qm) / qm.sum()
        k0 = k1
    return out


def _has_kernel() -> bool:
    return hasattr(_backend.cuda_extension(), "maxsim_ragged")


def _resolve(backend: str, device: torch.device) -> str:
    """auto: cuda when spherekit._cuda has the kernel (CUDA tensors), else cpu."""
    if _backend.requested(backend) == "auto":
        return "cuda" if device.type == "cuda" and _backend.usable("cuda", device)[0] and _has_kernel() else "cpu"
    chosen = _backend.resolve("maxsim_ragged", backend, device, SUPPORTED)
    if chosen == "cuda" and not _has_kernel():
        raise RuntimeError("maxsim_ragged: backend 'cuda' cannot run here: spherekit._cuda has no maxsim_ragged")
    return chosen


def _validate(q, q_mask, docs, offsets):
    C.check_tokens("q", q, (2,))
    C.check_tokens("docs", docs, (2,), like=q)
    q_mask = C.check_mask("q_mask", q_mask, (q.shape[0],), q.device, what="query", like_name="q", zero_one=True)
    if not isinstance(offsets, Tensor):
        raise TypeError(f"offsets must be a torch.Tensor, got {type(offsets).__name__}")
    if offsets.dtype != torch.int64 or offsets.dim() != 1:
        raise TypeError(f"offsets must be a 1-D int64 tensor (N + 1,), got dtype {offsets.dtype} shape "
                        f"{tuple(offsets.shape)}")
    if offsets.device != q.device:
        raise ValueError(f"offsets must be on the device of q ({q.device}), got {offsets.device}")
    if offsets.shape[0] < 2:
        raise ValueError(f"offsets must hold N + 1 >= 2 entries (at least one document), got shape "
                         f"{tuple(offsets.shape)}")
    first, last = int(offsets[0]), int(offsets[-1])
    if first != 0 or last != docs.shape[0]:
        raise ValueError(f"offsets must start at 0 and end at the number of packed tokens T={docs.shape[0]}, "
                         f"got offsets[0]={first}, offsets[-1]={last}")
    steps = offsets.diff()
    if bool((steps <= 0).any()):
        k = int(torch.nonzero(steps <= 0)[0])
        raise ValueError(f"offsets must be strictly increasing: document {k} has no valid token "
                         f"(offsets[{k}]={int(offsets[k])}, offsets[{k + 1}]={int(offsets[k + 1])})")
    C.check_finite(q=q, docs=docs)
    return q_mask


def maxsim_ragged(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, *, normalize: bool = True,
                  reduction: str = "mean", backend: str = "auto") -> Tensor:
    r"""MaxSim of one query against N documents packed without padding (reranking; no autograd):

        score_k = (1/|Q|) sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <qn_i, dn_t>   (reduction="mean")

    or the sum over i in Q (reduction="sum": ColBERT / PyLate scores; see spherekit.ops.maxsim).

    Args:
        q: (m, h) query tokens, float32 / float16 / bfloat16 (float64 on cpu/reference).
        q_mask: (m,) bool, True = valid token, or None (all valid); at least one valid token.
        docs: (T, h) the documents' tokens back to back, same dtype as q.
        offsets: (N + 1,) int64, offsets[0] = 0, offsets[N] = T, strictly increasing (no empty document):
            document k is docs[offsets[k]:offsets[k + 1]].
        normalize: L2-normalise the tokens (Norm(x) = x / max(||x||, 1e-6)), done on the fly.
        reduction: "mean" over the valid query tokens (the default) or "sum" (ColBERT / PyLate).
        backend: "auto" | "cuda" | "cpu" | "reference".

    Returns (N,) fp32 scores (fp64 for fp64 tokens), detached: this entry point computes no gradient
    (use spherekit.ops.maxsim on padded tokens for training).
    """
    q_mask = _validate(q, q_mask, docs, offsets)
    C.check_flag("normalize", normalize)
    C.check_choice("reduction", reduction, REDUCTIONS)
    chosen = _resolve(backend, q.device)
    q, docs = q.detach(), docs.detach()
    if chosen == "reference":
        with torch.no_grad():
            scores = ref.maxsim_ragged(q, q_mask, docs, offsets, normalize=normalize, compute_dtype=T.score_dtype(q))
    else:
        if q.dtype == torch.float64:
            C.refuse_float64(chosen, "q", "tokens")
        scores = torch.ops.spherekit.maxsim_ragged(q.contiguous(), q_mask.contiguous(), docs.contiguous(),
                                                   offsets.contiguous(), normalize, chosen)
    return scores * q_mask.sum().to(scores.dtype) if reduction == "sum" else scores
