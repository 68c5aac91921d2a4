"""Inputs and fixtures shared by the token-similarity-map tests (maxsim, soft_align, sim_map, global_avg_sim,
maxsim_ragged); their oracle comparison is tests/ops/_harness.py."""

from __future__ import annotations

import pytest
import torch

from spherekit import _backend
from spherekit.ops import cpu_budget

DTYPES = [torch.float32, torch.float16]


def tokens(*shape, seed: int, scale: float = 1.0) -> torch.Tensor:
    """fp64 tokens with a spread of norms (0.5x to 1.5x): normalize=False then differs from True."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64)
    return x * scale * (0.5 + torch.rand(*shape[:-1], 1, generator=gen, dtype=torch.float64))


def ragged_mask(*shape, seed: int) -> torch.Tensor:
    """bool (..., L): random valid tokens (not a prefix), at least one per row; row 0 keeps one token only
    (its last), so single-token rows and a padding-first layout are always covered."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=gen) < 0.7
    flat = mask.view(-1, shape[-1])
    flat[torch.arange(flat.shape[0]), torch.randint(0, shape[-1], (flat.shape[0],), generator=gen)] = True
    flat[0] = False
    flat[0, -1] = True
    return mask


@pytest.fixture
def small_cpu_chunks(monkeypatch):
    """Force the cpu backends through several uneven chunks even at test sizes."""
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", 700)


def need_triton(module: str) -> None:
    """Skip (with the reason) when a Triton kernel file is missing or does not import."""
    mod, err = _backend._try_import(f"spherekit.kernels.{module}")
    if mod is None:
        pytest.skip(f"kernels/{module}.py is not available yet ({err}): the triton backend is untested here")
