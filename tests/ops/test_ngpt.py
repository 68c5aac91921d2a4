"""spherekit.ops nGPT ops (geodesic_residual, l2_normalize, renormalize_) against the fp64 oracle
(spherekit.reference.ngpt): outputs and every gradient with grad_output != 1, on every CPU-runnable backend
(cpu = the C++ loops of spherekit._C, cpu-generic = the same for the baseline ISA instead of AVX2, cpu-torch =
the torch composition used when _C lacks them, triton in the interpreter, reference), fp32/fp16 (+ bf16 on the
C++ path), odd d, leading batch dims, one and zero rows, alpha shapes (), (1,), (d,) with negative and zero
entries, zero rows (clamped Jacobian, no NaN), non-contiguous inputs."""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F

from spherekit import _backend, ops
from spherekit.ops import ngpt as ngpt_ops
from spherekit.reference import ngpt as ref
from tests._oracle import assert_close_to_oracle, leaf
from tests.ops._harness import backends, check, runs

# the cpu backend three ways: the C++ loops of spherekit._C for this machine's ISA and for the baseline one, and the
# torch composition (ops/_ngpt_cpu.py) used where _C lacks them
CPU_VARIANTS = ["cpu", "cpu-generic", "cpu-torch"]
BACKENDS = [v for b in backends("ngpt") for v in (CPU_VARIANTS if b == "cpu" else [b])] + ["reference"]
DTYPES = [torch.float32, torch.float16]
SHAPES = [(1, 41), (7, 1000), (2, 3, 41), (300, 257)]  # (300, 257): OpenMP threads, several grad_alpha flushes
ALPHA_SHAPES = ["scalar", "one", "vector"]


@pytest.fixture
def backend(request, monkeypatch):
    """Backend name for ops; 'cpu-generic' forces the C++ loops compiled for the baseline ISA (not AVX2),
    'cpu-torch' the cpu backend's torch composition."""
    name = request.param
    if name == "cpu-generic":
        monkeypatch.setenv("SPHEREKIT_CPU_ISA", "generic")
        name = "cpu"
    mod, why = _backend.try_triton_kernels("ngpt")
    if name == "triton" and mod is None:
        pytest.skip(f"kernels/ngpt.py does not import: {why}")
    if name == "cpu-torch":
        monkeypatch.setattr(ngpt_ops, "has_ngpt", lambda ext: False)
        return "cpu"
    if name == "cpu" and not ngpt_ops.has_ngpt(_backend.cpp_extension()):
        pytest.fail("spherekit._C was built without the nGPT entry points")
    return name


