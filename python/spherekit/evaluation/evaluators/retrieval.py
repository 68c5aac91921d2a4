"""Generic dense retrieval evaluation: cosine top-k of queries over a pool -> R@k, MRR, nDCG@k, Acc@1.

MRR is over the full ranking: the reciprocal of 1 + the number of pool items scoring strictly above
the best-scoring relevant item (exact, chunked). R@k, nDCG@k and Acc@1 use the top-k lists
(spherekit.evaluation.metrics).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import metrics as M
from ..encode import encode
from ..search import topk_cosine
from ._base import SpherekitEvaluator


def first_relevant_rank(q: Tensor, d: Tensor, relevant, *, chunk_size: int = 1024) -> Tensor:
    """1-based rank (Q,) of the best relevant pool item for each query (ties with non-relevant items optimistic)."""
    qn = torch.nn.functional.normalize(q.float(), dim=1)
    dn = torch.nn.functional.normalize(d.float(), dim=1)
    q_idx, d_idx = [], []
    for i, rel in enumerate(relevant):
        ids = list(rel.keys() if isinstance(rel, dict) else rel)
        if not ids:
            raise ValueError(f"relevant[{i}] is empty; every query needs at least one relevant item")
        q_idx += [i] * len(ids)
        d_idx += [int(x) for x in ids]
    q_idx_t, d_idx_t = torch.tensor(q_idx), torch.tensor(d_idx)
    if int(d_idx_t.min()) < 0 or int(d_idx_t.max()) >= d.shape[0]:
        raise ValueError(f"relevant ids must lie in [0, {d.shape[0]}) (the pool), got [{int(d_idx_t.min())}, {int(d_idx_t.max())}]")
    ranks = []
    for s in range(0, qn.shape[0], chunk_size):
        sim = qn[s : s + chunk_size] @ dn.T
        sel = (q_idx_t >= s) & (q_idx_t < s + sim.shape[0])
        rows, cols = q_idx_t[sel] - s, d_idx_t[sel]
        best = torch.full((sim.shape[0],), -float("inf")).scatter_reduce(0, rows, sim[rows, cols], reduce="amax")
        ranks.append(1 + (sim > best[:, None]).sum(1))
    return torch.cat(ranks)


def retrieval_scores(q: Tensor, d: Tensor, relevant, *, ks=(1, 10), ndcg_k: int | None = 10,
                     acc1: bool = False, search_backend: str = "auto") -> dict[str, Tensor]:
    """Per-query float64 values: {'R@k': ..., 'MRR': ..., 'nDCG@10': ..., 'Acc@1': ...} (acc1/ndcg optional)."""
    depth = max(list(ks) + ([ndcg_k] if ndcg_k else []) + [1])
    _, ranked = topk_cosine(q, d, depth, backend=search_backend)
    out = {f"R@{k}": M.recall_at_k(ranked, relevant, k, reduction="none") for k in ks}
    out["MRR"] = 1.0 / first_relevant_rank(q, d, relevant).double()
    if ndcg_k:
        out[f"nDCG@{ndcg_k}"] = M.ndcg_at_k(ranked, relevant, ndcg_k, reduction="none")
    if acc1:
        out["Acc@1"] = M.accuracy_at_1(ranked, relevant, reduction="none")
    return out


def _named(values: dict[str, Tensor], label: str) -> dict[str, float]:
    suffix = f" ({label})" if label else ""
    return {f"{k}{suffix}": float(v.mean()) for k, v in values.items()}


class RetrievalEvaluator(SpherekitEvaluator):
    """Queries against a candidate pool, scored by cosine similarity of the model's embeddings.

    Args:
        queries: query texts.
        corpus: candidate texts (the pool).
        relevant: per query, a set of corpus indices or a dict {corpus index: gain > 0}.
        ks: cut-offs of R@k.  ndcg_k: nDCG cut-off (None: no nDCG).  acc1: also report Acc@1.
        label: words appended to each metric name, e.g. "term to definition".
    """

    def __init__(self, queries, corpus, relevant, *, ks=(1, 10), ndcg_k: int | None = 10, acc1: bool = True,
                 label: str = "", name: str = "retrieval", batch_size: int = 64, show_progress: bool = False,
                 search_backend: str = "auto"):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        if len(relevant) != len(queries):
            raise ValueError(f"relevant must have one entry per query: expected {len(queries)}, got {len(relevant)}")
        if not queries or not corpus:
            raise ValueError(f"queries and corpus must be non-empty, got {len(queries)} and {len(corpus)}")
        self.queries, self.corpus, self.relevant = list(queries), list(corpus), list(relevant)
        self.ks, self.ndcg_k, self.acc1, self.label = tuple(ks), ndcg_k, acc1, label
        self.search_backend = search_backend
        self.primary_metric = f"MRR ({label})" if label else "MRR"

    @classmethod
    def from_data(cls, data, **kwargs):
        """From any loaded dataset with retrieval_inputs() -> (queries, corpus, relevant): BeirData
        (spherekit.data.datasets.beir; nDCG@10 and Acc@1 as in "Training for Compositional Sensitivity Reduces
        Dense Retrieval Generalization", arXiv:2604.16351) or DBpediaGap (R@10 and MRR as in "Principles of Concept
        Representation in Sentence Encoders", arXiv:2606.06994)."""
        queries, corpus, relevant = data.retrieval_inputs()
        kwargs.setdefault("label", getattr(data, "name", ""))
        return cls(queries, corpus, relevant, **kwargs)

    def get_config_dict(self):
        return {"ks": list(self.ks), "ndcg_k": self.ndcg_k, "n_queries": len(self.queries), "n_corpus": len(self.corpus)}

    def compute_metrics(self, model) -> dict[str, float]:
        q = encode(model, self.queries, batch_size=self.batch_size, show_progress=self.show_progress)
        d = encode(model, self.corpus, batch_size=self.batch_size, show_progress=self.show_progress)
        values = retrieval_scores(q, d, self.relevant, ks=self.ks, ndcg_k=self.ndcg_k, acc1=self.acc1,
                                  search_backend=self.search_backend)
        self.last_details = {"per_query": values}
        return _named(values, self.label)
