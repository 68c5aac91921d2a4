"""MultipleNegativesRankingLoss: sentence-transformers' class, computed by the fused spherekit.ops.info_nce."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import torch
from torch import Tensor

from sentence_transformers import util
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as _STLoss
from sentence_transformers.util.similarity import SimilarityFunction

from ..ops import info_nce
from ._common import gather_rows, normalize, zero_loss

_Q2D, _Q2Q, _D2Q, _D2D = "query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"


def similarity_kind(similarity_fct: Callable) -> str | None:
    """"cos" for cos_sim, "dot" for dot_score (also through model.similarity), else None."""
    owner = getattr(similarity_fct, "__self__", None)
    if getattr(similarity_fct, "__name__", None) == "similarity" and hasattr(owner, "similarity_fn_name"):
        similarity_fct = SimilarityFunction.to_similarity_fn(owner.similarity_fn_name)
    if similarity_fct is util.cos_sim or similarity_fct is util.pytorch_cos_sim:
        return "cos"
    if similarity_fct is util.dot_score:
        return "dot"
    return None


def _pad(x: Tensor, left: bool) -> Tensor:
    """(n, d) -> (n, 2d) with x in the left or the right half and zeros in the other."""
    zeros = torch.zeros_like(x)
    return torch.cat([x, zeros] if left else [zeros, x], dim=1)


class MultipleNegativesRankingLoss(_STLoss):
    def __init__(
        self,
        model,
        scale: float = 20.0,
        similarity_fct: Callable[[Tensor, Tensor], Tensor] = util.cos_sim,
        gather_across_devices: bool = False,
        directions: tuple[Literal["query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"], ...] = (
            "query_to_doc",
        ),
        partition_mode: Literal["joint", "per_direction"] = "joint",
        hardness_mode: Literal["in_batch_negatives", "hard_negatives", "all_negatives"] | None = None,
        hardness_strength: float = 0.0,
        backend: str = "auto",
    ) -> None:
        """sentence-transformers' MultipleNegativesRankingLoss (InfoNCE with in-batch negatives), fused.

        Same constructor, inputs, validation, config and results as
        ``sentence_transformers.losses.MultipleNegativesRankingLoss`` (6.x), of which this is a subclass, plus
        ``backend``. Every combination of ``directions`` and ``partition_mode`` is computed with
        :func:`spherekit.ops.info_nce`, which never materialises the B x N score matrix:

        - ``query_to_doc`` only: one call, the anchors against all documents (positives then the
          negative columns, shared by the whole batch, as in sentence-transformers), targets
          ``rank * B + arange(B)``.
        - ``per_direction`` (``query_to_doc`` [+ ``doc_to_query``]): one call per direction, averaged;
          ``doc_to_query`` is the local positives against all anchors.
        - ``joint`` with several directions: one call over one shared softmax. Anchor-side terms
          (query_to_query) are extra candidates of the anchor; document-side terms (doc_to_query,
          doc_to_doc) are scored with the row's positive document. Both sides fit one call by
          concatenating features: the row vector is ``[q_i, d_i]`` (2d) and candidates are ``[c, 0]``
          (anchor side) or ``[0, c]`` (document side), so ``<[q_i, d_i], [0, c]> = <d_i, c>``.
          The excluded pairs (q_i with itself; d_i with every document of the same anchor) leave
          the denominator through ``query_labels`` / ``candidate_labels``.

        With ``cos_sim`` the embeddings are L2-normalised (``F.normalize``) and the temperature is
        ``1 / scale``; with ``dot_score`` they are used as given.

        Not fused, computed exactly as sentence-transformers does (by its own code, materialising
        B x N scores): any other ``similarity_fct`` (euclidean_sim, manhattan_sim, a custom or
        partial function, sparse embeddings), and ``hardness_mode`` with ``hardness_strength > 0``
        (its penalty ``alpha * stop_grad(cos)`` is a per-pair logit term that info_nce cannot take).

        A batch whose denominators hold only the positive (one pair, no negative column, a single
        process) has loss 0 with zero gradients, as in sentence-transformers.

        Args:
            model: SentenceTransformer model.
            scale: Output of the similarity function is multiplied by scale (``scale = 1 / temperature``).
            similarity_fct: similarity function between embeddings: ``util.cos_sim`` (default) or
                ``util.dot_score`` are fused; other functions fall back to sentence-transformers' math.
            gather_across_devices: If True, gather anchors and documents (with gradients) across all
                processes of torch.distributed; each process scores its own anchors against all
                documents (targets offset by ``rank * batch_size``), as sentence-transformers does.
            directions: Similarity terms in the loss: "query_to_doc" (required), "query_to_query",
                "doc_to_query", "doc_to_doc".
            partition_mode: "joint" (one softmax over all selected directions) or "per_direction" (one
                softmax per direction, averaged; not with query_to_query / doc_to_doc).
            hardness_mode: None, "in_batch_negatives", "hard_negatives" or "all_negatives" (see
                sentence-transformers); computed unfused when active.
            hardness_strength: Strength of the hardness penalty (>= 0).
            backend: spherekit backend for info_nce: "auto" | "triton" | "cpu" | "reference".

        References:
            - van den Oord et al. 2018, Representation Learning with Contrastive Predictive Coding:
              https://arxiv.org/abs/1807.03748
            - Henderson et al. 2017, Efficient Natural Language Response Suggestion for Smart Reply:
              https://arxiv.org/abs/1705.00652
            - Li et al. 2023 (GTE, joint four-direction variant): https://arxiv.org/abs/2308.03281

        Requirements:
            1. (anchor, positive) pairs, (anchor, positive, negative) triplets, or
               (anchor, positive, negative_1, ..., negative_n) n-tuples

        Inputs:
            +-------------------------------------------------+--------+
            | Inputs                                          | Labels |
            +=================================================+========+
            | (anchor, positive) pairs                        | none   |
            +-------------------------------------------------+--------+
            | (anchor, positive, negative) triplets           | none   |
            +-------------------------------------------------+--------+
            | (anchor, positive, negative_1, ..., negative_n) | none   |
            +-------------------------------------------------+--------+

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from spherekit.losses import MultipleNegativesRankingLoss

                model = SentenceTransformer("microsoft/mpnet-base")
                train_dataset = Dataset.from_dict({
                    "anchor": ["It's nice weather outside today.", "He drove to work."],
                    "positive": ["It's so sunny.", "He took the car to the office."],
                })
                loss = MultipleNegativesRankingLoss(model)  # drop-in for losses.MultipleNegativesRankingLoss
                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__(
            model,
            scale=scale,
            similarity_fct=similarity_fct,
            gather_across_devices=gather_across_devices,
            directions=directions,
            partition_mode=partition_mode,
            hardness_mode=hardness_mode,
            hardness_strength=hardness_strength,
        )
        self.backend = backend

    def fused(self, embeddings: list[Tensor] | None = None) -> bool:
        """Whether compute_loss_from_embeddings runs on info_nce (else sentence-transformers' own math)."""
        if similarity_kind(self.similarity_fct) is None:
            return False
        if self.hardness_mode is not None and self.hardness_strength > 0.0:
            return False
        return embeddings is None or not any(e.is_sparse for e in embeddings)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(embeddings) < 2:
            raise ValueError(f"Expected at least 2 embeddings, got {len(embeddings)}")
        if not self.fused(embeddings):
            return super().compute_loss_from_embeddings(embeddings, labels)
        if similarity_kind(self.similarity_fct) == "cos":
            embeddings = [normalize(e) for e in embeddings]
        queries, docs = embeddings[0], list(embeddings[1:])
        batch = queries.shape[0]
        offset = 0
        if self.gather_across_devices:
            queries, offset = gather_rows(queries)
            docs = [gather_rows(d)[0] for d in docs]
        n_anchors = queries.shape[0]  # anchors over all processes (W * B)
        docs_all = torch.cat(docs, dim=0)  # (n_anchors * n_doc_columns, d), positives first
        local = slice(offset, offset + batch)
        q_loc, d_loc = queries[local], docs[0][local]
        targets = torch.arange(offset, offset + batch, device=queries.device)
        dirs = set(self.directions)

        def nce(rows: Tensor, cands: Tensor, **kw) -> Tensor:
            return info_nce(rows, cands, targets, temperature=1.0 / self.scale, backend=self.backend, **kw)

        if self.partition_mode == "per_direction":  # query_to_doc [+ doc_to_query], validated by ST
            terms = [(q_loc, docs_all)] + ([(d_loc, queries)] if _D2Q in dirs else [])
            # a direction whose denominator holds only the positive contributes exactly 0
            total = sum(nce(r, c) for r, c in terms if c.shape[0] > 1)
            return (total if isinstance(total, Tensor) else zero_loss(embeddings)) / len(terms)

        n_cols = len(docs)
        n_denominator = docs_all.shape[0] + (n_anchors - 1) * (_Q2Q in dirs) + n_anchors * (_D2Q in dirs) \
            + (docs_all.shape[0] - n_cols) * (_D2D in dirs)
        if n_denominator == 1:
            return zero_loss(embeddings)
        doc_side = bool(dirs & {_D2Q, _D2D})
        rows = torch.cat([q_loc, d_loc], dim=1) if doc_side else q_loc
        # (candidates, anchor side?, label); a row's label is its anchor's global index and a candidate
        # sharing it leaves the denominator. `n_anchors` matches no anchor: never excluded.
        device = queries.device
        never = torch.full((docs_all.shape[0],), n_anchors, device=device)
        blocks = [(docs_all, True, never)]
        if _Q2Q in dirs:  # q_i -> q_j, without q_i itself
            blocks.append((queries, True, torch.arange(n_anchors, device=device)))
        if _D2Q in dirs:  # d_i -> q_j
            blocks.append((queries, False, never[:n_anchors]))
        if _D2D in dirs:  # d_i -> d_j, without every document of anchor i (d_i itself included)
            blocks.append((docs_all, False, torch.arange(docs_all.shape[0], device=device) % n_anchors))
        cands = torch.cat([_pad(c, left) if doc_side else c for c, left, _ in blocks], dim=0)
        kw = {}
        if dirs & {_Q2Q, _D2D}:
            kw = {"query_labels": targets, "candidate_labels": torch.cat([lab for _, _, lab in blocks])}
        return nce(rows, cands, **kw)

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "backend": self.backend}