def _rand(shape, seed, scale=1.0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale


def _alpha(kind, d, seed=5):
    if kind == "scalar":
        return torch.tensor(-0.3, dtype=torch.float64)  # negative: the step is |alpha|
    if kind == "one":
        return torch.tensor([0.45], dtype=torch.float64)
    a = (torch.rand(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) - 0.3) * 1.4
    a[0] = 0.0  # gradient sign(0) * ... = 0
    if d > 2:
        a[1], a[2] = -0.25, 1.3
    return a


def _exact(x64, dtype):
    """x64 rounded to `dtype`, back in float64."""
    return x64.to(dtype).double()


def _weights(shape, dtype, seed=99):
    """grad_output != 1, exactly representable in `dtype` so every run sees the same upstream gradient."""
    return (_rand(shape, seed) + 0.5).to(dtype).double()


def _geodesic_runs(backend, h64, f64, a64, dtype, eps=1e-6):
    """(kernel, same-precision torch, fp64 oracle) -> each a list [out, grad_h, grad_f, grad_alpha] (harness.runs).
    Inputs are first rounded to `dtype` (alpha to fp32), so the oracle sees exactly what the kernel sees."""
    inputs = dict(h=_exact(h64, dtype), f=_exact(f64, dtype), alpha=_exact(a64, torch.float32))
    return runs(partial(ops.geodesic_residual, eps=eps, backend=backend), partial(ref.geodesic_residual, eps=eps),
                inputs, dtype, ("h", "f", "alpha"), params=("alpha",), weights=partial(_weights, dtype=dtype))


GR_NAMES = ("out", "grad_h", "grad_f", "grad_alpha")


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("alpha_kind", ALPHA_SHAPES)
def test_geodesic_residual(backend, dtype, shape, alpha_kind):
    if backend == "triton" and shape[0] * shape[-1] > 10_000:
        pytest.skip("interpreter: large shape covered by the cpu backends")
    d = shape[-1]
    h64, f64, a64 = _rand(shape, 1), _rand(shape, 2, 3.0), _alpha(alpha_kind, d)
    got, base, oracle = _geodesic_runs(backend, h64, f64, a64, dtype)
    assert got[0].dtype == dtype and got[0].shape == shape
    assert got[3].dtype == torch.float32 and got[3].shape == a64.shape
    check(GR_NAMES, got, base, oracle, dtype)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
def test_geodesic_residual_clamped_rows(backend, dtype):
    """Zero rows of h and f, a row below eps, a row with y = 0 (f = -h, a = 0.5) and one with 0 < ||y|| < eps
    (f at angle 0.6 eps from -h): finite, Jacobian I / eps for every clamped norm."""
    eps = 1e-6 if dtype == torch.float32 else 1e-2  # g / eps must fit in fp16
    h64, f64 = _rand((6, 41), 3), _rand((6, 41), 4)
    h64[0] = 0
    f64[1] = 0
    h64[2] *= 0.1 * eps / h64[2].norm()
    f64[3] = -h64[3]
    hn = h64[4] / h64[4].norm()
    r = f64[4] - (f64[4] @ hn) * hn
    theta = 0.6 * eps
    f64[4] = 2.0 * (-hn * torch.cos(torch.tensor(theta, dtype=torch.float64)) + r / r.norm() * theta)
    a64 = torch.full((41,), -0.5, dtype=torch.float64)
    got, base, oracle = _geodesic_runs(backend, h64, f64, a64, dtype, eps=eps)
    assert torch.equal(got[0][3], torch.zeros(41, dtype=dtype))  # Norm(0) = 0
    y4 = ref.geodesic_residual(_exact(h64[4:5], dtype), _exact(f64[4:5], dtype), a64, 1e30, compute_dtype=torch.float64)
    assert 0 < y4.norm() * 1e30 < 0.5 * eps  # the row really has 0 < ||y|| < eps (y = out * max(||y||, 1e30))
    check(GR_NAMES, got, base, oracle, dtype)


@pytest.mark.parametrize("shape", [(5, 41), (300, 257)])
def test_geodesic_residual_bf16_cpp(shape):
    """bf16 storage on the C++ path: within the oracle rule vs bf16 torch, and within bf16 rounding of the oracle."""
    h64, f64, a64 = _rand(shape, 6), _rand(shape, 7), _alpha("vector", shape[-1])
    got, base, oracle = _geodesic_runs("cpu", h64, f64, a64, torch.bfloat16)
    assert got[0].dtype == torch.bfloat16
    check(GR_NAMES, got, base, oracle, torch.bfloat16)
    for name, g, o in zip(GR_NAMES, got, oracle):
        tol = 2 ** -7 * o.abs().max().item()  # two bf16 ulps of the largest entry
        assert (g.double() - o).abs().max().item() <= tol, name


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_geodesic_residual_zero_rows_and_frozen_inputs(backend):
    # the one rule of every op: an empty batch is an error naming the argument
    with pytest.raises(ValueError, match=r"h is empty \(shape \(0, 41\)\); every spherekit op needs a non-empty"):
        ops.geodesic_residual(torch.zeros(0, 41), torch.zeros(0, 41), torch.randn(41), backend=backend)
    with pytest.raises(ValueError, match=r"x is empty"):
        ops.l2_normalize(torch.zeros(0, 41), backend=backend)
    # only alpha requires grad: h and f get none, alpha's gradient matches the oracle
    h64, f64, a64 = _rand((4, 41), 8), _rand((4, 41), 9), _alpha("vector", 41)
    a = leaf(a64, torch.float32)
    out = ops.geodesic_residual(h64.float(), f64.float(), a, backend=backend)
    (ga,) = torch.autograd.grad(out, (a,), torch.ones_like(out))
    a_ref = leaf(a64, torch.float64)
    (ga_ref,) = torch.autograd.grad(ref.geodesic_residual(h64, f64, a_ref, compute_dtype=torch.float64).sum(), (a_ref,))
    torch.testing.assert_close(ga.double(), ga_ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("backend", ["cpu", "cpu-generic", "cpu-torch"], indirect=True)
def test_non_contiguous_inputs(backend):
    """Sliced / transposed inputs give the results (and gradients) of their contiguous copies."""
    base_h = torch.randn(6, 50, requires_grad=True)
    base_f = torch.randn(41, 6, requires_grad=True)
    a = torch.randn(41, requires_grad=True)
    g = torch.randn(6, 41)
    h, f = base_h[:, 3:44], base_f.t()
    out = ops.geodesic_residual(h, f, a, backend=backend)
    grads = torch.autograd.grad(out, (base_h, base_f, a), g)
    hc, fc = h.detach().contiguous().requires_grad_(), f.detach().contiguous().requires_grad_()
    ac = a.detach().clone().requires_grad_()
    out_c = ops.geodesic_residual(hc, fc, ac, backend=backend)
    gh, gf, ga = torch.autograd.grad(out_c, (hc, fc, ac), g)
    torch.testing.assert_close(out, out_c, rtol=0, atol=0)
    torch.testing.assert_close(grads[0][:, 3:44], gh, rtol=0, atol=0)
    assert torch.equal(grads[0][:, :3], torch.zeros(6, 3))
    torch.testing.assert_close(grads[1].t(), gf, rtol=0, atol=0)
    torch.testing.assert_close(grads[2], ga, rtol=0, atol=0)
    x = torch.randn(41, 7).t()
    torch.testing.assert_close(ops.l2_normalize(x, backend=backend), F.normalize(x, dim=-1), rtol=1e-6, atol=1e-7)


def test_alpha_dtype_preserved_for_its_gradient():
    a = torch.full((41,), 0.2, dtype=torch.bfloat16, requires_grad=True)
    out = ops.geodesic_residual(torch.randn(3, 41), torch.randn(3, 41), a, backend="cpu")
    out.sum().backward()
    assert a.grad.dtype == torch.bfloat16 and a.grad.shape == (41,)


# ---- l2_normalize -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim", [((1, 41), -1), ((7, 1000), -1), ((2, 3, 41), 1), ((2, 3, 41), 0),
                                        ((41,), 0), ((300, 257), -1)])
