"""maxsim_ragged: MaxSim scoring of one query against documents packed without padding (reranking), no
autograd. The math is in spherekit.reference.sim_map.maxsim_ragged; the defaults are maxsim's (ColBERT / PyLate's
sum of raw similarities).

Backends: "cuda" (csrc/cuda/maxsim.cu through spherekit.ops._maxsim_cuda, normalising inside the kernel),
"cpu" (chunked torch on any device: fixed-size chunks of packed tokens, each token's document found by a
searchsorted over the offsets, the per-document max by a scatter_reduce, so no offset is read on the host and no
normalised copy of `docs` is ever made), "reference". "auto" picks cuda on CUDA tensors when spherekit._cuda has the
kernel, else cpu.
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


def _scores(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, normalize: bool, mean: bool,
            backend: str) -> Tensor:
    """-> (N,) fp32 (fp64 for fp64 tokens). q (m, h), q_mask (m,) bool or None, docs (T, h), offsets (N + 1,) int64."""
    if backend == "cuda":
        from . import _maxsim_cuda

        scores = _maxsim_cuda.maxsim_ragged(q, q_mask, docs, offsets, normalize=normalize, validate=False)
        if not mean:  # the kernel takes the mean over the valid query tokens
            scores = scores * (q.shape[0] if q_mask is None else q_mask.sum().to(scores.dtype))
    else:
        scores = _cpu(q, q_mask, docs, offsets, normalize, mean)
    return _nan_for_bad_offsets(scores, offsets, docs.shape[0])


@torch.library.custom_op("spherekit::maxsim_ragged", mutates_args=())
def _maxsim_ragged(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, normalize: bool, mean: bool,
                   backend: str) -> Tensor:
    return _scores(q, q_mask, docs, offsets, normalize, mean, backend)


@_maxsim_ragged.register_fake
def _(q, q_mask, docs, offsets, normalize, mean, backend):
    return q.new_empty(offsets.shape[0] - 1, dtype=T.score_dtype(q))


def _nan_for_bad_offsets(scores: Tensor, offsets: Tensor, total: int) -> Tensor:
    """Every score NaN when the offsets step backwards or leave [0, T] (checked on the device: in the "fast" mode
    bad offsets give NaN, never finite scores of documents that do not exist)."""
    bad = (offsets.diff() < 0).any() | (offsets[0] < 0) | (offsets[-1] > total)
    return torch.where(bad, torch.full_like(scores, float("nan")), scores)


def _cpu(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, normalize: bool, mean: bool) -> Tensor:
    """Fixed chunks of about cpu_budget.CHUNK_ELEMENTS entries of S = dn qn^T (tokens, m); token t belongs to document
    searchsorted(offsets, t, right=True) - 1 (rows outside [0, N) are dropped), the per-document max is a scatter
    amax (NaN propagates); an empty document scores 0; then the sum (or mean) over the valid query tokens."""
    dt = T.score_dtype(q)
    m, total = q.shape[0], docs.shape[0]
    n_docs = offsets.shape[0] - 1
    qn = q.to(dt)
    if normalize:
        qn = F.normalize(qn, dim=-1, eps=T.NORM_EPS)
    best = torch.full((n_docs + 2, m), float("-inf"), dtype=dt, device=q.device)  # + a row before and after
    per_chunk = max(1, cpu_budget.CHUNK_ELEMENTS // m)
    for t0 in range(0, total, per_chunk):
        chunk = docs[t0:t0 + per_chunk].to(dt)
        if normalize:
            chunk = F.normalize(chunk, dim=-1, eps=T.NORM_EPS)
        rows = torch.searchsorted(offsets, torch.arange(t0, t0 + chunk.shape[0], device=q.device), right=True)
        best.scatter_reduce_(0, rows[:, None].expand(-1, m), chunk @ qn.T, reduce="amax")
    best = best[1:n_docs + 1].masked_fill((offsets.diff() <= 0)[:, None], 0.0)  # empty documents: 0
    if q_mask is None:
        return best.sum(-1) / m if mean else best.sum(-1)
    qm = q_mask.to(dt)
    scores = best @ qm
    if not mean:
        return scores
    count = qm.sum()
    return torch.where(count > 0, scores / count.clamp_min(1.0), torch.zeros_like(scores))


def _has_kernel() -> bool:
    return hasattr(_backend.cuda_extension(), "maxsim_ragged")


@torch.compiler.assume_constant_result  # a constant of the graph under torch.compile, as spherekit._backend.resolve
def _resolve(backend: str, device: torch.device, dtype: torch.dtype) -> str:
    """auto: cuda when spherekit._cuda has the kernel (CUDA tensors, not float64), else cpu. An explicit cuda refuses
    float64 tokens, naming q."""
    if _backend.requested(backend) == "auto":
        usable = device.type == "cuda" and dtype != torch.float64 and _backend.usable("cuda", device)[0]
        return "cuda" if usable and _has_kernel() else "cpu"
    chosen = _backend.resolve("maxsim_ragged", backend, device, SUPPORTED)
    if chosen == "cuda" and not _has_kernel():
        raise RuntimeError("maxsim_ragged: backend 'cuda' cannot run here: spherekit._cuda has no maxsim_ragged")
    if dtype == torch.float64:
        C.refuse_float64(chosen, "q", "tokens")
    return chosen


def _check_offset_values(offsets: Tensor, total: int) -> None:
    """The offsets' values ("full" check mode only: reads them on the host)."""
    first, last = int(offsets[0]), int(offsets[-1])
    if first != 0 or last != total:
        raise ValueError(f"offsets must start at 0 and end at the number of packed tokens T={total}, "
                         f"got offsets[0]={first}, offsets[-1]={last}")
    steps = offsets.diff()
    if bool((steps <= 0).any()):
        k = int(torch.nonzero(steps <= 0)[0])
        raise ValueError(f"offsets must be strictly increasing: document {k} has no valid token "
                         f"(offsets[{k}]={int(offsets[k])}, offsets[{k + 1}]={int(offsets[k + 1])})")


