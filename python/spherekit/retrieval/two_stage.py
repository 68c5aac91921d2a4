"""Two-stage retrieval ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), appendix C.1 and D.4): pooled-cosine top-K, then a verifier re-ranks.

Stage 1: ``PooledIndex.search(query_vectors, K)`` (K = 100 in the paper). Stage 2: every query's K
candidates are scored by a verifier F(q, c) from their stored token embeddings, in chunks of at most
``pair_batch_size`` (query, candidate) pairs per verifier call (``Verifier.score_candidates``, no loop
over the pairs), and sorted by that score (ties keep the stage-1 order). With a ``MaxSimVerifier`` over
a ``RaggedTokenStore`` the candidates are scored by ``spherekit.ops.maxsim_ragged`` straight from the
packed corpus (one call per query, no padding).

``evaluate(ranked_ids, qrels)`` reports the paper's two metrics, {"nDCG@10", "Acc@1"}, through
spherekit.evaluation.metrics (qrels: one dict {doc_id: gain > 0} or set of doc ids per query).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .. import ops
from ..evaluation import metrics
from ..nn import Verifier
from ..nn.verifiers import MaxSimVerifier
from ..ops.checks import check_mask
from .index import PooledIndex
from .token_store import PaddedTokenStore, RaggedTokenStore

__all__ = ["TwoStageResult", "TwoStageRetriever", "evaluate", "rerank"]


@dataclass
class TwoStageResult:
    ids: Tensor  # (Q, K) int64, best first after stage 2 (= stage1_ids without a verifier)
    scores: Tensor  # (Q, K) fp32 verifier scores in that order (stage-1 cosines without a verifier)
    stage1_ids: Tensor  # (Q, K) int64 by pooled cosine
    stage1_scores: Tensor  # (Q, K) fp32 pooled cosines


def _check_queries(q_tokens: Tensor, q_mask, n_queries: int, dim: int) -> Tensor:
    if not isinstance(q_tokens, Tensor) or q_tokens.dim() != 3:
        raise ValueError(f"query_tokens must be a (Q, m, h) tensor, got {getattr(q_tokens, 'shape', q_tokens)}")
    if q_tokens.shape[0] != n_queries:
        raise ValueError(f"query_tokens has {q_tokens.shape[0]} queries, expected {n_queries} (one per query vector)")
    if q_tokens.shape[-1] != dim:
        raise ValueError(f"query_tokens has token dimension {q_tokens.shape[-1]}, the corpus store holds {dim}")
    return check_mask("query_mask", q_mask, tuple(q_tokens.shape[:2]), q_tokens.device, zero_one=True)


@torch.no_grad()
def rerank(verifier: Verifier, q_tokens: Tensor, q_mask: Tensor | None, positions: Tensor,
           store: PaddedTokenStore | RaggedTokenStore, *, pair_batch_size: int = 2048,
           ragged_maxsim: bool | str = "auto") -> Tensor:
    """Verifier scores (Q, K) fp32 of each query's candidates (positions (Q, K) into the store).

    q_tokens (Q, m, h) live on the verifier's device; candidate tokens move there chunk by chunk.
    ragged_maxsim: "auto" uses maxsim_ragged for a MaxSimVerifier over a RaggedTokenStore.
    """
    q_mask = _check_queries(q_tokens, q_mask, positions.shape[0], store.dim)
    if pair_batch_size < 1:
        raise ValueError(f"pair_batch_size must be >= 1, got {pair_batch_size}")
    use_ragged = isinstance(verifier, MaxSimVerifier) and isinstance(store, RaggedTokenStore) \
        if ragged_maxsim == "auto" else bool(ragged_maxsim)
    if use_ragged:
        if not isinstance(store, RaggedTokenStore):
            raise ValueError("ragged_maxsim=True needs a RaggedTokenStore")
        out = []
        for i in range(positions.shape[0]):  # maxsim_ragged scores one query against packed documents
            docs, offsets = store.packed(positions[i])
            out.append(ops.maxsim_ragged(q_tokens[i], docs.to(q_tokens.device), offsets.to(q_tokens.device),
                                         q_mask=q_mask[i], normalize=True, reduction=verifier.reduction,
                                         backend=verifier.backend))
        return torch.stack(out).float()
    k = positions.shape[1]
    chunk = max(1, pair_batch_size // k)
    out = []
    for start in range(0, positions.shape[0], chunk):
        d, d_mask = store.gather(positions[start:start + chunk])
        q, qm = q_tokens[start:start + chunk], q_mask[start:start + chunk]
        d = d.to(device=q.device, dtype=q.dtype)
        out.append(verifier.score_candidates(q, qm, d, d_mask.to(q.device)).float())
    return torch.cat(out)


def order_by(scores: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
    """Sort each row by descending score; ties keep the incoming (stage-1) order."""
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    return ids.gather(1, order.to(ids.device)), scores.gather(1, order)


class TwoStageRetriever:
    """Stage-1 pooled-cosine top-K + stage-2 verifier re-ranking.

    Args:
        index: the stage-1 ``PooledIndex`` (row r = store row r).
        store: the corpus token embeddings (``PaddedTokenStore`` or ``RaggedTokenStore``).
        verifier: any F0..F4, or None (stage 1 only).
        k: candidates per query (paper: 100); must not exceed the corpus size.
        pair_batch_size: (query, candidate) pairs per verifier call.
        ragged_maxsim: see ``rerank``.
    """

    def __init__(self, index: PooledIndex, store: PaddedTokenStore | RaggedTokenStore,
                 verifier: Verifier | None = None, *, k: int = 100, pair_batch_size: int = 2048,
                 ragged_maxsim: bool | str = "auto") -> None:
        if len(store) != index.ntotal:
            raise ValueError(f"the token store holds {len(store)} documents, the index {index.ntotal}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= index.ntotal:
            raise ValueError(f"k must be an int in [1, {index.ntotal}] (the corpus size), got {k!r}")
        self.index, self.store, self.verifier, self.k = index, store, verifier, k
        self.pair_batch_size, self.ragged_maxsim = pair_batch_size, ragged_maxsim

    def search(self, query_vectors: Tensor, query_tokens: Tensor | None = None,
               query_mask: Tensor | None = None) -> TwoStageResult:
        """query_vectors (Q, d) pooled; query_tokens (Q, m, h) + mask (Q, m) when a verifier is set."""
        first = self.index.search(query_vectors, self.k)
        if self.verifier is None:
            return TwoStageResult(first.ids, first.scores, first.ids, first.scores)
        if query_tokens is None:
            raise ValueError("query_tokens are needed for stage 2 (a verifier is set)")
        was_training = self.verifier.training
        self.verifier.eval()
        try:
            scores = rerank(self.verifier, query_tokens, query_mask, first.positions, self.store,
                            pair_batch_size=self.pair_batch_size, ragged_maxsim=self.ragged_maxsim)
        finally:
            self.verifier.train(was_training)
        ids, scores = order_by(scores.cpu(), first.ids)
        return TwoStageResult(ids, scores, first.ids, first.scores)

    @classmethod
    def from_texts(cls, encoder, corpus: list[str], verifier: Verifier | None = None, *, k: int = 100,
                   ids=None, ragged: bool = False, batch_size: int = 64, index_device: str = "auto",
                   dtype: torch.dtype | None = None, pair_batch_size: int = 2048) -> TwoStageRetriever:
        """Encode a corpus with a SentenceTransformer (pooled vectors -> index, tokens -> store)."""
        from ..nn.token_encoder import encode_tokens

        enc = encode_tokens(encoder, list(corpus), batch_size=batch_size, dtype=dtype)
        if enc.pooled is None:
            raise ValueError("the encoder gives no sentence_embedding (add a Pooling module)")
        index = PooledIndex(enc.pooled.shape[1], device=index_device)
        index.add(enc.pooled, ids)
        store = RaggedTokenStore.from_padded(enc.tokens, enc.mask) if ragged else PaddedTokenStore(enc.tokens, enc.mask)
        return cls(index, store, verifier, k=k, pair_batch_size=pair_batch_size)

    def search_texts(self, encoder, queries: list[str], *, batch_size: int = 64) -> TwoStageResult:
        from ..nn.token_encoder import encode_tokens

        enc = encode_tokens(encoder, list(queries), batch_size=batch_size)
        return self.search(enc.pooled, enc.tokens.to(self.store.tokens.dtype), enc.mask)


def evaluate(ranked_ids: Tensor, qrels) -> dict[str, float]:
    """{"nDCG@10": ..., "Acc@1": ...} (means over queries) of ranked ids (Q, K) against qrels."""
    return {"nDCG@10": metrics.ndcg_at_k(ranked_ids, qrels, k=10), "Acc@1": metrics.accuracy_at_1(ranked_ids, qrels)}