def test_l2_normalize(backend, dtype, shape, dim):
    if backend == "triton" and shape[0] * shape[-1] > 10_000:
        pytest.skip("interpreter: large shape covered by the cpu backends")
    eps = 1e-3
    x64 = _rand(shape, 10, 2.0)
    x64.view(-1)[:3] = 0
    if len(shape) > 1:
        slices = x64.movedim(dim, -1)  # a view: its last axis is the normalised one
        slices[(0,) * (len(shape) - 1)] = 0  # a zero slice
        last = slices[(-1,) * (len(shape) - 1)]
        if last.norm() > 0:  # (not the zero slice itself when there is only one)
            last *= 0.3 * eps / last.norm()  # a nonzero slice below eps: Jacobian I / eps
    x64 = _exact(x64, dtype)
    got, base, oracle = runs(partial(ops.l2_normalize, dim=dim, eps=eps, backend=backend),
                             partial(ref.l2_normalize, dim=dim, eps=eps), dict(x=x64), dtype, ("x",),
                             weights=partial(_weights, dtype=dtype))
    assert got[0].dtype == dtype and got[0].shape == shape
    check(("out", "grad_x"), got, base, oracle, dtype)


def test_l2_normalize_bf16_cpp_and_zero_row():
    x = torch.randn(300, 129).bfloat16()
    x[5] = 0
    out = ops.l2_normalize(x, backend="cpu")
    want = F.normalize(x.float(), dim=-1, eps=1e-6)
    assert torch.equal(out[5], torch.zeros(129, dtype=torch.bfloat16))
    assert (out.float() - want).abs().max() <= 2 ** -8


# ---- renormalize_ -----------------------------------------------------------------------------------------

