"""The contrastive losses (info_nce, sincere, circular_cse) under the tools a user reaches for first: torch.autocast,
float64 gradcheck, torch.func.grad, meta tensors and torch.compile(fullgraph=True), on every backend they run on."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.ops import circular_cse, info_nce, sincere
from tests.ops._harness import backends

LABELS = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1, 2, 3, 3])
ANGLES = torch.linspace(0.0, 4.5, 4)
SOFTCSE_BIAS = torch.randn(4, 4, generator=torch.Generator().manual_seed(4)) * 0.3


def _unit(*shape, dtype=torch.float32, seed=0):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64),
                       dim=-1).to(dtype)


def _losses(dtype=torch.float32):
    """name -> (the loss as a function of its differentiable inputs, those inputs, the backends it runs on)."""
    q, c, h = _unit(11, 16, dtype=dtype), _unit(13, 16, dtype=dtype, seed=1), _unit(11, 2, 16, dtype=dtype, seed=2)
    e = _unit(11, 16, dtype=dtype, seed=3)
    return {
        "info_nce": (lambda q, c, h, backend="auto": info_nce(q, c, None, h, hard_negative_mode="both",
                                                               backend=backend), (q, c, h), backends("info_nce")),
        "sincere": (lambda e, backend="auto": sincere(e, LABELS, temperature=0.1, backend=backend), (e,),
                    backends("sincere")),
        "softcse": (lambda e, backend="auto": sincere(e, LABELS, temperature=0.1, backend=backend,
                                                      label_bias=SOFTCSE_BIAS), (e,), backends("sincere")),
        "circular_cse": (lambda e, backend="auto": circular_cse(e, LABELS, ANGLES, margin=0.1, backend=backend), (e,),
                         backends("circular_cse")),
    }


CASES = [(name, backend) for name, (_, _, bs) in _losses().items() for backend in bs]


def _grads(fn, inputs, **kw):
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    loss = fn(*leaves, **kw)
    return loss, torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("name,backend", CASES)
def test_autocast_bf16_gives_an_fp32_loss_equal_to_the_fp32_one(name, backend):
    """Under torch.autocast("cpu", torch.bfloat16) with fp32 inputs (a mixed-precision training loop): the loss is
    fp32, the gradients fp32, both equal to the loss without autocast (the CPU paths compute in fp32; the GPU path
    would run its products in bf16)."""
    fn, inputs, _ = _losses()[name]
    plain, plain_grads = _grads(fn, inputs, backend=backend)
    with torch.autocast("cpu", torch.bfloat16):
        loss, grads = _grads(fn, inputs, backend=backend)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, plain)
    for g, ref in zip(grads, plain_grads):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, ref)


@pytest.mark.parametrize("name", sorted(_losses()))
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_float64_gradcheck(name, backend):
    """float64 inputs run in float64 on "cpu" and "reference" (auto picks cpu), so torch.autograd.gradcheck holds."""
    fn, inputs, _ = _losses(torch.float64)[name]
    leaves = tuple(x.clone().requires_grad_() for x in inputs)
    assert fn(*leaves, backend=backend).dtype == torch.float64
    assert torch.autograd.gradcheck(lambda *xs: fn(*xs, backend=backend), leaves)


@pytest.mark.parametrize("name,backend", CASES)
def test_torch_func_grad_equals_autograd(name, backend):
    fn, inputs, _ = _losses()[name]
    _, expected = _grads(fn, inputs, backend=backend)
    got = torch.func.grad(lambda *xs: fn(*xs, backend=backend), argnums=tuple(range(len(inputs))))(*inputs)
    for g, ref in zip(got, expected):
        torch.testing.assert_close(g, ref)


@pytest.mark.parametrize("name", sorted(_losses()))
def test_meta_tensors_give_shapes_without_data(name):
    """On the meta device the loss and its gradients come from the ops' fake implementations: a scalar and
    gradients of the inputs' shapes, without computing anything."""
    fn, inputs, _ = _losses()[name]
    leaves = [torch.empty_like(x, device="meta").requires_grad_() for x in inputs]
    meta = {"sincere": lambda e: sincere(e, LABELS.to("meta")),
            "softcse": lambda e: sincere(e, LABELS.to("meta"), label_bias=SOFTCSE_BIAS.to("meta")),
            "circular_cse": lambda e: circular_cse(e, LABELS.to("meta"), ANGLES.to("meta"))}
    loss = meta.get(name, fn)(*leaves)
    assert loss.device.type == "meta" and loss.shape == ()
    grads = torch.autograd.grad(loss, leaves)
    assert [g.shape for g in grads] == [x.shape for x in inputs]


@pytest.mark.parametrize("name,backend", CASES)
def test_compile_fullgraph_equals_eager(name, backend):
    """torch.compile(fullgraph=True): the validation is traceable (no graph break, no host sync) and the compiled
    loss and gradients equal eager."""
    fn, inputs, _ = _losses()[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *xs: fn(*xs, backend=backend), fullgraph=True)
    loss, grads = _grads(compiled, inputs)
    eager, eager_grads = _grads(fn, inputs, backend=backend)
    torch.testing.assert_close(loss, eager)
    for g, ref in zip(grads, eager_grads):
        torch.testing.assert_close(g, ref)
