"""The learnable scale reparametrisation of nGPT (Loshchilov et al. 2025, section 2.5; NVIDIA's reference code).

A per-feature factor (alpha_A, alpha_M, s_qk, s_u, s_v) is stored as ``raw``, initialised to ``init_scaling``,
and used as

    value = raw * (init_value / init_scaling)        (so value == init_value at init)

The gradient that reaches ``raw`` is ``(init_value / init_scaling) * dL/dvalue``. With Adam the step on ``raw``
is ~lr regardless of that factor, so the step on ``value`` is ~lr * init_value / init_scaling: ``init_scaling``
sets an effective, per-parameter learning rate without a separate optimiser group (e.g. alpha with
init_value 0.05 and init_scaling 1/sqrt(d) moves sqrt(d) * 0.05 times faster than a plain parameter).
The sign of ``value`` is kept: nGPT uses |alpha| (taken inside spherekit.ops.geodesic_residual).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class ScaledParameter(nn.Module):
    """A learnable vector of ``size`` entries whose effective value is ``raw * (init_value / init_scaling)``.

    Args:
        size: number of entries (the parameter is 1-D, fp32).
        init_value: the effective value of every entry at initialisation.
        init_scaling: the stored value at initialisation (> 0); smaller means a larger effective learning rate.
    """

    def __init__(self, size: int, init_value: float, init_scaling: float):
        super().__init__()
        if not (isinstance(size, int) and size > 0):
            raise ValueError(f"size must be a positive int, got {size!r}")
        if not init_scaling > 0:
            raise ValueError(f"init_scaling must be > 0, got {init_scaling!r}")
        self.init_value = float(init_value)
        self.init_scaling = float(init_scaling)
        self.raw = nn.Parameter(torch.full((size,), self.init_scaling, dtype=torch.float32))

    @property
    def ratio(self) -> float:
        """init_value / init_scaling: the factor between ``raw`` and the effective value (and its gradient)."""
        return self.init_value / self.init_scaling

    def forward(self) -> Tensor:
        """The effective value, shape (size,), in the dtype of ``raw``."""
        return self.raw * self.ratio

    def extra_repr(self) -> str:
        return f"size={self.raw.numel()}, init_value={self.init_value}, init_scaling={self.init_scaling:.4g}"
