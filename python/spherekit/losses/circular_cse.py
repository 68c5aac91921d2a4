"""CircularCSELoss: regress pairwise cosines to the cosine of label-angle gaps ("Mapping the Circumplex of Affect",
arXiv:2601.06575, eq. 9)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from .. import ops
from ._common import LabelledTextLoss, as_label_angles, normalize, zero_loss


class CircularCSELoss(LabelledTextLoss):
    def __init__(self, model, label_angles, margin: float = 0.0, backend: str = "auto") -> None:
        """CircularCSE: place classes on a circle by regressing every pair's cosine to cos(angle gap).

        Each label y has an angle theta_y (radians), e.g. emotions on the circumplex of affect. For
        L2-normalised embeddings e_i with labels y_i, x_ij = <e_i, e_j> ("Mapping the Circumplex of Affect", eq. 9)::

            l_ij = max(0, |x_ij - 1| - m)^2                 if y_i = y_j
                 = (x_ij - cos(theta_{y_i} - theta_{y_j}))^2  otherwise
            loss = 1 / (B (B - 1)) * sum_{i != j} l_ij

        so same-class pairs are pulled to cosine 1 up to the margin m, and other pairs to the cosine
        of their labels' angular distance (antipodal labels to -1). Computed by
        :func:`spherekit.ops.circular_cse` (fused, the B x B matrix never exists). Unlike SINCERE it
        needs neither positives nor negatives in a batch; a batch of one text gives 0.

        Args:
            model: SentenceTransformer model.
            label_angles: (E,) angle of each label in RADIANS (tensor, list or array); labels are
                ids in [0, E). Convert degrees with ``math.radians`` / ``torch.deg2rad``.
            margin: m >= 0, tolerance for same-label pairs ("Mapping the Circumplex of Affect" uses 0).
            backend: spherekit backend for the op: "auto" | "triton" | "cpu" | "reference".

        References:
            - Yamauchi, Aizawa, ACL 2026, Mapping the Circumplex of Affect: Geometric Analysis of Emotion
              Representations via Hyperspherical Contrastive Learning, eq. 9:
              https://aclanthology.org/2026.acl-long.772/ (arXiv 2601.06575)

        Inputs:
            +-------+--------------------------------------------+
            | Texts | Labels                                     |
            +=======+============================================+
            | text  | label id (int, an index into label_angles) |
            +-------+--------------------------------------------+

        Example:
            ::

                import math
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from spherekit.losses import CircularCSELoss

                model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
                # joy at 0, sadness at 180 degrees: their texts should end up with cosine -1
                loss = CircularCSELoss(model, label_angles=[0.0, math.pi], margin=0.0)
                train = Dataset.from_dict({"text": ["What a joy", "I feel so sad"], "label": [0, 1]})
                trainer = SentenceTransformerTrainer(model=model, train_dataset=train, loss=loss)
                trainer.train()
        """
        super().__init__()
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0.0 <= margin < float("inf"):
            raise ValueError(f"margin must be a finite float >= 0, got {margin!r}")
        self.model = model
        self.margin = float(margin)
        self.backend = backend
        self.register_buffer("label_angles", as_label_angles(label_angles), persistent=False)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        e, labels = self.checked_inputs(embeddings, labels, self.label_angles.shape[0])
        if e.shape[0] < 2:  # no pair i != j
            return zero_loss(embeddings)
        return ops.circular_cse(normalize(e), labels, self.label_angles.to(e.device), margin=self.margin,
                                backend=self.backend)

    def get_config_dict(self) -> dict[str, Any]:
        return {"label_angles": self.label_angles.tolist(), "margin": self.margin, "backend": self.backend}

    @property
    def citation(self) -> str:
        return """
@inproceedings{yamauchi-aizawa-2026-mapping,
      title={Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via Hyperspherical Contrastive Learning},
      author={Yusuke Yamauchi and Akiko Aizawa},
      booktitle={Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},
      year={2026},
      pages={16981--17004},
      url={https://aclanthology.org/2026.acl-long.772/},
}
"""
