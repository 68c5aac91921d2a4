"""Helpers that compare an op against its fp64 oracle with the project's accuracy rule:
kernel error <= 2x the error of the same-precision torch computation (plus a tiny absolute floor)."""

from __future__ import annotations

import torch

FLOORS = {torch.float32: 2e-6, torch.float16: 2e-4, torch.bfloat16: 2e-3}


def max_abs(a, b) -> float:
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def assert_close_to_oracle(name: str, got, same_precision, oracle, dtype, conditioning: float = 0.0) -> None:
    """|got - oracle| <= 2 |same_precision - oracle| + (floor + conditioning) * max(1, |oracle|_max).

    conditioning: a relative error that any computation at this precision may carry (an ill-conditioned case),
    for the tests that derive one; 0 elsewhere."""
    scale = max(1.0, oracle.double().abs().max().item()) if oracle.numel() else 1.0
    err = max_abs(got, oracle)
    base = max_abs(same_precision, oracle)
    bound = 2 * base + (FLOORS[dtype] + conditioning) * scale
    assert err <= bound, f"{name}: error {err:.3e} > bound {bound:.3e} (same-precision torch error {base:.3e})"


def leaf(x, dtype, requires_grad=True):
    return x.detach().to(dtype).requires_grad_(requires_grad)


def grads_of(out, weights, tensors):
    """Gradients of sum(out * weights) w.r.t. tensors (weights make grad_output != 1)."""
    loss = (out * weights).sum() if out.dim() else out * weights
    present = [t for t in tensors if t is not None and t.requires_grad]
    gs = torch.autograd.grad(loss, present, allow_unused=True)
    it = iter(gs)
    return [next(it) if (t is not None and t.requires_grad) else None for t in tensors]
