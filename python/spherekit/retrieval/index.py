"""Stage 1 of two-stage retrieval ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), appendix C.1): exact inner-product search over pooled unit keys.

``PooledIndex`` wraps a faiss ``IndexFlatIP`` (exact search, so it is the paper's "ANN" with recall 1):
vectors are L2-normalised on the way in (``normalize=True``), so inner product = cosine. On a machine
whose faiss has GPU support (``faiss.get_num_gpus() > 0``, e.g. the faiss-gpu wheel) ``device="auto"``
puts the index on GPU 0; faiss-cpu (this project's machines) searches on the CPU. ``exact_search`` is
the same search in torch (the test oracle, and usable without faiss).

Ids: ``add(vectors, ids=None)`` numbers rows 0, 1, ... in insertion order unless ids (int64, unique) are
given; ``search`` returns the ids, best first, and ``positions`` (row numbers in insertion order) for
looking up per-document data such as stored token embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

DEVICES = ("auto", "cpu", "gpu")


def faiss_gpu_available() -> bool:
    """True when the installed faiss was built with GPU support and sees a GPU (never raises)."""
    try:
        import faiss
    except ImportError:
        return False
    try:
        return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    except Exception:  # noqa: BLE001 - a broken GPU runtime means no GPU index
        return False


def _as_matrix(name: str, x, dim: int | None) -> Tensor:
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D (rows, dim), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be floating point, got dtype {x.dtype}")
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} has dimension {x.shape[1]}, the index holds dimension {dim}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or Inf")
    return x


def _check_k(k, total: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if k > total:
        raise ValueError(f"k={k} exceeds the number of indexed documents ({total}); pass k <= {total} "
                         f"(e.g. k=min(k, index.ntotal))")
    return k


def exact_search(queries: Tensor, corpus: Tensor, k: int, *, normalize: bool = True) -> tuple[Tensor, Tensor]:
    """Torch top-k inner-product search: (Q, d) x (N, d) -> scores (Q, k) fp32, positions (Q, k) int64."""
    corpus = _as_matrix("corpus", corpus, None)
    queries = _as_matrix("queries", queries, corpus.shape[1])
    k = _check_k(k, corpus.shape[0])
    q, c = queries.float(), corpus.float().to(queries.device)
    if normalize:
        q, c = F.normalize(q, dim=-1), F.normalize(c, dim=-1)
    return torch.topk(q @ c.T, k, dim=1)


@dataclass
class SearchResult:
    scores: Tensor  # (Q, k) fp32 cosine, best first
    ids: Tensor  # (Q, k) int64 document ids
    positions: Tensor  # (Q, k) int64 row numbers in insertion order


class PooledIndex:
    """Exact cosine search over pooled sentence vectors (faiss IndexFlatIP).

    Args:
        dim: vector dimension.
        device: "auto" (GPU when faiss has GPU support, else CPU), "cpu" or "gpu" (error without support).
        normalize: L2-normalise vectors and queries (cosine); False searches raw inner products.
    """

    def __init__(self, dim: int, *, device: str = "auto", normalize: bool = True) -> None:
        import faiss

        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be an int >= 1, got {dim!r}")
        if device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
        gpu = faiss_gpu_available()
        if device == "gpu" and not gpu:
            raise RuntimeError("device='gpu' needs faiss with GPU support (faiss-gpu) and a visible GPU")
        self.dim, self.normalize = dim, normalize
        self.on_gpu = gpu and device != "cpu"
        index = faiss.IndexFlatIP(dim)
        if self.on_gpu:
            self._resources = faiss.StandardGpuResources()
            index = faiss.index_cpu_to_gpu(self._resources, 0, index)
        self._index = index
        self._ids = torch.empty(0, dtype=torch.int64)

    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    @property
    def ids(self) -> Tensor:
        """(ntotal,) int64: the id of each row, in insertion order."""
        return self._ids

    def _prep(self, x: Tensor) -> np.ndarray:
        x = x.detach().float().cpu()
        if self.normalize:
            x = F.normalize(x, dim=-1)
        return np.ascontiguousarray(x.numpy(), dtype=np.float32)

    def add(self, vectors, ids=None) -> None:
        """Append (N, dim) vectors; ids (N,) int64 unique (default: continue 0, 1, 2, ...)."""
        vectors = _as_matrix("vectors", vectors, self.dim)
        n = vectors.shape[0]
        if ids is None:
            ids = torch.arange(self.ntotal, self.ntotal + n, dtype=torch.int64)
        else:
            ids = torch.as_tensor(ids).cpu()
            if ids.dtype not in (torch.int64, torch.int32) or ids.shape != (n,):
                raise ValueError(f"ids must be an integer tensor of shape ({n},), got dtype {ids.dtype} "
                                 f"shape {tuple(ids.shape)}")
            ids = ids.long()
        merged = torch.cat([self._ids, ids])
        if merged.unique().numel() != merged.numel():
            raise ValueError("ids must be unique (also across add calls)")
        self._index.add(self._prep(vectors))
        self._ids = merged

    def search(self, queries, k: int) -> SearchResult:
        """Top-k rows by cosine (inner product): queries (Q, dim) -> SearchResult of (Q, k) tensors."""
        queries = _as_matrix("queries", queries, self.dim)
        k = _check_k(k, self.ntotal)
        scores, pos = self._index.search(self._prep(queries), k)
        pos_t = torch.from_numpy(pos).long()
        return SearchResult(torch.from_numpy(scores).float(), self._ids[pos_t], pos_t)
