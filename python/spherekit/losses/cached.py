"""Gradient-cached (GradCache) variants of the fused losses: any batch size in the memory of one mini-batch.

Both classes use sentence-transformers' ``CachedLossMixin``: (1) embed every mini-batch without a graph,
(2) compute the loss on the whole batch and back-propagate it to the embeddings, caching their gradients,
(3) re-embed each mini-batch with a graph (same RNG state, so the same dropout masks) and push the cached
gradients through it from a hook on the returned loss, scaled by that hook's ``grad_output``. Stage (2) is
one fused :func:`spherekit.ops.info_nce` call on the concatenated embeddings: it never materialises the
B x N score matrix, so unlike sentence-transformers' cached loss it needs no chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch
from torch import Tensor, nn

from sentence_transformers import util
from sentence_transformers.base.losses.gradcache import CachedLossMixin, has_static_embedding_input
from sentence_transformers.sentence_transformer.losses import (
    CachedMultipleNegativesRankingLoss as _STCachedLoss,
)

from .concept_equivalence import ConceptEquivalenceLoss
from .multiple_negatives_ranking import MultipleNegativesRankingLoss


def _check_mini_batching(mini_batch_size, mini_batch_num_tokens) -> None:
    for name, value, optional in (("mini_batch_size", mini_batch_size, False),
                                  ("mini_batch_num_tokens", mini_batch_num_tokens, True)):
        if optional and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            kind = "a positive integer or None" if optional else "a positive integer"
            raise ValueError(f"{name} must be {kind}, got {value!r}")


def _reject_static_embedding(loss: str, model, instead: str) -> None:
    if model is not None and has_static_embedding_input(model):
        raise ValueError(
            f"{loss} is not compatible with a SentenceTransformer model based on a StaticEmbedding, whose inputs "
            f"cannot be split into mini-batches along a batch dimension. Consider using {instead} instead."
        )


class _FusedLossStage:
    """Stage (2) of a CachedLossMixin whose wrapped ``self.loss`` is a fused spherekit loss: the loss on the whole
    batch, ``self.loss.compute_loss_from_embeddings`` on the concatenated mini-batch embeddings (one call, not
    chunked). CachedLossMixin's contract: with_backward -> back-propagate to the embeddings, return detached.
    Where ``_fused`` says no, the next class's (chunked) ``calculate_loss`` computes it instead."""

    def _fused(self, embeddings: list[Tensor]) -> bool:
        return True

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        """The loss on the whole batch from the per-mini-batch embeddings (fused: not chunked)."""
        embeddings = [torch.cat(column) for column in reps]
        if not self._fused(embeddings):
            return super().calculate_loss(reps, labels, with_backward=with_backward)
        loss = self.loss.compute_loss_from_embeddings(embeddings, labels)
        if with_backward:
            loss.backward()
            return loss.detach()
        return loss


