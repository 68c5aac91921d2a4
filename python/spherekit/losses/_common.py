"""Helpers shared by the losses: input checks, L2 normalisation, the cross-device gather, and the base of the
losses that read one text column plus an integer label column.

The gather is sentence-transformers' own ``all_gather_with_grad`` (torch.distributed.nn.all_gather:
every rank gets every rank's rows; in backward each rank receives the sum over ranks of the
gradients for its rows), so a spherekit loss gathered across devices behaves exactly like the
sentence-transformers loss it mirrors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

try:
    from sentence_transformers.util import all_gather_with_grad, get_rank
except ImportError as exc:  # pragma: no cover - exercised only with a sentence-transformers older than 6
    from .. import _extras

    raise ImportError(f"spherekit.losses needs sentence-transformers>=6,<7: {_extras.install_command('st')}") from exc

__all__ = [
    "LabelledTextLoss",
    "all_gather_with_grad",
    "as_label_angles",
    "check_columns",
    "check_labels",
    "check_positive",
    "degenerate_batch",
    "gather_rows",
    "get_rank",
    "normalize",
    "zero_loss",
]


def normalize(x: Tensor) -> Tensor:
    """Rows onto the unit hypersphere (the same call sentence-transformers' cos_sim makes)."""
    return F.normalize(x, p=2, dim=-1)


def check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite float > 0, got {value!r}")
    return float(value)


def check_columns(loss: str, embeddings: Sequence[Tensor], minimum: int, maximum: int | None = None) -> None:
    """Number of input columns, each (B, d) with one B and one d."""
    n = len(embeddings)
    if n < minimum or (maximum is not None and n > maximum):
        want = f"{minimum}" if maximum == minimum else f"at least {minimum}" if maximum is None else \
            f"{minimum} to {maximum}"
        raise ValueError(f"{loss} expects {want} input column(s), got {n}")
    first = embeddings[0]
    for i, e in enumerate(embeddings):
        if not isinstance(e, Tensor) or e.dim() != 2:
            raise ValueError(f"{loss}: embeddings[{i}] must be a 2-D (B, d) tensor, got "
                             f"{tuple(e.shape) if isinstance(e, Tensor) else type(e).__name__}")
        if e.shape != first.shape:
            raise ValueError(f"{loss}: embeddings[{i}] has shape {tuple(e.shape)}, expected the shape of "
                             f"embeddings[0] {tuple(first.shape)} (one batch size B, one embedding size d)")


def check_labels(loss: str, labels, batch: int, device: torch.device, n_classes: int | None = None) -> Tensor:
    """Integer class / entry ids (B,) -> int64 on `device`; range-checked against n_classes when given."""
    if labels is None:
        raise ValueError(f"{loss} needs integer labels of shape ({batch},); got None (add a 'label' column)")
    labels = torch.as_tensor(labels, device=device)
    if labels.dim() != 1 or labels.shape[0] != batch:
        raise ValueError(f"{loss}: labels must have shape ({batch},) (the batch size), got {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"{loss}: labels must be integer ids, got dtype {labels.dtype}")
    labels = labels.long()
    if n_classes is not None and labels.numel() > 0:
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= n_classes:
            raise ValueError(f"{loss}: labels must lie in [0, {n_classes}), got values in [{lo}, {hi}]")
    return labels


def gather_rows(x: Tensor) -> tuple[Tensor, int]:
    """(all ranks' rows concatenated, offset of this rank's rows); (x, 0) when not distributed."""
    return all_gather_with_grad(x), get_rank() * x.shape[0]


def zero_loss(embeddings: Sequence[Tensor]) -> Tensor:
    """A loss of exactly 0 that depends on every embedding (zero gradients, the graph stays intact)."""
    return sum((e * 0.0).sum() for e in embeddings)


def degenerate_batch(labels: Tensor) -> str:
    """Why a batch has no supervised-contrastive term ("" when it has one): needs a shared label and two labels."""
    _, counts = torch.unique(labels, return_counts=True)
    if counts.numel() < 2:
        return f"all {labels.numel()} texts share one label (no anchor has a negative)"
    if int(counts.max()) < 2:
        return "no two texts share a label (no anchor has a positive)"
    return ""


def as_label_angles(label_angles) -> Tensor:
    """(E,) label angles in radians -> float64 CPU tensor; errors name the argument."""
    try:
        angles = torch.as_tensor(label_angles, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"label_angles must be a 1-D sequence of angles in radians, got {label_angles!r}") from exc
    angles = angles.detach().cpu()
    if angles.dim() != 1 or angles.numel() == 0:
        raise ValueError(f"label_angles must have shape (E,) with E >= 1, got {tuple(angles.shape)}")
    if not bool(torch.isfinite(angles).all()):
        raise ValueError("label_angles contains NaN or Inf")
    return angles


class LabelledTextLoss(nn.Module):
    """Base of the losses whose inputs are one text column and an integer label column (SINCERE, SoftCSE,
    CircularCSE, DefSent+'s entry bank): ``forward`` embeds the column and hands it, as a one-element list, to the
    subclass's ``compute_loss_from_embeddings(embeddings, labels)``; errors name the subclass."""

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        features = list(sentence_features)
        if len(features) != 1:
            raise ValueError(f"{type(self).__name__} expects 1 text column (plus a label column), got {len(features)}")
        return self.compute_loss_from_embeddings([self.model(features[0])["sentence_embedding"]], labels)

    def checked_inputs(self, embeddings: Sequence[Tensor], labels, n_classes: int | None) -> tuple[Tensor, Tensor]:
        """(the one (B, d) embedding tensor, its labels as int64 on its device, range-checked against n_classes)."""
        name = type(self).__name__
        check_columns(name, embeddings, 1, 1)
        e = embeddings[0]
        return e, check_labels(name, labels, e.shape[0], e.device, n_classes)