def _weight_set(dtype, many_rows):
    """(tensor, dim) pairs: rows, columns, 1-D, 3-D middle axis with > 64 inner columns, empty, many short rows."""
    t = [(_rand((10, 41), 11), -1), (_rand((37, 41), 12), 0), (_rand((19,), 13), 0), (_rand((3, 5, 130), 14), 1),
         (_rand((4, 6, 7), 16), 0), (_rand((0, 5), 17), 1)]
    if many_rows:  # several C++ work items for one tensor
        t.append((_rand((2000, 10), 15), -1))
    t[0][0][3] = 0  # a zero row stays zero
    return [(w.to(dtype).contiguous(), dim) for w, dim in t]


RENORM_TOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1e-2}


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_renormalize_(backend, dtype):
    if backend == "triton" and dtype == torch.bfloat16:
        pytest.skip("bf16 arithmetic is wrong in the Triton interpreter")
    pairs = _weight_set(dtype, many_rows=backend != "triton")
    originals = [w.clone() for w, _ in pairs]
    ptrs = [w.data_ptr() for w, _ in pairs]
    ops.renormalize_([w for w, _ in pairs], [d for _, d in pairs], backend=backend)
    for (w, dim), w0, p in zip(pairs, originals, ptrs):
        assert w.data_ptr() == p and w.dtype == dtype  # in place
        if w.numel() == 0:
            continue
        oracle = ref.renormalize(w0.double(), dim, compute_dtype=torch.float64)
        base = ref.renormalize(w0, dim, compute_dtype=dtype)
        assert_close_to_oracle(f"renormalize dim={dim} shape={tuple(w.shape)}", w, base, oracle, dtype)
        norms = torch.linalg.vector_norm(w.double(), dim=dim)
        nonzero = torch.linalg.vector_norm(w0.double(), dim=dim) > 0
        assert (norms[nonzero] - 1).abs().max() <= RENORM_TOL[dtype]
        assert torch.equal(norms[~nonzero], torch.zeros_like(norms[~nonzero]))


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_renormalize_parameters_without_autograd(backend):
    p = torch.nn.Parameter(torch.randn(8, 41))
    q = torch.nn.Parameter(torch.randn(41, 8))
    version = p._version
    ops.renormalize_((p, q), (-1, 0), backend=backend)
    assert p.grad_fn is None and p.requires_grad and p._version > version
    torch.testing.assert_close(p.detach().norm(dim=-1), torch.ones(8))
    torch.testing.assert_close(q.detach().norm(dim=0), torch.ones(8))
    ops.renormalize_([], [], backend=backend)  # nothing to do


def test_auto_resolves_to_cpu_and_env_override(monkeypatch):
    x = torch.randn(4, 9)
    assert ngpt_ops._resolve("l2_normalize", "auto", x.device) == "cpu"
    monkeypatch.setenv("SPHEREKIT_BACKEND", "reference")
    assert ngpt_ops._resolve("l2_normalize", "auto", x.device) == "reference"
    assert ngpt_ops._resolve("l2_normalize", "cpu", x.device) == "cpu"


def test_auto_on_cuda_prefers_triton_then_cuda(monkeypatch):
    """auto on CUDA tensors: the Triton launchers (measured faster on the H200, one round per row), the CUDA
    launchers when Triton cannot run or for rows wider than Triton's MAX_D, else the torch composition (cpu)."""
    cuda = torch.device("cuda")
    triton_ok, cuda_ok, kernels = [True], [True], [True]
    monkeypatch.setattr(ngpt_ops._ngpt_cuda, "available", lambda: kernels[0])
    monkeypatch.setattr(_backend, "_triton_usable", lambda device: (triton_ok[0], "fake"))
    real_usable = _backend.usable
    monkeypatch.setattr(_backend, "usable", lambda b, dev: (cuda_ok[0], "fake") if b == "cuda" else real_usable(b, dev))
    assert ngpt_ops._resolve("geodesic_residual", "auto", cuda, 64) == "triton"
    monkeypatch.setattr(ngpt_ops, "_triton_max_d", lambda: 128)
    assert ngpt_ops._resolve("geodesic_residual", "auto", cuda, 129) == "cuda"  # rows past MAX_D
    assert ngpt_ops._impl("cuda", cuda) is ngpt_ops._ngpt_cuda
    kernels[0] = False  # spherekit._cuda built, but without the nGPT kernels
    assert ngpt_ops._resolve("geodesic_residual", "auto", cuda, 129) == "cpu"
    triton_ok[0], kernels[0] = False, True
    assert ngpt_ops._resolve("geodesic_residual", "auto", cuda, 64) == "cuda"
    cuda_ok[0] = False
    assert ngpt_ops._resolve("geodesic_residual", "auto", cuda, 64) == "cpu"
    assert ngpt_ops._impl("cpu", cuda) is ngpt_ops._ngpt_cpu  # never the C++ loops on device memory


