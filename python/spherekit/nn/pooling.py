"""Token pooling with a padding mask ("Mapping the Circumplex of Affect" (arXiv:2601.06575) eq. 4 / 14): cls =
first real token, last = last real token, mean = average over real tokens. "First"/"last" follow the mask, so left
and right padding both work."""

from __future__ import annotations

import torch
from torch import Tensor

POOLING_MODES = ("cls", "mean", "last")


def pool(h: Tensor, attention_mask: Tensor | None, mode: str) -> Tensor:
    """h (B, T, d), attention_mask (B, T) (1/True = token) or None -> (B, d)."""
    b, t, _ = h.shape
    valid = torch.ones(b, t, dtype=torch.bool, device=h.device) if attention_mask is None \
        else attention_mask.to(device=h.device, dtype=torch.bool)
    if mode == "mean":
        w = valid.to(h.dtype).unsqueeze(-1)
        return (h * w).sum(1) / w.sum(1).clamp_min(1.0)
    pos = torch.arange(t, device=h.device).expand(b, t)
    if mode == "cls":
        index = torch.where(valid, pos, t).amin(1).clamp_max(t - 1)
    elif mode == "last":
        index = torch.where(valid, pos, -1).amax(1).clamp_min(0)
    else:
        raise ValueError(f"pooling must be one of {POOLING_MODES}, got {mode!r}")
    return h[torch.arange(b, device=h.device), index]
