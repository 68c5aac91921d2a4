"""Exact top-k cosine search of queries (Q, d) against a candidate pool (N, d).

backend="torch": chunked matmul (chunk_size queries at a time, so memory is chunk_size x N) + topk.
backend="faiss": faiss.IndexFlatIP on L2-normalised float32 rows (exact inner-product search).
backend="auto": faiss when it is installed, the tensors are on the CPU and Q * N >= faiss_min_work
(large pools), else torch. Both return identical rankings up to ties and float rounding.
"""

from __future__ import annotations

import torch
from torch import Tensor

FAISS_MIN_WORK = 50_000_000  # Q * N above which "auto" hands CPU search to faiss


def _faiss_available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def _check(name: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        x = torch.as_tensor(x)
    if x.dim() != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D tensor (rows, d), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a float tensor, got {x.dtype}")
    return x.detach()


def topk_cosine(queries, docs, k: int, *, backend: str = "auto", chunk_size: int = 1024,
                faiss_min_work: int = FAISS_MIN_WORK) -> tuple[Tensor, Tensor]:
    """-> (scores float32 (Q, k'), ids int64 (Q, k')), k' = min(k, N), best first (cosine similarity)."""
    q, d = _check("queries", queries), _check("docs", docs)
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"queries and docs must have the same dimension, got {q.shape[1]} and {d.shape[1]}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if backend not in ("auto", "torch", "faiss"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'faiss', got {backend!r}")
    k = min(k, d.shape[0])
    if backend == "auto":
        big = q.shape[0] * d.shape[0] >= faiss_min_work
        backend = "faiss" if big and q.device.type == "cpu" and _faiss_available() else "torch"
    qn = torch.nn.functional.normalize(q.float(), dim=1)
    dn = torch.nn.functional.normalize(d.float().to(q.device), dim=1)
    if backend == "faiss":
        import faiss

        index = faiss.IndexFlatIP(dn.shape[1])
        index.add(dn.cpu().contiguous().numpy())
        scores, ids = index.search(qn.cpu().contiguous().numpy(), k)
        return torch.from_numpy(scores), torch.from_numpy(ids).long()
    out_s, out_i = [], []
    for s in range(0, qn.shape[0], chunk_size):
        sim = qn[s : s + chunk_size] @ dn.T
        top = torch.topk(sim, k, dim=1)
        out_s.append(top.values.cpu())
        out_i.append(top.indices.cpu())
    return torch.cat(out_s), torch.cat(out_i)


def rank_of_targets(queries, docs, targets: Tensor, *, chunk_size: int = 1024) -> Tensor:
    """1-based rank of docs[targets[i]] for query i among all N docs (ties counted pessimistically:
    rank = 1 + #docs scoring strictly higher + #other docs scoring equal). Chunked matmul."""
    q, d = _check("queries", queries), _check("docs", docs)
    targets = torch.as_tensor(targets, dtype=torch.long)
    if targets.shape != (q.shape[0],):
        raise ValueError(f"targets must have shape ({q.shape[0]},), got {tuple(targets.shape)}")
    qn = torch.nn.functional.normalize(q.float(), dim=1)
    dn = torch.nn.functional.normalize(d.float(), dim=1)
    ranks = []
    for s in range(0, qn.shape[0], chunk_size):
        sim = qn[s : s + chunk_size] @ dn.T
        t = targets[s : s + chunk_size]
        own = sim.gather(1, t[:, None])
        ranks.append((sim >= own).sum(1))
    return torch.cat(ranks)
