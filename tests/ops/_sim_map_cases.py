"""Inputs and comparison helpers shared by the token-similarity-map tests (maxsim, soft_align, sim_map,
global_avg_sim, maxsim_ragged)."""

from __future__ import annotations

import pytest
import torch

from spherekit import _backend
from spherekit.ops import cpu_budget
from tests._oracle import assert_close_to_oracle, grads_of, leaf

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


def compare(op, oracle, inputs64: dict, dtype, grad_names, *, weights_seed=0, check_grads=True):
    """op(**inputs cast to dtype) vs oracle(**fp64 inputs, compute_dtype=fp64) vs the same-precision oracle:
    the value and the gradients of sum(out * w) (w random: grad_output != 1) for every tensor in grad_names,
    with the project rule |got - oracle| <= 2 |same precision - oracle| + floor."""

    def run(fn, cast, **extra):
        def prep(k, v):
            if not (isinstance(v, torch.Tensor) and v.is_floating_point()):
                return v
            scalar_dtype = torch.float64 if cast == torch.float64 else torch.float32  # lam, tau: fp32 / fp64
            return leaf(v, cast if v.dim() else scalar_dtype, k in grad_names)

        args = {k: prep(k, v) for k, v in inputs64.items()}
        return fn(**args, **extra), [args[k] for k in grad_names]

    out, ins = run(op, dtype)
    ref, rins = run(oracle, torch.float64, compute_dtype=torch.float64)
    base, bins = run(oracle, dtype, compute_dtype=dtype)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert torch.isfinite(ref).all()
    assert_close_to_oracle("value", out.float(), base, ref, dtype)
    if not check_grads:
        return out
    w = torch.rand(out.shape, generator=torch.Generator().manual_seed(weights_seed), dtype=torch.float64) * 2 - 0.5
    for name, g, gr, gb in zip(grad_names, grads_of(out, w.to(out.dtype), ins), grads_of(ref, w, rins),
                               grads_of(base, w.to(base.dtype), bins)):
        assert g is not None and g.shape == gr.shape, name
        assert torch.isfinite(g).all(), name
        assert_close_to_oracle(f"d_{name}", g, gb, gr, dtype)
    return out
