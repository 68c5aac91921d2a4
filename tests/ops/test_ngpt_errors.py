"""nGPT ops (geodesic_residual, l2_normalize, renormalize_): every bad input raises a clear error naming the argument
(shapes, dtypes, float64 on the fp32-only backends, backends, NaN / Inf); the custom ops pass torch.library.opcheck
and torch.compile traces them without graph breaks."""

from __future__ import annotations

import pytest
import torch

from spherekit import _backend, ops
from spherekit.ops import ngpt as ngpt_ops
from spherekit.reference import ngpt as ref

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")

D = 41


def _hfa():
    return torch.randn(3, D), torch.randn(3, D), torch.randn(D)


@pytest.mark.parametrize("case, exc, match", [
    (lambda h, f, a: ops.geodesic_residual(h.numpy(), f, a), TypeError, "h must be a torch.Tensor"),
    (lambda h, f, a: ops.geodesic_residual(h.long(), f.long(), a), TypeError, "h must have dtype"),
    (lambda h, f, a: ops.geodesic_residual(h.double(), f, a), TypeError,
     r"f must have the dtype of h \(torch.float64\), got torch.float32"),
    (lambda h, f, a: ops.geodesic_residual(h[:, :-1], f, a), ValueError, r"f must have the shape of h \(3, 40\)"),
    (lambda h, f, a: ops.geodesic_residual(h, f[:2], a), ValueError, "f must have the shape of h"),
    (lambda h, f, a: ops.geodesic_residual(h, f.half(), a), TypeError,
     r"f must have the dtype of h \(torch.float32\), got torch.float16"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a[:-1]), ValueError,
     r"alpha must .* \(d,\) = \(41,\), got shape \(40,\)"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a[None]), ValueError, r"alpha must .* got shape \(1, 41\)"),
    (lambda h, f, a: ops.geodesic_residual(h, f, torch.ones(D, dtype=torch.long)), ValueError,
     "alpha must be a floating"),
    (lambda h, f, a: ops.geodesic_residual(h, f, "0.5"), TypeError,
     "alpha must be a torch.Tensor or a Python number, got str"),
    (lambda h, f, a: ops.geodesic_residual(h, f, True), TypeError, "alpha must be a torch.Tensor or a Python number"),
    (lambda h, f, a: ops.geodesic_residual(h[0, 0], f[0, 0], a), ValueError, "h must have at least 1 dimension"),
    (lambda h, f, a: ops.geodesic_residual(h[:, :0], f[:, :0], a), ValueError, "h must have a last dimension d >= 1"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a, eps=0.0), ValueError, "eps must be a finite float > 0"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a, eps=-1e-6), ValueError, "eps must be a finite float > 0"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a, backend="gpu"), ValueError, "backend must be one of"),
    (lambda h, f, a: ops.geodesic_residual(h, f, a, backend="cuda"), RuntimeError, "backend 'cuda' cannot run here"),
    (lambda h, f, a: ops.l2_normalize(h, dim=2), ValueError, r"dim must lie in \[-2, 2\) .* got 2"),
    (lambda h, f, a: ops.l2_normalize(h, dim=-3), ValueError, r"dim must lie in \[-2, 2\)"),
    (lambda h, f, a: ops.l2_normalize(h, dim=1.0), TypeError, "dim must be an int"),
    (lambda h, f, a: ops.l2_normalize(h.int()), TypeError, "x must have dtype"),
    (lambda h, f, a: ops.l2_normalize(h[0, 0]), ValueError, "x must have at least 1 dimension"),
    (lambda h, f, a: ops.l2_normalize(h[:, :0]), ValueError, "x must have size >= 1 along dim 1"),
    (lambda h, f, a: ops.l2_normalize(h, eps=float("inf")), ValueError, "eps must be a finite float > 0"),
])
def test_bad_inputs(case, exc, match):
    with pytest.raises(exc, match=match):
        case(*_hfa())


@pytest.mark.parametrize("weights, dims, exc, match", [
    (lambda: [torch.randn(4, 5), torch.arange(6).view(2, 3)], [0, 1], TypeError, r"weights\[1\] must have dtype"),
    (lambda: [torch.randn(5, 4).t()], [0], ValueError, r"weights\[0\] must be contiguous, got shape \(4, 5\)"),
    (lambda: [torch.randn(4, 5), torch.randn(3)], [0, 1], ValueError, r"dims\[1\] must lie in \[-1, 1\) .* got 1"),
    (lambda: [torch.randn(4, 5)], [-3], ValueError, r"dims\[0\] must lie in \[-2, 2\)"),
    (lambda: [torch.randn(4, 5)], [0, 1], ValueError, "weights and dims must have the same length, got 1 and 2"),
    (lambda: [torch.randn(4, 5), torch.randn(3)], [0], ValueError, "same length, got 2 and 1"),
    (lambda: [torch.tensor(1.0)], [0], ValueError, r"weights\[0\] must have at least 1 dimension"),
    (lambda: torch.randn(4, 5), [0], TypeError, "weights must be a list or tuple"),
    (lambda: [torch.randn(4, 5)], 0, TypeError, "dims must be a list or tuple"),
    (lambda: [torch.randn(4, 5), "w"], [0, 0], TypeError, r"weights\[1\] must be a torch.Tensor"),
    (lambda: [torch.randn(4, 5)], [0.0], TypeError, r"dims\[0\] must be an int"),
])
def test_renormalize_bad_inputs(weights, dims, exc, match):
    ws = weights()
    tensors = [w for w in ws if isinstance(w, torch.Tensor)] if isinstance(ws, list) else []
    before = [w.clone() for w in tensors]
    with pytest.raises(exc, match=match):
        ops.renormalize_(ws, dims)
    for w, b in zip(tensors, before):  # validation happens before any tensor is touched
        assert torch.equal(w, b)