class CachedMultipleNegativesRankingLoss(_FusedLossStage, _STCachedLoss):
    _delegated_to_wrapped_loss = (*_STCachedLoss._delegated_to_wrapped_loss, "backend")

    def __init__(
        self,
        model,
        scale: float = 20.0,
        similarity_fct: Callable[[Tensor, Tensor], Tensor] = util.cos_sim,
        mini_batch_size: int = 32,
        mini_batch_num_tokens: int | None = None,
        gather_across_devices: bool = False,
        directions: tuple[Literal["query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"], ...] = (
            "query_to_doc",
        ),
        partition_mode: Literal["joint", "per_direction"] = "joint",
        show_progress_bar: bool = False,
        hardness_mode: Literal["in_batch_negatives", "hard_negatives", "all_negatives"] | None = None,
        hardness_strength: float = 0.0,
        backend: str = "auto",
    ) -> None:
        """sentence-transformers' CachedMultipleNegativesRankingLoss (MNRL with GradCache), fused.

        Same constructor, inputs, validation, config and results as
        ``sentence_transformers.losses.CachedMultipleNegativesRankingLoss`` (6.x), of which this is a
        subclass, plus ``backend``. The embeddings are computed in mini-batches of ``mini_batch_size``
        (or ``mini_batch_num_tokens``) texts, first without gradients, then again with them from a
        backward hook (GradCache), so a training step needs the activation memory of one mini-batch
        whatever the batch size. The loss stage is spherekit's
        :class:`~spherekit.losses.MultipleNegativesRankingLoss` on the whole batch: one fused
        :func:`spherekit.ops.info_nce` call per softmax, which never materialises the B x N score
        matrix, so it is not chunked (sentence-transformers chunks it over ``mini_batch_size`` rows).

        Where spherekit's MultipleNegativesRankingLoss is not fused (a ``similarity_fct`` other than
        ``cos_sim`` / ``dot_score``, ``hardness_mode`` with ``hardness_strength > 0``, sparse
        embeddings), the loss stage is sentence-transformers' own chunked one, with its results.

        Args:
            model: SentenceTransformer model (not one built on a StaticEmbedding).
            scale, similarity_fct: the loss stage's ``scale = 1 / temperature`` and similarity, as in
                :class:`~spherekit.losses.MultipleNegativesRankingLoss` (cos_sim / dot_score are fused).
            mini_batch_size: texts per embedding mini-batch: the memory of a step is that of one
                mini-batch; larger is faster.
            mini_batch_num_tokens: if set, mini-batches are packed by total (non-padding) token count
                instead of by ``mini_batch_size`` texts.
            gather_across_devices, directions, partition_mode: the loss stage's cross-device gather and
                similarity terms, as in MultipleNegativesRankingLoss.
            show_progress_bar: show a progress bar over the mini-batches.
            hardness_mode, hardness_strength: sentence-transformers' hardness penalty, as in
                MultipleNegativesRankingLoss (computed unfused when active).
            backend: spherekit backend for info_nce: "auto" | "triton" | "cpu" | "reference".

        References:
            - Gao et al. 2021, Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup:
              https://arxiv.org/abs/2101.06983
            - Henderson et al. 2017, Efficient Natural Language Response Suggestion for Smart Reply:
              https://arxiv.org/abs/1705.00652
            - van den Oord et al. 2018, Representation Learning with Contrastive Predictive Coding:
              https://arxiv.org/abs/1807.03748

        Requirements:
            1. (anchor, positive) pairs, (anchor, positive, negative) triplets, or
               (anchor, positive, negative_1, ..., negative_n) n-tuples
            2. A large ``per_device_train_batch_size`` and a ``mini_batch_size`` that fits in memory.

        Inputs:
            Those of :class:`~spherekit.losses.MultipleNegativesRankingLoss` (see Requirements); no labels.

        Example:
            A batch of 4096 (anchor, positive) pairs in the memory of 32::

                from datasets import load_dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers import SentenceTransformerTrainingArguments
                from spherekit.losses import CachedMultipleNegativesRankingLoss

                model = SentenceTransformer("microsoft/mpnet-base")
                train_dataset = load_dataset("sentence-transformers/all-nli", "pair", split="train")
                # drop-in for losses.CachedMultipleNegativesRankingLoss
                loss = CachedMultipleNegativesRankingLoss(model, mini_batch_size=32)
                args = SentenceTransformerTrainingArguments(output_dir="out", per_device_train_batch_size=4096)
                trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        _check_mini_batching(mini_batch_size, mini_batch_num_tokens)
        super().__init__(
            model,
            scale=scale,
            similarity_fct=similarity_fct,
            mini_batch_size=mini_batch_size,
            mini_batch_num_tokens=mini_batch_num_tokens,
            gather_across_devices=gather_across_devices,
            directions=directions,
            partition_mode=partition_mode,
            show_progress_bar=show_progress_bar,
            hardness_mode=hardness_mode,
            hardness_strength=hardness_strength,
        )
        self.loss = MultipleNegativesRankingLoss(
            model,
            scale=scale,
            similarity_fct=similarity_fct,
            gather_across_devices=gather_across_devices,
            directions=directions,
            partition_mode=partition_mode,
            hardness_mode=hardness_mode,
            hardness_strength=hardness_strength,
            backend=backend,
        )

    @property
    def backend(self) -> str:
        return self.loss.backend

    def _fused(self, embeddings: list[Tensor]) -> bool:
        return self.loss.fused(embeddings)

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "backend": self.backend}


class CachedConceptEquivalenceLoss(_FusedLossStage, CachedLossMixin, nn.Module):
    def __init__(
        self,
        model,
        scale: float = 20.0,
        hard_negative_mode: str = "bce",
        bce_weight: float = 0.5,
        bce_scale: float = 20.0,
        bce_bias: float = 0.0,
        bce_positive: bool = True,
        weight: float = 1.0,
        gather_across_devices: bool = False,
        backend: str = "auto",
        mini_batch_size: int = 32,
        mini_batch_num_tokens: int | None = None,
        show_progress_bar: bool = False,
    ) -> None:
        """ConceptEquivalenceLoss (one view of "Principles of Concept Representation in Sentence Encoders"
        (arXiv:2606.06994)'s objective) with GradCache: large batches, small memory.

        The same loss, value and gradients as :class:`~spherekit.losses.ConceptEquivalenceLoss` (InfoNCE
        over in-batch positives plus a BCE term on each anchor's hard negatives, times ``weight``; see
        there for the formula), computed the GradCache way: the embeddings are computed in mini-batches
        of ``mini_batch_size`` (or ``mini_batch_num_tokens``) texts, first without gradients, then again
        with them from a backward hook that replays each mini-batch's RNG state (the same dropout masks),
        so a training step needs the activation memory of one mini-batch whatever the batch size. The
        loss stage is one fused :func:`spherekit.ops.info_nce` call on the whole batch (the B x B score
        matrix never exists), so it is not chunked.

        The hook scales the cached gradients by its ``grad_output``: several cached losses can be added
        (with weights) into one total and back-propagated once, like ordinary losses.

        Args:
            model: SentenceTransformer model (not one built on a StaticEmbedding).
            scale, hard_negative_mode, bce_weight, bce_scale, bce_bias, bce_positive, weight, gather_across_devices: the
                loss's hyperparameters, as in :class:`~spherekit.losses.ConceptEquivalenceLoss` (see there for
                their meaning in the formula and their values in the paper).
            backend: spherekit backend for info_nce: "auto" | "triton" | "cpu" | "reference".
            mini_batch_size: texts per embedding mini-batch: the memory of a step is that of one
                mini-batch; larger is faster.
            mini_batch_num_tokens: if set, mini-batches are packed by total (non-padding) token count
                instead of by ``mini_batch_size`` texts.
            show_progress_bar: show a progress bar over the mini-batches.

        References:
            - Mohr, Dujany, Souquet, Freitas: Principles of Concept Representation in Sentence Encoders,
              https://arxiv.org/abs/2606.06994 (section 4.3, appendices F and G)
            - Gao et al. 2021, Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup:
              https://arxiv.org/abs/2101.06983
            - van den Oord et al. 2018 (InfoNCE): https://arxiv.org/abs/1807.03748

        Requirements:
            1. (anchor, positive) pairs or (anchor, positive, hard_negative_1, ..., hard_negative_k)
               tuples; every row of a dataset has the same k.
            2. A large ``per_device_train_batch_size`` and a ``mini_batch_size`` that fits in memory.

        Inputs:
            Those of :class:`~spherekit.losses.ConceptEquivalenceLoss` (see Requirements); no labels.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers import SentenceTransformerTrainingArguments
                from spherekit.losses import CachedConceptEquivalenceLoss

                model = SentenceTransformer("sentence-transformers/all-mpnet-base-v2")
                train_dataset = Dataset.from_dict({
                    "anchor": ["mammal"],
                    "positive": ["a warm-blooded vertebrate that feeds its young with milk"],
                    "negative_1": ["not a warm-blooded vertebrate that feeds its young with milk"],
                })
                loss = CachedConceptEquivalenceLoss(model, mini_batch_size=32)  # L_t2d + 0.5 L_BCE
                args = SentenceTransformerTrainingArguments(output_dir="out", per_device_train_batch_size=4096)
                trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__()
        _reject_static_embedding(type(self).__name__, model, "ConceptEquivalenceLoss")
        _check_mini_batching(mini_batch_size, mini_batch_num_tokens)
        self.model = model
        self.loss = ConceptEquivalenceLoss(
            model,
            scale=scale,
            hard_negative_mode=hard_negative_mode,
            bce_weight=bce_weight,
            bce_scale=bce_scale,
            bce_bias=bce_bias,
            bce_positive=bce_positive,
            weight=weight,
            gather_across_devices=gather_across_devices,
            backend=backend,
        )
        self.mini_batch_size = mini_batch_size
        self.mini_batch_num_tokens = mini_batch_num_tokens
        self.show_progress_bar = show_progress_bar

    # the hyperparameters live on the wrapped loss (read-only here)
    scale = property(lambda self: self.loss.scale)
    temperature = property(lambda self: self.loss.temperature)
    hard_negative_mode = property(lambda self: self.loss.hard_negative_mode)
    bce_weight = property(lambda self: self.loss.bce_weight)
    bce_scale = property(lambda self: self.loss.bce_scale)
    bce_bias = property(lambda self: self.loss.bce_bias)
    bce_positive = property(lambda self: self.loss.bce_positive)
    weight = property(lambda self: self.loss.weight)
    gather_across_devices = property(lambda self: self.loss.gather_across_devices)
    backend = property(lambda self: self.loss.backend)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        sentence_features = list(sentence_features)
        if len(sentence_features) < 2:
            raise ValueError(f"{type(self).__name__} expects at least 2 input column(s), got {len(sentence_features)}")
        return self.forward_cached(sentence_features, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            **self.loss.get_config_dict(),
            "mini_batch_size": self.mini_batch_size,
            "mini_batch_num_tokens": self.mini_batch_num_tokens,
        }

    @property
    def citation(self) -> str:
        return self.loss.citation
