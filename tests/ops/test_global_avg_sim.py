"""global_avg_sim (F0) against the fp64 oracle, which materialises M: value and gradients, fp32/fp16, ragged
masks, m or n = 1, normalize on/off, grad_output != 1, backends cpu and reference."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from spherekit.ops import global_avg_sim
from spherekit.reference import sim_map as ref
from tests.ops._harness import compare
from tests.ops._sim_map_cases import DTYPES, ragged_mask, tokens

SHAPES = [(3, 37, 41, 24), (2, 1, 9, 16), (3, 6, 1, 8)]


def _case(shape, seed):
    B, m, n, h = shape
    return dict(q=tokens(B, m, h, seed=seed), q_mask=ragged_mask(B, m, seed=seed + 1),
                d=tokens(B, n, h, seed=seed + 2), d_mask=ragged_mask(B, n, seed=seed + 3))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("normalize", [True, False])
def test_values_and_grads(backend, dtype, shape, normalize):
    inputs = _case(shape, seed=shape[1] + shape[2])
    out = compare(partial(global_avg_sim, normalize=normalize, backend=backend),
                  partial(ref.global_avg_sim, normalize=normalize), inputs, dtype, ("q", "d"))
    assert out.shape == (shape[0],) and out.dtype == torch.float32


def test_never_forms_the_map():
    """The cpu path's autograd graph holds nothing of size B x m x n."""
    B, m, n, h = 2, 50, 60, 4
    q, d = tokens(B, m, h, seed=1).float().requires_grad_(), tokens(B, n, h, seed=2).float().requires_grad_()
    out = global_avg_sim(q, d, normalize=False, backend="cpu")
    seen, stack = [], [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None:
            continue
        for name in dir(fn):
            if name.startswith("_saved_"):
                value = getattr(fn, name)
                if isinstance(value, torch.Tensor):
                    seen.append(value.numel())
        stack.extend(f for f, _ in fn.next_functions)
    assert seen and max(seen) < B * m * n


def test_padding_never_contributes():
    x = _case((2, 8, 10, 16), seed=5)
    q, qm, d, dm = x["q"].float(), x["q_mask"], x["d"].float(), x["d_mask"]
    outs = []
    for scale in (1.0, 30.0):
        qx = torch.where(qm[..., None], q, q * scale).requires_grad_()
        dx = torch.where(dm[..., None], d, d * scale).requires_grad_()
        out = global_avg_sim(qx, dx, q_mask=qm, d_mask=dm)
        out.sum().backward()
        assert bool((qx.grad[~qm] == 0).all()) and bool((dx.grad[~dm] == 0).all())
        outs.append(out.detach())
    torch.testing.assert_close(outs[0], outs[1])


def test_torch_compile():
    x = _case((2, 5, 7, 8), seed=7)
    q = x["q"].float().requires_grad_()
    fn = torch.compile(lambda q_: global_avg_sim(q_, x["d"].float(), q_mask=x["q_mask"], d_mask=x["d_mask"]),
                       backend="aot_eager")
    got = fn(q)
    got.sum().backward()
    q_ref = x["q"].float().requires_grad_()
    expected = ref.global_avg_sim(q_ref, x["q_mask"], x["d"].float(), x["d_mask"])
    expected.sum().backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(q.grad, q_ref.grad)