def test_renormalize_bad_eps():
    with pytest.raises(ValueError, match="eps must be a finite float > 0"):
        ops.renormalize_([torch.randn(3)], [0], eps=0)


def test_float64_refused_by_triton_and_cuda(monkeypatch):
    """The Triton and CUDA kernels are fp32: float64 raises naming the argument and the backend; auto on CUDA
    tensors picks the cpu backend (the torch composition, float64 math) instead."""
    x = torch.randn(3, 8, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"x: float64 is not supported by backend 'triton'"):
        ops.l2_normalize(x, backend="triton")
    with pytest.raises(TypeError, match=r"h: float64 is not supported by backend 'triton'"):
        ops.geodesic_residual(x, x, torch.ones(8, dtype=torch.float64), backend="triton")
    w = [torch.randn(3, 4), x.clone()]
    with pytest.raises(TypeError, match=r"weights\[1\]: float64 is not supported by backend 'triton'"):
        ops.renormalize_(w, [0, 1], backend="triton")
    cuda = torch.device("cuda")
    monkeypatch.setattr(ngpt_ops._ngpt_cuda, "available", lambda: True)
    monkeypatch.setattr(_backend, "_triton_usable", lambda device: (True, "fake"))
    monkeypatch.setattr(_backend, "usable", lambda b, dev: (True, "fake"))
    assert ngpt_ops._resolve("l2_normalize", "auto", cuda, 8, float64_arg="x") == "cpu"
    with pytest.raises(TypeError, match=r"x: float64 is not supported by backend 'cuda'"):
        ngpt_ops._resolve("l2_normalize", "cuda", cuda, 8, float64_arg="x")


def test_cuda_backend_without_ngpt_kernels_is_refused(monkeypatch):
    """spherekit._cuda built without the nGPT kernels: an explicit backend='cuda' raises (auto falls back to triton:
    test_ngpt.py::test_auto_on_cuda_prefers_cuda_then_triton)."""
    cuda = torch.device("cuda")
    monkeypatch.setattr(ngpt_ops._ngpt_cuda, "available", lambda: False)
    monkeypatch.setattr(_backend, "usable", lambda b, dev: (True, "fake"))
    with pytest.raises(RuntimeError, match="no nGPT kernels"):
        ngpt_ops._resolve("geodesic_residual", "cuda", cuda)


# ---- torch.library / torch.compile ------------------------------------------------------------------------

def _opcheck_cases():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(6, D, generator=g, requires_grad=True)
    f = torch.randn(6, D, generator=g, requires_grad=True)
    a = torch.randn(D, generator=g, requires_grad=True)
    norms = torch.rand(6, 3, generator=g) + 0.5
    return [
        (torch.ops.spherekit.geodesic_residual_fwd, (h, f, a, 1e-6, "cpu")),
        (torch.ops.spherekit.geodesic_residual_bwd, (torch.randn(6, D), h.detach(), f.detach(), a.detach(), norms,
                                                      1e-6, "cpu")),
        (torch.ops.spherekit.l2_normalize_fwd, (h, 1e-6, "cpu")),
        (torch.ops.spherekit.l2_normalize_bwd, (torch.randn(6, D), h.detach(), norms[:, 0].contiguous(), 1e-6, "cpu")),
        (torch.ops.spherekit.renormalize_, ([torch.randn(4, 5), torch.randn(3, 2, 2)], [0, 1], 1e-6, "cpu")),
        # float64: float64 alpha, norms and grad_alpha (the cpu backend's torch composition)
        (torch.ops.spherekit.geodesic_residual_fwd, (h.double(), f.double(), a.double(), 1e-6, "cpu")),
        (torch.ops.spherekit.l2_normalize_fwd, (h.double(), 1e-6, "cpu")),
        (torch.ops.spherekit.renormalize_, ([torch.randn(4, 5, dtype=torch.float64), torch.randn(3, 2)], [0, 1], 1e-6,
                                            "cpu")),
    ]


