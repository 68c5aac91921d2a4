"""ConceptEquivalenceLoss: one supervision view (syn / t2d / d2d) of the objective of "Principles of Concept
Representation in Sentence Encoders" (arXiv:2606.06994)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

from sentence_transformers.base.losses.merged_forward import embed_columns

from ..ops import info_nce
from ..ops.checks import full_checks
from ..ops.info_nce import HARD_NEGATIVE_MODES
from ._common import check_columns, check_positive, gather_rows, normalize

CITATION = """
@misc{mohr2026principlesconceptrepresentation,
      title={Principles of Concept Representation in Sentence Encoders},
      author={Isabelle Mohr and John Dujany and Jonathan Souquet and Andre Freitas},
      year={2026},
      eprint={2606.06994},
      archivePrefix={arXiv},
      primaryClass={cs.CL},
      url={https://arxiv.org/abs/2606.06994},
}
"""


class ConceptEquivalenceLoss(nn.Module):
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
    ) -> None:
        """InfoNCE over in-batch positives plus a BCE term on per-anchor hard negatives, for ONE view.

        "Principles of Concept Representation" (section 4.3) trains on three views of concept equivalence, synonym
        pairs (syn), term-definition pairs (t2d) and cross-source definition pairs (d2d), with

            L = L_syn + L_t2d + 0.7 L_d2d + 0.5 L_BCE,

        where each L_view is InfoNCE with in-batch negatives on cosine similarities and L_BCE pushes
        rule-based hard negatives (antonym flip, lexical negation, POS/prefix/ontological-type swaps)
        apart. This loss is one view: for anchor i with positive p_i and hard negatives h_i1..h_ik,

            loss_i = logsumexp_j (cos(a_i, p_j) * scale) - cos(a_i, p_i) * scale
                     + bce_weight / (k + 1) * [ softplus(-z_i) + sum_m softplus(z_im) ]
            z_i = bce_scale * cos(a_i, p_i) + bce_bias,   z_im = bce_scale * cos(a_i, h_im) + bce_bias

        and the loss is ``weight * mean_i loss_i``. With ``bce_positive=False`` the BCE term is over the hard
        negatives alone, ``bce_weight / k * sum_m softplus(z_im)``: the paper does not say whether its BCE scores
        the positive pair, and with bias 0 the positive's term softplus(-20 cos) is near 0 for any cos > 0.2, so
        including it mostly dilutes the negatives' term by k / (k + 1).

        Rows with fewer hard negatives than columns ("Principles of Concept Representation", appendix G: each rule
        is applied once per definition and all generated negatives are used, so a definition has as many as rules
        apply to it): pass ``labels`` = n_i, the number of real hard negatives of row i (an int64 (B,) tensor: a
        dataset's "label" column), its first n_i hard-negative columns; the other columns are padding (any text)
        and are masked out of every term. The BCE term then averages over the row's n_i + 1 pairs (over its n_i
        negatives without the positive; 0 for a row without negatives), and in the "softmax" mode the row's
        denominator holds its n_i real negatives only:

            loss_i = log( sum_j exp(s_ij) + sum_{m <= n_i} exp(s_im) ) - s_ii,   s = cos * scale

        computed from the fused kernel's per-row in-batch log-sum-exp plus the B x k masked hard-negative logits.
        Without labels every column is a real negative (n_i = k). The hard negatives belong to their own anchor
        only (a (B, k, d) tensor): with ``hard_negative_mode="bce"`` ("Principles of Concept Representation"'s B1,
        the default) they enter only the BCE term, with ``"softmax"`` ("Principles of Concept Representation"'s
        B1-unified, Appendix F) they join the anchor's InfoNCE denominator instead, ``"both"`` does both. Without
        hard-negative columns it is plain InfoNCE ("Principles of Concept Representation"'s B3). Embeddings are
        L2-normalised; the temperature is ``1 / scale``. Computed by :func:`spherekit.ops.info_nce` (fused; the B x
        B score matrix never exists).

        ``weight`` multiplies the whole view loss, its BCE term included. The paper's 0.5 on L_BCE is
        absolute: in a view weighted ``w`` that carries hard negatives, pass ``bce_weight=0.5 / w``
        to keep it (the d2d view usually has none).

        Args:
            model: SentenceTransformer model.
            scale: similarity scale, ``1 / temperature`` (20.0 = temperature 0.05).
            hard_negative_mode: "bce" | "softmax" | "both" (see above).
            bce_weight: weight of the BCE term ("Concept Representation": 0.5).
            bce_scale, bce_bias: BCE logit ``z = bce_scale * cos + bce_bias``.
            bce_positive: the BCE term includes the positive pair (label 1; mean over k + 1 pairs) or scores the
                hard negatives alone (mean over k).
            weight: multiplies this view's loss ("Concept Representation": 1.0 for syn and t2d, 0.7 for d2d).
            gather_across_devices: gather the positives (with gradients) from all torch.distributed
                processes, so every anchor is scored against the global batch of positives (targets
                offset by ``rank * batch_size``). Hard negatives stay local. Each process's loss is the
                mean over its own anchors, as in sentence-transformers' MultipleNegativesRankingLoss.
            backend: spherekit backend for info_nce: "auto" | "triton" | "cpu" | "reference".

        forward's ``labels``: None (every hard-negative column is real) or the (B,) int64 count n_i of real hard
        negatives per row (above); 0 <= n_i <= k is checked only under ``spherekit.checks("full")`` (a count above
        k counts as k, below 0 as 0).

        References:
            - Mohr, Dujany, Souquet, Freitas: Principles of Concept Representation in Sentence Encoders,
              https://arxiv.org/abs/2606.06994 (section 4.3, appendices F and G)
            - van den Oord et al. 2018 (InfoNCE): https://arxiv.org/abs/1807.03748

        Requirements:
            1. (anchor, positive) pairs or (anchor, positive, hard_negative_1, ..., hard_negative_k)
               tuples; every row of a dataset has the same k columns, and a "label" column with each row's
               number of real negatives when some rows have fewer (the rest padding).

        Inputs:
            +-----------------------------------------------------------+--------+
            | Inputs                                                    | Labels |
            +===========================================================+========+
            | (anchor, positive) pairs                                  | none   |
            +-----------------------------------------------------------+--------+
            | (anchor, positive, hard_negative_1, ..., hard_negative_k) | none   |
            +-----------------------------------------------------------+--------+
            | (anchor, positive, hard_negative_1, ..., hard_negative_k) | n_i    |
            +-----------------------------------------------------------+--------+

        Example:
            The three views as a multi-dataset training, one loss per dataset; the trainer draws each
            batch from one dataset, so the views' weighted losses add up over the steps::

                from datasets import Dataset, DatasetDict
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from spherekit.losses import ConceptEquivalenceLoss

                model = SentenceTransformer("sentence-transformers/all-mpnet-base-v2")
                train = DatasetDict({
                    "syn": Dataset.from_dict({"anchor": ["dirty cup"], "positive": ["filthy cup"]}),
                    "t2d": Dataset.from_dict({
                        "anchor": ["mammal"],
                        "positive": ["a warm-blooded vertebrate that feeds its young with milk"],
                        "negative_1": ["not a warm-blooded vertebrate that feeds its young with milk"],
                        "negative_2": ["a cold-blooded vertebrate that feeds its young with milk"],
                    }),
                    "d2d": Dataset.from_dict({
                        "anchor": ["a sustained increase in prices"],
                        "positive": ["a general rise in the price level"],
                    }),
                })
                loss = {
                    "syn": ConceptEquivalenceLoss(model),              # L_syn
                    "t2d": ConceptEquivalenceLoss(model),              # L_t2d + 0.5 L_BCE
                    "d2d": ConceptEquivalenceLoss(model, weight=0.7),  # 0.7 L_d2d
                }
                trainer = SentenceTransformerTrainer(model=model, train_dataset=train, loss=loss)
                trainer.train()
        """
        super().__init__()
        if hard_negative_mode not in HARD_NEGATIVE_MODES:
            raise ValueError(f"hard_negative_mode must be one of {HARD_NEGATIVE_MODES}, got {hard_negative_mode!r}")
        self.model = model
        self.scale = check_positive("scale", scale)
        self.hard_negative_mode = hard_negative_mode
        self.bce_weight = float(bce_weight)
        self.bce_scale = float(bce_scale)
        self.bce_bias = float(bce_bias)
        self.bce_positive = bool(bce_positive)
        self.weight = float(weight)
        self.gather_across_devices = gather_across_devices
        self.backend = backend

    @property
    def temperature(self) -> float:
        return 1.0 / self.scale

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        return self.compute_loss_from_embeddings(embed_columns(self.model, sentence_features), labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        check_columns(type(self).__name__, embeddings, 2)
        anchors, positives, *negatives = [normalize(e) for e in embeddings]
        hard = torch.stack(negatives, dim=1) if negatives else None  # (B, k, d)
        counts = self._negative_counts(labels, hard, anchors.shape[0])
        batch = anchors.shape[0]
        offset = 0
        if self.gather_across_devices:
            positives, offset = gather_rows(positives)
        targets = torch.arange(offset, offset + batch, device=anchors.device)
        if counts is not None:
            return self.weight * self._masked(anchors, positives, targets, hard, counts)
        query_labels = candidate_labels = None
        if positives.shape[0] == 1 and not (hard is not None and self.hard_negative_mode != "bce"):
            positives, query_labels, candidate_labels = _one_positive(positives)
        fused_bce = self.bce_positive or hard is None or self.hard_negative_mode == "softmax"
        loss = info_nce(
            anchors, positives, targets, hard,
            temperature=self.temperature, hard_negative_mode=None if hard is None else self.hard_negative_mode,
            bce_weight=self.bce_weight if fused_bce else 0.0, bce_scale=self.bce_scale, bce_bias=self.bce_bias,
            query_labels=query_labels, candidate_labels=candidate_labels, backend=self.backend,
        )
        if not fused_bce:  # the negatives-only BCE: B x k cosines, no need for the fused kernel
            z = self.bce_scale * torch.einsum("bd,bkd->bk", anchors, hard) + self.bce_bias
            loss = loss + self.bce_weight * nn.functional.softplus(z.float()).mean()
        return self.weight * loss

    def _negative_counts(self, labels, hard: Tensor | None, batch: int) -> Tensor | None:
        """labels as the (B,) int64 counts of real hard negatives (None: all k real); metadata checks only, the
        range under spherekit.checks("full")."""
        if labels is None:
            return None
        name = type(self).__name__
        if hard is None:
            raise ValueError(f"{name}: labels (the number of real hard negatives per row) given without "
                             "hard-negative columns")
        if not isinstance(labels, Tensor) or labels.shape != (batch,):
            shape = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
            raise ValueError(f"{name}: labels must be a ({batch},) tensor of hard-negative counts, got {shape}")
        if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
            raise TypeError(f"{name}: labels must be integer counts of real hard negatives, got dtype {labels.dtype}")
        if full_checks() and batch and not (0 <= int(labels.min()) and int(labels.max()) <= hard.shape[1]):
            raise ValueError(f"{name}: labels (hard-negative counts) must lie in [0, {hard.shape[1]}], got "
                             f"[{int(labels.min())}, {int(labels.max())}]")
        return labels.to(device=hard.device, dtype=torch.long)

    def _masked(self, anchors: Tensor, positives: Tensor, targets: Tensor, hard: Tensor, counts: Tensor) -> Tensor:
        """The loss of rows whose first counts[i] hard negatives are real (class docstring): the fused in-batch
        InfoNCE per row, with the masked hard-negative terms (B x k logits) added in torch."""
        k = hard.shape[1]
        real = torch.arange(k, device=hard.device)[None, :] < counts[:, None]      # (B, k)
        n = real.sum(1).float()
        cos_hard = torch.einsum("bd,bkd->bk", anchors, hard).float()
        cos_pos = (anchors * positives[targets]).sum(-1).float()
        query_labels = candidate_labels = None
        if positives.shape[0] == 1:
            positives, query_labels, candidate_labels = _one_positive(positives)
        in_batch = info_nce(anchors, positives, targets, temperature=self.temperature, reduction="none",
                            query_labels=query_labels, candidate_labels=candidate_labels,
                            backend=self.backend).float()                        # lse_i - s_ii
        per_row = in_batch
        if self.hard_negative_mode in ("softmax", "both"):
            s_pos, s_hard = cos_pos * self.scale, (cos_hard * self.scale).masked_fill(~real, float("-inf"))
            per_row = torch.logaddexp(in_batch + s_pos, torch.logsumexp(s_hard, 1)) - s_pos
        if self.hard_negative_mode in ("bce", "both") and self.bce_weight:
            negatives = (nn.functional.softplus(self.bce_scale * cos_hard + self.bce_bias) * real).sum(1)
            if self.bce_positive:
                bce = (nn.functional.softplus(-(self.bce_scale * cos_pos + self.bce_bias)) + negatives) / (n + 1)
            else:
                bce = negatives / n.clamp(min=1)
            per_row = per_row + self.bce_weight * bce
        return per_row.mean().to(anchors.dtype)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "hard_negative_mode": self.hard_negative_mode,
            "bce_weight": self.bce_weight,
            "bce_scale": self.bce_scale,
            "bce_bias": self.bce_bias,
            "bce_positive": self.bce_positive,
            "weight": self.weight,
            "gather_across_devices": self.gather_across_devices,
            "backend": self.backend,
        }

    @property
    def citation(self) -> str:
        return CITATION


def _one_positive(positives: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One positive and no hard negative in the softmax: the InfoNCE term is exactly 0 (as in sentence-transformers),
    but info_nce refuses such a denominator. A copy of the positive that shares the anchor's label (so it is masked
    out) -> (positives, query_labels, candidate_labels)."""
    return (torch.cat([positives, positives.detach()]), torch.zeros(1, dtype=torch.long, device=positives.device),
            torch.tensor([1, 0], device=positives.device))
