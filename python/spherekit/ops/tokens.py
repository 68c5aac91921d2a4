"""The token conventions shared by the token-similarity ops (maxsim, soft_align, sim_map, global_avg_sim,
maxsim_ragged) and the spherekit.nn verifiers: the one Norm they apply, the dtype of their scores, right-padding."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

NORM_EPS = 1e-6


def normalize_tokens(x: Tensor) -> Tensor:
    """Norm(x) = x / max(||x||_2, 1e-6) over the last dim, with autograd; the ONE place the token ops
    normalise: spherekit.ops.l2_normalize (fused, fp32 statistics), F.normalize for float64 tokens."""
    if x.dtype == torch.float64:
        return F.normalize(x, dim=-1, eps=NORM_EPS)
    from .ngpt import l2_normalize

    return l2_normalize(x, dim=-1, eps=NORM_EPS)


def score_dtype(x: Tensor) -> torch.dtype:
    """Scores are fp32 (fp64 for fp64 tokens, so the ops can be gradchecked)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def pad_tokens(x: Tensor, mask: Tensor, length: int) -> tuple[Tensor, Tensor]:
    """Right-pad the token axis (dim -2 of x, -1 of mask) with zeros / False up to `length`."""
    extra = length - x.shape[-2]
    if extra == 0:
        return x, mask
    return F.pad(x, (0, 0, 0, extra)), F.pad(mask, (0, extra), value=False)
