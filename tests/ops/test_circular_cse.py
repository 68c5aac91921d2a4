"""circular_cse against the fp64 oracle: value and the embedding gradient, fp32/fp16, odd shapes, label
layouts, margin 0 and > 0 (bad input: test_circular_cse_errors.py)."""

from __future__ import annotations

import importlib
import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import _chunked_gemm, cpu_budget, circular_cse
from tests.ops._harness import backends, compare, linear_weights

circular_cse_ops = importlib.import_module("spherekit.ops.circular_cse")  # the module (the package exports the op)

BACKENDS = backends("circular_cse")
DTYPES = [torch.float32, torch.float16]
SHAPES = [(2, 41), (37, 64), (70, 19)]
LAYOUTS = ["few", "many", "balanced"]
N_ANGLES = 12
ANGLES = torch.arange(N_ANGLES, dtype=torch.float64) * (math.pi / 6)  # i * 30 degrees


@pytest.fixture(autouse=True)
def small_cpu_chunks(monkeypatch):
    """Force both paths through several (uneven) row chunks even at these small batch sizes: the streaming one on
    the cpu backend (cpu_budget), the one-pass one on every backend (_chunked_gemm: 1,000 elements a chunk)."""
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", 1000)
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    for device in ("cpu", "cuda"):
        monkeypatch.setitem(_chunked_gemm.DEFAULT_WORKSPACE_BYTES, device, 4000)


def _labels(B, layout, gen):
    if layout == "few":
        return torch.tensor([0, 3, 7])[torch.randint(0, 3, (B,), generator=gen)]
    if layout == "many":
        return torch.randint(0, N_ANGLES, (B,), generator=gen)
    return torch.randperm(N_ANGLES, generator=gen)[torch.arange(B) % N_ANGLES]  # every label ~B/12 times


def _case(B, d, layout, *, seed=0, spread=0.0):
    """Unit embeddings; spread > 0 puts them near their label's circle position, so that same-label residuals
    straddle the margin (some pairs inside it, some outside)."""
    gen = torch.Generator().manual_seed(seed)
    y = _labels(B, layout, gen)
    e = torch.randn(B, d, generator=gen, dtype=torch.float64)
    if spread:
        circle = torch.zeros(B, d, dtype=torch.float64)
        circle[:, 0], circle[:, 1] = torch.cos(ANGLES[y]), torch.sin(ANGLES[y])
        e = circle + spread * e / math.sqrt(d)
    return F.normalize(e, dim=-1), y


def _run_and_compare(e64, labels, dtype, backend, *, angles=ANGLES, margin=0.0):
    """The op on `backend` against the oracle (tests/ops/_harness.py): the loss (an fp32 scalar; the one-pass op on
    the cpu backend) and d_embeddings (grad_output 0.7); the angles go to both sides as given."""
    out = compare(partial(circular_cse, label_angles=angles, margin=margin, backend=backend),
                  partial(reference.circular_cse, label_angles=angles, margin=margin),
                  dict(embeddings=e64, labels=labels), dtype, ("embeddings",), weights=linear_weights)
    assert out.dtype == torch.float32 and out.shape == ()
    if backend == "cpu":  # a scalar loss with a gradient: the one-pass op
        assert "CircularCSEChunked" in out.grad_fn.name()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_values_and_grads(backend, dtype, shape, layout, margin):
    e, y = _case(*shape, layout, seed=shape[0] + len(layout), spread=0.7 if margin else 0.0)
    _run_and_compare(e, y, dtype, backend, margin=margin)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("angle_dtype", [torch.float32, torch.float64])
def test_random_angles_small_margin(backend, angle_dtype):
    e, y = _case(45, 19, "many", seed=5, spread=0.5)
    angles = (torch.rand(N_ANGLES, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 7 - 1)
    _run_and_compare(e, y, torch.float32, backend, angles=angles.to(angle_dtype), margin=0.05)


@pytest.mark.parametrize("backend", BACKENDS)
def test_margin_zero_matches_margin_free_formula(backend):
    """With m = 0 every pair is a plain squared error: 1/(B(B-1)) sum_{i != j} (x_ij - c_ij)^2."""
    e, y = _case(23, 16, "few", seed=2)
    e = e.float()
    x = e.double() @ e.double().T
    th = ANGLES[y]
    sq = (x - torch.cos(th[:, None] - th[None, :])) ** 2
    expected = (sq.sum() - sq.diagonal().sum()) / (23 * 22)
    torch.testing.assert_close(circular_cse(e, y, ANGLES, backend=backend).double(), expected, atol=1e-6, rtol=1e-5)


def test_bf16_runs_on_cpu():
    e, y = _case(20, 16, "few", seed=8)
    x = e.bfloat16().requires_grad_()
    loss = circular_cse(x, y, ANGLES, margin=0.1, backend="cpu")
    loss.backward()
    ref = reference.circular_cse(e.bfloat16().double(), y, ANGLES, margin=0.1, compute_dtype=torch.float64)
    assert x.grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss.double(), ref, atol=1e-5, rtol=1e-5)