def _validate(q, docs, offsets, q_mask):
    C.check_tokens("q", q, (2,))
    C.check_tokens("docs", docs, (2,), like=q)
    q_mask = T.check_token_mask("q_mask", q_mask, (q.shape[0],), q.device, "query")
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
    if C.full_checks():
        _check_offset_values(offsets, docs.shape[0])
    C.check_finite(q=q, docs=docs)
    return q_mask


@T.autocast_tokens
def maxsim_ragged(q: Tensor, docs: Tensor, offsets: Tensor, *positional_mask, q_mask: Tensor | None = None,
                  normalize: bool = False, reduction: str = "sum", backend: str = "auto") -> Tensor:
    r"""MaxSim of one query against N documents packed without padding (reranking; no autograd), as
    spherekit.ops.maxsim computes it for padded documents (same defaults: ColBERT / PyLate's sum):

        score_k = c sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <q_i, d_t>,   c = 1 ("sum") or 1/|Q| ("mean")

    Args:
        q: (m, h) query tokens, float32 / float16 / bfloat16 (float64 on cpu/reference: "auto"
            picks cpu for it).
        docs: (T, h) the documents' tokens back to back, same dtype as q.
        offsets: (N + 1,) int64, offsets[0] = 0, offsets[N] = T, strictly increasing: document k is
            docs[offsets[k]:offsets[k + 1]].
        q_mask: keyword, (m,) bool (or 0/1), True = valid token; None: all valid. (Positional before 0.1.0:
            maxsim_ragged(q, q_mask, docs, offsets) raises a TypeError naming this form.)
        normalize: L2-normalise the tokens (Norm(x) = x / max(||x||, 1e-6)), done on the fly; default False.
        reduction: "sum" over the valid query tokens (default) or "mean".
        backend: "auto" | "cuda" | "cpu" | "reference".

    Returns (N,) fp32 scores (fp64 for fp64 tokens; float32 / float16 / bfloat16 tokens are cast to autocast's dtype
    under torch.autocast), detached: this entry point computes no gradient (use spherekit.ops.maxsim on padded
    tokens for training).

    Edge cases without spherekit.checks("full") (which raises instead, reading the offsets and values on the host):
    an empty document (offsets[k] == offsets[k + 1]) scores 0 and a query without valid tokens scores 0, as in
    maxsim; offsets that step backwards or leave [0, T] make every score NaN; a NaN in a token gives NaN scores.
    """
    if positional_mask or docs is None or (isinstance(docs, Tensor) and docs.dtype == torch.bool):
        raise TypeError("maxsim_ragged takes the query mask as a keyword: maxsim_ragged(q, docs, offsets, "
                        "q_mask=q_mask); the positional form maxsim_ragged(q, q_mask, docs, offsets) was removed in "
                        "spherekit 0.1.0")
    q_mask = _validate(q, docs, offsets, q_mask)
    C.check_flag("normalize", normalize)
    C.check_choice("reduction", reduction, REDUCTIONS)
    chosen = _resolve(backend, q.device, q.dtype)
    q, docs = q.detach(), docs.detach()
    if chosen == "reference":
        with torch.no_grad():
            return ref.maxsim_ragged(q, q_mask, docs, offsets, normalize=normalize, reduction=reduction,
                                     compute_dtype=T.score_dtype(q))
    args = (q.contiguous(), None if q_mask is None else q_mask.contiguous(), docs.contiguous(), offsets.contiguous(),
            normalize, reduction == "mean")
    if T.direct_call(q, docs, offsets):
        return _scores(*args, chosen)  # the custom op's body without its dispatch (there is no autograd either way)
    return torch.ops.spherekit.maxsim_ragged(*args, chosen)
