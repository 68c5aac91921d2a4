"""SincereLoss and SoftCSELoss: supervised contrastive losses over class labels ("Mapping the Circumplex of
Affect", arXiv:2601.06575, eq. 5-8)."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor

from .. import ops
from ._common import LabelledTextLoss, as_label_angles, check_positive, degenerate_batch, normalize, zero_loss

logger = logging.getLogger(__name__)


class SincereLoss(LabelledTextLoss):
    def __init__(self, model, temperature: float = 0.05, backend: str = "auto") -> None:
        """SINCERE: supervised InfoNCE with positives from the label and no intra-class repulsion.

        For a batch of L2-normalised embeddings e with integer labels y, s_ij = <e_i, e_j> / tau,
        positives P_i = {j != i: y_j = y_i}, negatives N_i = {k: y_k != y_i}::

            loss = mean over anchors with |P_i| > 0 of
                   (1/|P_i|) sum_{j in P_i} -log( e^{s_ij} / (e^{s_ij} + sum_{k in N_i} e^{s_ik}) )

        ("Mapping the Circumplex of Affect", eq. 5-6). Unlike SupCon, other positives never sit in an anchor's
        denominator. Computed by :func:`spherekit.ops.sincere` (fused, the B x B matrix never exists).

        A batch in which no two texts share a label, or all share one, has no SINCERE term: the loss
        is 0 (zero gradients) and a warning is logged. Group batches by label (sentence-transformers'
        ``BatchSamplers.GROUP_BY_LABEL``) so every batch has positives.

        Args:
            model: SentenceTransformer model.
            temperature: tau ("Mapping the Circumplex of Affect" uses 0.05).
            backend: spherekit backend for the op: "auto" | "triton" | "cpu" | "reference".

        References:
            - Feeney, Hughes 2023, SINCERE: Supervised Information Noise-Contrastive Estimation
              REvisited: https://arxiv.org/abs/2309.14277
            - Yamauchi, Aizawa, ACL 2026, Mapping the Circumplex of Affect, section 3.4

        Inputs:
            +-------+----------------+
            | Texts | Labels         |
            +=======+================+
            | text  | class id (int) |
            +-------+----------------+

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.sampler import BatchSamplers
                from sentence_transformers.sentence_transformer.training_args import (
                    SentenceTransformerTrainingArguments,
                )
                from spherekit.losses import SincereLoss

                model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
                train = Dataset.from_dict({
                    "text": ["I am thrilled", "What a joy", "I feel so sad", "This is grim"],
                    "label": [0, 0, 1, 1],
                })
                args = SentenceTransformerTrainingArguments(
                    output_dir="out", batch_sampler=BatchSamplers.GROUP_BY_LABEL
                )
                trainer = SentenceTransformerTrainer(
                    model=model, args=args, train_dataset=train, loss=SincereLoss(model)
                )
                trainer.train()
        """
        super().__init__()
        self.model = model
        self.temperature = check_positive("temperature", temperature)
        self.backend = backend

    def _label_bias(self) -> Tensor | None:
        return None

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        bias = self._label_bias()
        e, labels = self.checked_inputs(embeddings, labels, None if bias is None else bias.shape[0])
        why = degenerate_batch(labels)
        if why:
            logger.warning("%s: %s; this batch contributes a loss of 0", type(self).__name__, why)
            return zero_loss(embeddings)
        return ops.sincere(normalize(e), labels, temperature=self.temperature, label_bias=bias, backend=self.backend)

    def get_config_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "backend": self.backend}

    @property
    def citation(self) -> str:
        return """
@misc{feeney2023sincere,
      title={SINCERE: Supervised Information Noise-Contrastive Estimation REvisited},
      author={Patrick Feeney and Michael C. Hughes},
      year={2023},
      eprint={2309.14277},
      archivePrefix={arXiv},
      primaryClass={cs.LG},
      url={https://arxiv.org/abs/2309.14277},
}
"""


class SoftCSELoss(SincereLoss):
    def __init__(self, model, label_angles, temperature: float = 0.05, backend: str = "auto") -> None:
        """SoftCSE: SINCERE whose negatives are weighted by how far their label lies on a circle.

        Each label y has an angle theta_y (radians) on a circumplex (e.g. emotions on the circumplex
        of affect). The negative k of anchor i is weighted by ("Mapping the Circumplex of Affect", eq. 7-8)::

            w_ik = (1 - cos(theta_{y_i} - theta_{y_k})) / mean_{k' in N_i} (1 - cos(theta_{y_i} - theta_{y_k'}))

        so nearby labels repel weakly, antipodal ones strongly, and the weights average to 1 over
        the anchor's in-batch negatives. Implemented as SINCERE with the label bias
        ``log(1 - cos(theta_a - theta_b))`` (an (E, E) buffer; the per-anchor renormalisation is done
        by :func:`spherekit.ops.sincere`). Two different labels at the same angle give weight 0:
        they do not repel at all. Embeddings are L2-normalised. Batches without positives give 0, as
        in :class:`SincereLoss`.

        Args:
            model: SentenceTransformer model.
            label_angles: (E,) angle of each label in RADIANS (a tensor, list or array); labels are
                ids in [0, E). Convert degrees with ``math.radians`` / ``torch.deg2rad``.
            temperature: tau ("Mapping the Circumplex of Affect" uses 0.05).
            backend: spherekit backend for the op: "auto" | "triton" | "cpu" | "reference".

        References:
            - Zhuang, Zhang, Yang, Chen, Sheng 2024, Not All Negatives Are Equally Negative: Soft
              Contrastive Learning for Unsupervised Sentence Representations (CIKM 2024)
            - Yamauchi, Aizawa, ACL 2026, Mapping the Circumplex of Affect, eq. 7-8

        Inputs:
            Those of :class:`SincereLoss`: one text column and an integer ``label`` column, a label being an
            index into ``label_angles``.

        Example:
            Train exactly like :class:`SincereLoss` (batches grouped by label), with this loss::

                import math
                from spherekit.losses import SoftCSELoss

                # 8 emotions evenly spaced on the circumplex, label i at 45 * i degrees
                angles = [math.radians(45 * i) for i in range(8)]
                loss = SoftCSELoss(model, label_angles=angles)
        """
        super().__init__(model, temperature=temperature, backend=backend)
        angles = as_label_angles(label_angles)
        diff = angles[:, None] - angles[None, :]
        # log(1 - cos d) = log(2 sin^2(d / 2)): no cancellation for close angles; -inf at d = 0
        bias = torch.log(2.0 * torch.sin(diff / 2.0) ** 2)
        self.register_buffer("label_angles", angles, persistent=False)
        self.register_buffer("label_bias", bias.float(), persistent=False)

    def _label_bias(self) -> Tensor:
        return self.label_bias

    def get_config_dict(self) -> dict[str, Any]:
        return {"label_angles": self.label_angles.tolist(), **super().get_config_dict()}

    @property
    def citation(self) -> str:
        return """
@inproceedings{zhuang2024softcse,
      title={Not All Negatives Are Equally Negative: Soft Contrastive Learning for Unsupervised Sentence Representations},
      author={Haojie Zhuang and Wei Emma Zhang and Jian Yang and Weitong Chen and Quan Z. Sheng},
      booktitle={Proceedings of the 33rd ACM International Conference on Information and Knowledge Management},
      pages={3591--3601},
      year={2024},
}
"""
