"""DeepSupervisionLoss: a view loss on the readout plus an InfoNCE loss on every supervised layer (M3).

"Principles of Concept Representation in Sentence Encoders" (Mohr, Dujany, Souquet, Freitas,
arXiv:2606.06994), section 4.2, M3: during training a linear projection head phi_l is attached to each of the
last K layers and an InfoNCE loss is computed at every layer independently,

    L = L_view(z_anchor, z_positive, [negatives]) + deep_weight * sum_l L_view(phi_l(P(H^(l)))_anchor,
                                                                            phi_l(P(H^(l)))_positive)

where L_view is the wrapped loss (a ConceptEquivalenceLoss or MultipleNegativesRankingLoss: its weight, scale
and cross-device gather apply to every layer term too) and the per-layer terms use the (anchor, positive)
columns only, so they are plain InfoNCE (no hard-negative BCE). The per-layer embeddings come from a readout
that writes features["layer_embeddings"] (K, B, d) in training mode (spherekit.nn.LayerMixPooling with
deep_supervision=True).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch import Tensor, nn


class DeepSupervisionLoss(nn.Module):
    """Args:
        model: the SentenceTransformer (its readout must write ``layer_embeddings`` in training).
        loss: the view loss; must offer ``compute_loss_from_embeddings(embeddings, labels)``.
        deep_weight: weight of the per-layer sum (default 1.0).
    """

    def __init__(self, model, loss: nn.Module, deep_weight: float = 1.0):
        super().__init__()
        if not hasattr(loss, "compute_loss_from_embeddings"):
            raise TypeError(f"loss must provide compute_loss_from_embeddings, got {type(loss).__name__}")
        if not deep_weight >= 0:
            raise ValueError(f"deep_weight must be >= 0, got {deep_weight!r}")
        self.model, self.loss, self.deep_weight = model, loss, float(deep_weight)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        outputs = [self.model(dict(f)) for f in sentence_features]  # fresh dicts: modules write into them
        main = self.loss.compute_loss_from_embeddings([o["sentence_embedding"] for o in outputs], labels)
        layers = [o.get("layer_embeddings") for o in outputs[:2]]
        if any(x is None for x in layers):
            raise ValueError("DeepSupervisionLoss needs per-layer embeddings (features['layer_embeddings']): use a "
                             "readout with deep_supervision=True (spherekit.nn.LayerMixPooling) in training mode")
        anchors, positives = layers
        deep = sum(self.loss.compute_loss_from_embeddings([anchors[k], positives[k]], None)  # pairs: no labels
                   for k in range(anchors.shape[0]))
        return main + self.deep_weight * deep

    def get_config_dict(self) -> dict[str, Any]:
        return {"deep_weight": self.deep_weight, "loss": type(self.loss).__name__,
                **getattr(self.loss, "get_config_dict", dict)()}

    @property
    def citation(self) -> str:
        return getattr(self.loss, "citation", "")
