"""The nGPT ops under what a training stack wraps around them: torch.autocast (CPU here; CUDA in test_ngpt_cuda.py),
torch.func.grad, meta and fake tensors, torch.compile(op, fullgraph=True) of each public op, and a clear error for
a second derivative (the backward ops have none). fp64 gradcheck: tests/ops/test_ngpt.py::test_float64_gradcheck."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from spherekit import ops
from spherekit.reference import ngpt as ref
from tests.ops.test_ngpt import BACKENDS, backend  # noqa: F401  (the fixture)

D = 41


def _inputs(rows: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    h, f, w = (torch.randn(rows, D, generator=g) for _ in range(3))
    return h, f, (torch.rand(D, generator=g) - 0.3) * 0.6, w


# ---- autocast ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_autocast_cpu_promotes_a_mixed_pair(backend):
    """Under CPU autocast an fp32 residual stream h and a lower-precision block output f (an nn.Linear's output under
    autocast) run in fp32 and give fp32: the op on (h, f.float()) outside autocast, gradients included (f's in its
    own dtype). bf16 autocast everywhere but the Triton interpreter (no bf16 there: fp16 autocast)."""
    low = torch.float16 if backend == "triton" else torch.bfloat16
    h0, x0, alpha0, w = _inputs()
    lin = torch.nn.Linear(D, D)
    with torch.autocast("cpu", dtype=low):
        h, x, alpha = (t.clone().requires_grad_() for t in (h0, x0, alpha0))
        f = lin(x)
        assert f.dtype == low
        out = ops.geodesic_residual(h, f, alpha, backend=backend)
    assert out.dtype == torch.float32
    gh, gf, ga = torch.autograd.grad(out, (h, f, alpha), w)
    assert gf.dtype == low and gh.dtype == ga.dtype == torch.float32
    hr, fr, ar = h0.clone().requires_grad_(), f.detach().float().requires_grad_(), alpha0.clone().requires_grad_()
    want = ops.geodesic_residual(hr, fr, ar, backend=backend)
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    for got, exp in zip((gh, gf, ga), torch.autograd.grad(want, (hr, fr, ar), w)):
        torch.testing.assert_close(got, exp.to(got.dtype), rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_autocast_cpu_keeps_one_dtype(backend):
    """Inputs of one dtype keep it under autocast (the math is fp32 inside): geodesic_residual and l2_normalize of
    autocast outputs return that dtype, with the values outside autocast; renormalize_ is unchanged by it."""
    low = torch.float16 if backend == "triton" else torch.bfloat16
    h0, f0, alpha, _ = _inputs()
    lin = torch.nn.Linear(D, D)
    with torch.autocast("cpu", dtype=low):
        h, f = lin(h0), lin(f0)
        out = ops.geodesic_residual(h, f, alpha, backend=backend)
        unit = ops.l2_normalize(h, backend=backend)
        weights = [torch.randn(4, D), torch.randn(D, 3)]
        before = [w.clone() for w in weights]
        ops.renormalize_(weights, [-1, 0], backend=backend)
    assert out.dtype == unit.dtype == low
    torch.testing.assert_close(out, ops.geodesic_residual(h, f, alpha, backend=backend), rtol=0, atol=0)
    torch.testing.assert_close(unit, ops.l2_normalize(h, backend=backend), rtol=0, atol=0)
    for w, b, dim in zip(weights, before, (-1, 0)):
        assert w.dtype == torch.float32
        torch.testing.assert_close(w, F.normalize(b, dim=dim))


def test_mixed_dtypes_outside_autocast_still_raise():
    h, f, alpha, _ = _inputs()
    with pytest.raises(TypeError, match=r"f must have the dtype of h \(torch.float32\), got torch.bfloat16"):
        ops.geodesic_residual(h, f.bfloat16(), alpha)


# ---- torch.func ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_func_grad(backend):
    """torch.func.grad (and so vjp / jacrev) through geodesic_residual and l2_normalize equals torch.autograd."""
    h, f, alpha, w = _inputs()

    def loss(h, f, alpha):
        return (ops.geodesic_residual(ops.l2_normalize(h, backend=backend), f, alpha, backend=backend) * w).sum()

    got = torch.func.grad(loss, argnums=(0, 1, 2))(h, f, alpha)
    leaves = [t.clone().requires_grad_() for t in (h, f, alpha)]
    want = torch.autograd.grad(loss(*leaves), leaves)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    hr = h.double().requires_grad_()
    (g_ref,) = torch.autograd.grad((ref.l2_normalize(hr, compute_dtype=torch.float64) * w.double()).sum(), hr)
    g_op = torch.func.grad(lambda x: (ops.l2_normalize(x, backend=backend) * w).sum())(h)
    torch.testing.assert_close(g_op.double(), g_ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["cpu", "triton"], indirect=True)
def test_second_derivative_raises(backend):
    """The backward ops have no autograd: differentiating a gradient raises a clear error, never a silent zero."""
    h, f, alpha, w = _inputs()
    h.requires_grad_()
    (gh,) = torch.autograd.grad((ops.geodesic_residual(h, f, alpha, backend=backend) * w).sum(), h, create_graph=True)
    with pytest.raises(RuntimeError, match="nGPT ops have no second derivative"):
        gh.sum().backward()
    (gx,) = torch.autograd.grad((ops.l2_normalize(h, backend=backend) * w).sum(), h, create_graph=True)
    with pytest.raises(RuntimeError, match="nGPT ops have no second derivative"):
        (gx * h).sum().backward()  # a gradient penalty: the second-order terms come through the saved input


# ---- meta and fake tensors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["auto", "cpu", "reference"])
def test_meta_tensors(backend):
    """Shapes and dtypes propagate on meta tensors, through the backward too (no data, no kernel)."""
    h = torch.empty(2, 5, D, device="meta", dtype=torch.float16, requires_grad=True)
    f = torch.empty(2, 5, D, device="meta", dtype=torch.float16)
    alpha = torch.empty(D, device="meta", requires_grad=True)
    out = ops.geodesic_residual(h, f, alpha, backend=backend)
    assert out.shape == h.shape and out.dtype == torch.float16 and out.device.type == "meta"
    out.sum().backward()
    assert h.grad.shape == h.shape and alpha.grad.shape == alpha.shape and alpha.grad.dtype == torch.float32
    unit = ops.l2_normalize(h, dim=1, backend=backend)
    assert unit.shape == h.shape and unit.device.type == "meta"
    ops.renormalize_([torch.empty(4, D, device="meta"), torch.empty(D, 3, device="meta")], [-1, 0], backend=backend)
    assert ops.geodesic_residual(h, f, 0.3, backend=backend).shape == h.shape


@pytest.mark.parametrize("backend", ["auto", "cpu", "triton", "reference"])
def test_fake_tensors(backend):
    """Under FakeTensorMode (what torch.compile and torch.export trace with) every op returns fake tensors of the
    right shape and dtype without running a kernel, the Triton path included."""
    with FakeTensorMode():
        h = torch.empty(7, D, requires_grad=True)
        f, w = torch.empty(7, D), torch.empty(D, 3)
        out = ops.geodesic_residual(h, f, 0.3, backend=backend)
        unit = ops.l2_normalize(h, dim=0, backend=backend)
        (out.sum() + unit.sum()).backward()
        ops.renormalize_([w], [0], backend=backend)
    assert isinstance(out, FakeTensor) and out.shape == (7, D) and isinstance(h.grad, FakeTensor)
    assert unit.shape == (7, D)


# ---- torch.compile of each public op -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_compile_geodesic_residual(backend):
    torch._dynamo.reset()
    h0, f0, alpha0, w = _inputs()
    compiled = torch.compile(ops.geodesic_residual, fullgraph=True)
    runs = []
    for fn in (ops.geodesic_residual, compiled):
        h, f, alpha = (t.clone().requires_grad_() for t in (h0, f0, alpha0))
        out = fn(h, f, alpha, backend=backend)
        runs.append([out, *torch.autograd.grad(out, (h, f, alpha), w)])
        runs.append([fn(h0, f0, 0.25, backend=backend)])  # a Python-number alpha
    for eager, comp in zip(runs[:2], runs[2:]):
        for e, c in zip(eager, comp):
            torch.testing.assert_close(c, e, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_compile_l2_normalize(backend):
    torch._dynamo.reset()
    x0 = torch.randn(3, D, 5)
    compiled = torch.compile(ops.l2_normalize, fullgraph=True)
    results = []
    for fn in (ops.l2_normalize, compiled):
        x = x0.clone().requires_grad_()
        out = fn(x, dim=1, backend=backend)
        results.append((out, *torch.autograd.grad(out, x, torch.ones_like(out))))
    for e, c in zip(*results):
        torch.testing.assert_close(c, e, rtol=0, atol=0)
    torch.testing.assert_close(results[1][0], F.normalize(x0, dim=1))


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_compile_renormalize_(backend):
    """renormalize_ itself compiles with fullgraph=True (a custom op that mutates its list of weights in place),
    on plain tensors and on nn.Parameters."""
    torch._dynamo.reset()
    compiled = torch.compile(ops.renormalize_, fullgraph=True)
    rows, cols = torch.randn(7, D), torch.nn.Parameter(torch.randn(D, 3))
    want = [F.normalize(rows, dim=-1), F.normalize(cols.detach(), dim=0)]
    ptrs = [rows.data_ptr(), cols.data_ptr()]
    assert compiled([rows, cols], [-1, 0], backend=backend) is None
    assert [rows.data_ptr(), cols.data_ptr()] == ptrs and cols.requires_grad
    torch.testing.assert_close(rows, want[0])
    torch.testing.assert_close(cols.detach(), want[1])


@pytest.mark.parametrize("backend", ["auto", "triton"])
def test_compile_dynamic_shapes(backend):
    """dynamic=True (every size symbolic, rows and d): the backend is chosen while tracing from no tensor size, the
    width rule (rows past Triton's MAX_D) stays a guard, and new widths and row counts reuse or recompile cleanly."""
    torch._dynamo.reset()
    residual = torch.compile(ops.geodesic_residual, fullgraph=True, dynamic=True)
    normalize = torch.compile(ops.l2_normalize, fullgraph=True, dynamic=True)
    for rows, d in ((5, 41), (9, 57), (3, 64)):
        h = torch.randn(rows, d, requires_grad=True)
        f = torch.randn(rows, d)
        out = residual(h, f, 0.3, backend=backend)
        (gh,) = torch.autograd.grad(out.sum(), h)
        h2 = h.detach().clone().requires_grad_()
        want = ops.geodesic_residual(h2, f, 0.3, backend=backend)
        torch.testing.assert_close(out, want, rtol=0, atol=0)
        torch.testing.assert_close(gh, torch.autograd.grad(want.sum(), h2)[0], rtol=0, atol=0)
        torch.testing.assert_close(normalize(h, dim=0, backend=backend), F.normalize(h, dim=0))
