"""Keeping nGPT weights on the unit sphere during training.

Any module that has ``unit_norm_weights() -> [(weight, dim), ...]`` (NGPTBlock, HypersphereHead) is covered.
``renormalize_all_(model)`` renormalises the weights of every such module inside ``model`` with ONE
spherekit.ops.renormalize_ call (call it after ``optimizer.step()`` in a custom loop);
``RenormalizeCallback`` does the same after every optimiser step of a transformers / sentence-transformers
Trainer.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import ops


def unit_norm_weights(model: nn.Module) -> list[tuple[nn.Parameter, int]]:
    """Every (weight, dim) declared by a submodule of ``model`` (itself included), each tensor once."""
    seen: set[int] = set()
    pairs = []
    for module in model.modules():
        for w, dim in getattr(module, "unit_norm_weights", lambda: [])():
            if id(w) not in seen:
                seen.add(id(w))
                pairs.append((w, dim))
    return pairs


@torch.no_grad()
def renormalize_all_(model: nn.Module, *, eps: float = 1e-6, backend: str = "auto") -> int:
    """w <- w / max(||w||_dim, eps) in place for every declared weight of ``model``; returns how many tensors."""
    pairs = unit_norm_weights(model)
    if pairs:
        weights, dims = zip(*pairs)
        ops.renormalize_(list(weights), list(dims), eps=eps, backend=backend)
    return len(pairs)