# ---- huge rows: the fp32 sum of squares overflows (|x| >= ~2e19) ----------------------------------------------

def huge_rows(d: int = 41) -> torch.Tensor:
    """fp64 rows whose fp32 sum of squares overflows: all entries ~3e19, one dominant -1e30 entry, entries ~1e35
    (norm within fp32), and an ordinary row; plus a zero row."""
    x = _rand((5, d), 21)
    x[0] *= 3e19
    x[1] *= 1e-3
    x[1, d // 2] = -1e30
    x[2] *= 1e35
    x[4] = 0
    return x


def assert_rows_close(name: str, got: torch.Tensor, want: torch.Tensor, rtol: float) -> None:
    """Per row: max |got - want| <= rtol * max |want| (rows differ in scale by tens of orders of magnitude)."""
    got, want = got.detach().double(), want.detach().double()
    err = (got - want).abs().amax(-1)
    scale = want.abs().amax(-1)
    assert torch.isfinite(got).all(), f"{name}: not finite"
    assert (err <= rtol * scale).all(), f"{name}: per-row error {err.tolist()} vs scale {scale.tolist()}"


def check_huge_rows(backend: str, dtype: torch.dtype, device: str = "cpu", d: int = 41) -> None:
    """l2_normalize, geodesic_residual and renormalize_ on huge rows against the fp64 oracle: the right unit
    vectors (not zeros) and the right gradients."""
    rtol = 1e-5 if dtype == torch.float32 else 2e-2
    x64 = _exact(huge_rows(d), dtype)
    w = _weights(x64.shape, dtype)
    x = leaf(x64, dtype).to(device)
    out = ops.l2_normalize(x, backend=backend)
    (gx,) = torch.autograd.grad(out, x, w.to(dtype).to(device))
    x_ref = leaf(x64, torch.float64)
    want = F.normalize(x_ref, dim=-1, eps=1e-6)
    (g_ref,) = torch.autograd.grad(want, x_ref, w)
    assert_rows_close("l2_normalize out", out.cpu(), want.detach(), rtol)
    assert_rows_close("l2_normalize grad_x", gx.cpu(), g_ref, rtol)

    f64 = _exact(huge_rows(d).roll(1, 0) * 7, dtype)
    a64 = _exact(_alpha("vector", d), torch.float32)
    h, f, a = leaf(x64, dtype).to(device), leaf(f64, dtype).to(device), leaf(a64, torch.float32).to(device)
    out = ops.geodesic_residual(h, f, a, backend=backend)
    got = [out, *torch.autograd.grad(out, (h, f, a), w.to(dtype).to(device))]
    h_, f_, a_ = leaf(x64, torch.float64), leaf(f64, torch.float64), leaf(a64, torch.float64)
    want = ref.geodesic_residual(h_, f_, a_, compute_dtype=torch.float64)
    oracle = [want.detach(), *torch.autograd.grad(want, (h_, f_, a_), w)]
    for name, g, o in zip(GR_NAMES, got, oracle):
        assert_rows_close(f"geodesic_residual {name}", g.cpu()[None] if g.dim() == 1 else g.cpu(),
                          o[None] if o.dim() == 1 else o, rtol)

    weights = [x64.to(dtype).to(device), x64.t().contiguous().to(dtype).to(device)]
    ops.renormalize_(weights, [-1, 0], backend=backend)
    assert_rows_close("renormalize_ rows", weights[0].cpu(), F.normalize(x64, dim=-1), rtol)
    assert_rows_close("renormalize_ columns", weights[1].cpu().t(), F.normalize(x64, dim=-1), rtol)


OVERFLOW_WARNINGS = "ignore:overflow encountered:RuntimeWarning"  # numpy in the Triton interpreter


@pytest.mark.filterwarnings(OVERFLOW_WARNINGS)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_huge_rows(backend, dtype):
    """Rows with |x| >= ~2e19 used to come out as zeros (and get zero gradients) on every backend."""
    if backend == "triton" and dtype == torch.bfloat16:
        pytest.skip("bf16 arithmetic is wrong in the Triton interpreter")
    check_huge_rows(backend, dtype)


@pytest.mark.filterwarnings(OVERFLOW_WARNINGS)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_rows_near_float32_max(backend):
    """Entries up to FLT_MAX (the norm itself exceeds fp32): the forward still gives the unit vector."""
    x = torch.tensor([[3.0e38, -2.0e38, 1.0e38, 3.4e38], [3.4e38] * 4, [1e-30, 0, 0, 3.4e38]])
    want = F.normalize(x.double(), dim=-1)
    assert_rows_close("l2_normalize", ops.l2_normalize(x, backend=backend), want, 1e-5)
    w = x.clone()
    ops.renormalize_([w], [-1], backend=backend)
    assert_rows_close("renormalize_", w, want, 1e-5)
    y = ops.geodesic_residual(x, x.roll(1, 0), torch.full((4,), 0.3), backend=backend)
    want = ref.geodesic_residual(x.double(), x.roll(1, 0).double(), torch.full((4,), 0.3), compute_dtype=torch.float64)
    assert_rows_close("geodesic_residual", y, want, 1e-5)


# ---- float64 ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["cpu", "reference"], indirect=True)
def test_float64_gradcheck(backend):
    """float64 inputs run in float64 math on reference and cpu (NGPTBlock(...).double() needs it)."""
    g = torch.Generator().manual_seed(3)
    h = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    f = (torch.randn(4, 6, dtype=torch.float64, generator=g) * 3).requires_grad_()
    a = torch.tensor([0.3, -0.7, 1.2, 0.05, -0.4, 0.9], dtype=torch.float64, requires_grad=True)
    s = torch.tensor(-0.25, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda h, f, a: ops.geodesic_residual(h, f, a, backend=backend), (h, f, a))
    assert torch.autograd.gradcheck(lambda h, f, s: ops.geodesic_residual(h, f, s, backend=backend), (h, f, s))
    assert torch.autograd.gradcheck(lambda x: ops.l2_normalize(x, dim=1, backend=backend), (x,))
    out = ops.geodesic_residual(h, f, a, backend=backend)
    assert out.dtype == torch.float64
    want = ref.geodesic_residual(h, f, a, compute_dtype=torch.float64)
    torch.testing.assert_close(out, want, rtol=1e-14, atol=1e-15)  # float64 math, not fp32
    torch.testing.assert_close(ops.l2_normalize(x, dim=1, backend=backend), F.normalize(x, dim=1),
                               rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("backend", ["cpu", "reference"], indirect=True)
def test_renormalize_float64(backend):
    """float64 tensors (mixed with float32 ones in one call) are renormalised in float64."""
    g = torch.Generator().manual_seed(4)
    ws = [torch.randn(5, 7, dtype=torch.float64, generator=g), torch.randn(7, 3, generator=g),
          torch.randn(2, 3, 4, dtype=torch.float64, generator=g)]
    dims = [1, 0, 1]
    want = [F.normalize(w, dim=d) for w, d in zip(ws, dims)]
    ops.renormalize_(ws, dims, backend=backend)
    for w, o in zip(ws, want):
        assert w.dtype == o.dtype
        torch.testing.assert_close(w, o, rtol=1e-14 if w.dtype == torch.float64 else 1e-6, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_geodesic_residual_takes_a_python_number_alpha(backend):
    h, f = _rand((4, 41), 20).float(), _rand((4, 41), 21).float()
    want = ops.geodesic_residual(h, f, torch.tensor(0.05), backend=backend)
    torch.testing.assert_close(ops.geodesic_residual(h, f, 0.05, backend=backend), want)
    torch.testing.assert_close(ops.geodesic_residual(h.double(), f.double(), 0.05, backend="cpu"),
                               want.double(), atol=1e-6, rtol=1e-6)


def test_geodesic_residual_dtype_error_names_the_dtype_of_h():
    h = _rand((4, 8), 22)  # float64 works (cpu, reference): f must match h, whatever h is
    with pytest.raises(TypeError, match=r"f must have the dtype of h \(torch.float64\), got torch.float32"):
        ops.geodesic_residual(h, h.float(), 0.05)


# ---- the one-round forward: rows where ||y||^2 from the five sums cancels ------------------------------------

def antipodal_rows(d: int = 41) -> tuple[torch.Tensor, torch.Tensor]:
    """fp64 (h, f) pairs at angles from 90 to ~180 degrees (cos = 0 ... -1 + 1e-9) and one exactly opposite pair:
    at a = 0.5 their ||y|| runs from 0.7 down to ~1e-5 and 0, where the sum r_h^2 A + 2 r_h r_f B + r_f^2 C cancels
    (the Triton forward must take its explicit path there)."""
    g = torch.Generator().manual_seed(31)
    hn = F.normalize(torch.randn(9, d, generator=g, dtype=torch.float64), dim=-1)
    u = torch.randn(9, d, generator=g, dtype=torch.float64)
    u = F.normalize(u - (u * hn).sum(-1, keepdim=True) * hn, dim=-1)  # orthogonal to hn
    theta = torch.pi - torch.tensor([torch.pi / 2, 1.0, 0.3, 1e-1, 1e-2, 1e-3, 1e-4, 3e-5, 0.0], dtype=torch.float64)
    fn = torch.cos(theta)[:, None] * hn + torch.sin(theta)[:, None] * u
    h, f = hn * 3.0, fn * 0.5  # norms != 1, so the row norms matter too
    f[-1] = -0.25 * h[-1]  # exactly opposite in every precision (a power-of-two multiple)
    return h, f


def _y_norms(h64: torch.Tensor, f64: torch.Tensor, a: float) -> torch.Tensor:
    """||y|| per row in fp64 of the fp32-rounded inputs."""
    hn, fn = F.normalize(h64.float().double(), dim=-1), F.normalize(f64.float().double(), dim=-1)
    return (hn + a * (fn - hn)).norm(dim=-1)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("alpha", [0.5, 0.3])
def test_geodesic_residual_near_antipodal_rows(backend, alpha):
    """Within the project's error rule against the fp64 oracle (value and every gradient, per row) where hn and fn
    point apart. Any fp32 computation of y = hn + a (fn - hn) carries a relative error ~ulp / ||y|| there (the rule's
    conditioning term, 16 ulp / ||y||); ||y||^2 taken from the five sums alone would carry ~ulp / ||y||^2 (0.24 at
    ||y|| = 5e-4), which is what the Triton forward's explicit path avoids (the exactly opposite row, y = 0, has
    no conditioning term: its bound is the same-precision error)."""
    h64, f64 = antipodal_rows()
    a64 = torch.full((41,), alpha, dtype=torch.float64)
    got, base, oracle = _geodesic_runs(backend, h64, f64, a64, torch.float32)
    ny = _y_norms(h64, f64, alpha)
    for i in range(h64.shape[0]):
        conditioning = 16 * 2 ** -24 / ny[i].item() if ny[i] > 0 else 0.0
        for name, g, b, o in zip(GR_NAMES[:3], got, base, oracle):
            assert_close_to_oracle(f"{name}[{i}]", g[i], b[i], o[i], torch.float32, conditioning=conditioning)


def test_triton_saved_norms_near_antipodal_rows():
    """The Triton forward's saved ||y|| (which the backward reads) within 16 ulp / ||y|| relative of fp64 on every
    row (the five-sum formula alone is off by up to ~ulp / ||y||^2 on these rows), exactly 0 for y = 0."""
    K, why = _backend.try_triton_kernels("ngpt")
    if K is None:
        pytest.skip(f"kernels/ngpt.py does not import: {why}")
    h64, f64 = antipodal_rows()
    _, norms = K.geodesic_residual_fwd(h64.float(), f64.float(), torch.full((41,), 0.5), eps=1e-6)
    want = _y_norms(h64, f64, 0.5)
    assert want[-1] == 0 and norms[-1, 2] == 0  # exactly opposite: y = 0
    rel = (norms[:-1, 2].double() - want[:-1]).abs() / want[:-1]
    assert (rel <= 16 * 2 ** -24 / want[:-1]).all(), rel.tolist()