@pytest.mark.parametrize("index", range(8))
def test_opcheck(index):
    op, args = _opcheck_cases()[index]
    torch.library.opcheck(op, args)


def test_torch_compile_fullgraph():
    torch._dynamo.reset()

    def step(h, f, alpha, w):
        y = ops.geodesic_residual(ops.l2_normalize(h, backend="cpu"), f, alpha, backend="cpu")
        return (y * w).sum()

    g = torch.Generator().manual_seed(1)
    h0, f0, w = (torch.randn(5, 3, D, generator=g) for _ in range(3))
    a0 = torch.randn(D, generator=g) * 0.3
    compiled = torch.compile(step, fullgraph=True)
    results = []
    for fn in (step, compiled):
        h, f, a = (t.clone().requires_grad_() for t in (h0, f0, a0))
        loss = fn(h, f, a, w)
        results.append([loss, *torch.autograd.grad(loss, (h, f, a))])
    for eager, comp in zip(*results):
        torch.testing.assert_close(comp, eager)
    # and against the oracle
    hr, fr, ar = (t.double().requires_grad_() for t in (h0, f0, a0))
    y = ref.geodesic_residual(ref.l2_normalize(hr, compute_dtype=torch.float64), fr, ar, compute_dtype=torch.float64)
    torch.testing.assert_close(results[1][0].double(), (y * w.double()).sum(), atol=1e-5, rtol=1e-5)


def test_torch_compile_renormalize_():
    torch._dynamo.reset()

    def renorm(a, b):
        ops.renormalize_([a, b], [-1, 0], backend="cpu")
        return a.sum() + b.sum()

    a, b = torch.randn(7, D), torch.randn(D, 3)
    a2, b2 = a.clone(), b.clone()
    total = torch.compile(renorm, fullgraph=True)(a, b)
    torch.testing.assert_close(a, torch.nn.functional.normalize(a2, dim=-1))
    torch.testing.assert_close(b, torch.nn.functional.normalize(b2, dim=0))
    torch.testing.assert_close(total, a.sum() + b.sum())


# ---- NaN / Inf inputs ---------------------------------------------------------------------------------------

NON_FINITE = [float("nan"), float("inf"), -float("inf")]


def _poisoned(x: torch.Tensor, value: float) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[x.numel() // 2] = value
    return x


@pytest.mark.parametrize("backend", ["cpu", "triton", "reference"])
@pytest.mark.parametrize("value", NON_FINITE)
def test_non_finite_inputs_raise(backend, value):
    """Like every other op: NaN or Inf in an input raises naming it (the nGPT ops used to return NaN rows)."""
    h, f, a = _hfa()
    for name, args in (("h", (_poisoned(h, value), f, a)), ("f", (h, _poisoned(f, value), a)),
                       ("alpha", (h, f, _poisoned(a, value)))):
        with pytest.raises(ValueError, match=f"NaN or Inf found in {name}$"):
            ops.geodesic_residual(*args, backend=backend)
    with pytest.raises(ValueError, match="NaN or Inf found in x$"):
        ops.l2_normalize(_poisoned(h, value), backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "triton", "reference"])
@pytest.mark.parametrize("value", NON_FINITE)
def test_renormalize_non_finite_raises_before_writing(backend, value):
    """renormalize_ used to write NaN into the weights in place: now it raises and leaves every tensor as it was."""
    ws = [torch.randn(4, 5), _poisoned(torch.randn(6, 5), value), torch.randn(3, 2, 2)]
    before = [w.clone() for w in ws]
    with pytest.raises(ValueError, match=r"NaN or Inf found in weights\[1\]$"):
        ops.renormalize_(ws, [0, 1, 1], backend=backend)
    for w, b in zip(ws, before):
        torch.testing.assert_close(w, b, rtol=0, atol=0, equal_nan=True)


def test_non_finite_raises_under_torch_compile():
    """The check runs inside the custom ops, so a compiled graph (fullgraph, no break) checks too."""
    torch._dynamo.reset()
    fn = torch.compile(lambda h, f, a: ops.geodesic_residual(h, f, a, backend="cpu"), fullgraph=True)
    h, f, a = _hfa()
    fn(h, f, a)
    with pytest.raises(ValueError, match="NaN or Inf found in f"):
        fn(h, _poisoned(f, float("nan")), a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("alpha", [0.5, -0.25, 1])
def test_python_number_alpha_is_a_scalar_tensor(alpha, dtype):
    """A Python number alpha gives the values of the same scalar as a tensor (any float dtype of h)."""
    h, f = torch.randn(3, D, dtype=dtype), torch.randn(3, D, dtype=dtype)
    expected = ops.geodesic_residual(h, f, torch.full((D,), float(alpha), dtype=dtype))
    torch.testing.assert_close(ops.geodesic_residual(h, f, alpha), expected, rtol=0, atol=0)