def test_reference_backend_matches():
    e, y = _case(17, 16, "many", seed=4)
    e = e.float()
    torch.testing.assert_close(circular_cse(e, y, ANGLES, margin=0.2, backend="reference"),
                               circular_cse(e, y, ANGLES, margin=0.2, backend="cpu"), atol=1e-6, rtol=1e-5)


def test_torch_compile_traces_through_the_custom_op():
    e, y = _case(12, 16, "few", seed=1)
    x = e.float().requires_grad_()
    fn = torch.compile(lambda x_: circular_cse(x_, y, ANGLES, margin=0.1, backend="cpu"), backend="aot_eager",
                       fullgraph=False)
    got = fn(x)
    got.backward()
    x_ref = e.float().requires_grad_()
    ref = reference.circular_cse(x_ref, y, ANGLES, margin=0.1)
    ref.backward()
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-6, rtol=1e-5)


def test_opcheck():
    e, y = _case(9, 16, "few", seed=2)
    e = e.float()
    th = ANGLES.float()[y]
    args = (e, y, torch.cos(th), torch.sin(th), 0.1, "cpu")
    utils = ("test_schema", "test_faketensor")
    torch.library.opcheck(torch.ops.spherekit.circular_cse_fwd.default, args, test_utils=utils)
    torch.library.opcheck(torch.ops.spherekit.circular_cse_bwd.default, (torch.full((9,), 0.1),) + args,
                          test_utils=utils)
    for backend in BACKENDS:
        torch.library.opcheck(torch.ops.spherekit.circular_cse_chunked.default, args[:-1] + (backend, 3 * 9 * 4),
                              test_utils=utils)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_op_with_per_row_upstream_gradients(backend):
    """The fwd/bwd ops (through their autograd Function) are general in the per-row upstream gradient (the public
    mean makes it uniform)."""
    e64, y = _case(41, 24, "many", seed=13, spread=0.7)
    margin = 0.3
    th = ANGLES[y]
    w = torch.linspace(-1.0, 2.0, 41, dtype=torch.float64)
    e = e64.float().requires_grad_()
    rows = circular_cse_ops._CircularCSEStreaming.apply(e, y, torch.cos(th).float(), torch.sin(th).float(), margin,
                                                        backend)
    (rows * w.float()).sum().backward()
    e_ref = e64.clone().requires_grad_()
    diff = e_ref @ e_ref.T - torch.cos(th[:, None] - th[None, :])
    same = y[:, None] == y[None, :]
    l = torch.where(same, torch.clamp(diff.abs() - margin, min=0.0) ** 2, diff**2).fill_diagonal_(0.0)
    (l.sum(1) * w).sum().backward()
    torch.testing.assert_close(rows.double(), l.sum(1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e.grad.double(), e_ref.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cpu_scalar_loss_takes_the_one_pass_path_and_matches_the_two_pass_one(margin):
    """circular_cse() with grad on the cpu backend runs forward_backward; it must equal the generic forward +
    recomputing backward ops (same mean over B(B-1) pairs), value and gradient."""
    e64, y = _case(53, 24, "many", seed=17, spread=0.7)
    th = ANGLES[y]
    e = e64.float().requires_grad_()
    fused = circular_cse(e, y, ANGLES, margin=margin, backend="cpu")
    assert "CircularCSEChunked" in fused.grad_fn.name()
    (g1,) = torch.autograd.grad(fused * 0.7, (e,))
    rows = circular_cse_ops._CircularCSEStreaming.apply(e, y, torch.cos(th).float(), torch.sin(th).float(), margin,
                                                        "cpu")
    two_pass = rows.sum() / (53 * 52)
    (g2,) = torch.autograd.grad(two_pass * 0.7, (e,))
    torch.testing.assert_close(fused, two_pass, atol=1e-6, rtol=1e-6)
    assert g1.dtype == g2.dtype
    torch.testing.assert_close(g1, g2, atol=1e-6, rtol=1e-5)
    with torch.no_grad():  # no gradient wanted: the two-pass forward, same value
        torch.testing.assert_close(circular_cse(e, y, ANGLES, margin=margin, backend="cpu"), fused)
