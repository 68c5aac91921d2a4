"""The token-similarity ops with the tools a PyTorch user reaches for (issue 56, items 2 and 4): torch.autocast (CPU
here, CUDA on a GPU) with the documented output dtype, float64 with torch.autograd.gradcheck on the cpu and reference
backends, torch.func.grad, meta and fake tensors (register_fake), and torch.compile(fullgraph=True) of the public
function, forward and backward, with and without a gradient."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from tests.ops._sim_map_cases import need_triton
from tests.ops._token_ops import OPS, call, cases, differentiable, inputs, token_names, with_grad

CASES = cases()
IDS = [f"{op}-{backend}" for op, backend in CASES]
DIFF = [(op, b) for op, b in CASES if differentiable(op)]
DIFF_IDS = [f"{op}-{backend}" for op, backend in DIFF]


def _skip_missing(backend: str, op: str) -> None:
    if backend == "triton":
        need_triton(op)


def out_dtype(op: str, token_dtype: torch.dtype) -> torch.dtype:
    """The documented output dtype: fp32 scores (fp64 for fp64 tokens); sim_map returns the (cast) tokens' dtype."""
    if op == "sim_map":
        return token_dtype
    return torch.float64 if token_dtype == torch.float64 else torch.float32


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cpu_autocast(op, backend, dtype):
    """Under torch.autocast("cpu", dtype) fp32 tokens (and a mix of fp32 and low-precision ones, as an autocast model
    produces) are cast to its dtype: the result is the op's on tokens cast by hand, in the documented dtype, and the
    gradients reach the fp32 inputs in fp32."""
    x = inputs(op)
    qn, dn = token_names(op)
    mixed = {**x, dn: x[dn].to(dtype)}
    for given in (x, mixed):
        g = with_grad(given, op)
        with torch.autocast("cpu", dtype=dtype):
            out = call(op, g, backend)
        assert out.dtype == out_dtype(op, dtype)
        by_hand = call(op, {**x, qn: x[qn].to(dtype), dn: x[dn].to(dtype)}, backend)
        torch.testing.assert_close(out, by_hand, atol=0, rtol=0)
        if differentiable(op):
            out.float().sum().backward()
            assert g[qn].grad.dtype == g[qn].dtype and torch.isfinite(g[qn].grad).all()


@pytest.mark.gpu
@pytest.mark.parametrize("op", OPS)
def test_cuda_autocast(op):
    """The same under CUDA autocast (bf16) on the default backend of a GPU (Triton, or the CUDA kernel for
    maxsim_ragged)."""
    x = {k: v.cuda() for k, v in inputs(op).items()}
    qn, dn = token_names(op)
    g = with_grad(x, op)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = call(op, g, "auto")
    assert out.dtype == out_dtype(op, torch.bfloat16)
    by_hand = call(op, {**x, qn: x[qn].bfloat16(), dn: x[dn].bfloat16()}, "auto")
    torch.testing.assert_close(out, by_hand, atol=0, rtol=0)
    if differentiable(op):
        out.float().sum().backward()
        assert g[qn].grad.dtype == torch.float32


@pytest.mark.parametrize("op", [op for op in OPS if differentiable(op)])
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_float64_gradcheck(op, backend):
    """float64 runs in float64 on cpu and reference (fp64 results), and torch.autograd.gradcheck passes for both
    token inputs (masks with padding, grad_output != 1 inside gradcheck)."""
    x = inputs(op, B=2, m=3, n=4, h=5, seed=3, dtype=torch.float64)
    qn, dn = token_names(op)
    assert call(op, x, backend).dtype == out_dtype(op, torch.float64)
    # maxsim: away from ties the max is smooth; these seeded tokens have no near ties at gradcheck's eps
    assert torch.autograd.gradcheck(lambda a, b: call(op, {**x, qn: a, dn: b}, backend),
                                    (x[qn].clone().requires_grad_(), x[dn].clone().requires_grad_()))


def test_ragged_float64_matches_the_oracle():
    """maxsim_ragged (no autograd) computes fp64 tokens in fp64 on cpu, equal to the reference."""
    x = inputs("maxsim_ragged", dtype=torch.float64)
    got = call("maxsim_ragged", x, "cpu")
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, call("maxsim_ragged", x, "reference"), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("op, backend", DIFF, ids=DIFF_IDS)
def test_torch_func_grad(op, backend):
    """torch.func.grad of a scalar of the op equals autograd's gradient (the custom ops' autograd has setup_context)."""
    _skip_missing(backend, op)
    x = inputs(op)
    qn, dn = token_names(op)

    def loss(a, b):
        return call(op, {**x, qn: a, dn: b}, backend).float().pow(2).sum()

    gq, gd = torch.func.grad(loss, argnums=(0, 1))(x[qn], x[dn])
    a, b = x[qn].clone().requires_grad_(), x[dn].clone().requires_grad_()
    loss(a, b).backward()
    torch.testing.assert_close(gq, a.grad)
    torch.testing.assert_close(gd, b.grad)


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
def test_meta_and_fake_tensors(op, backend):
    """On meta tensors and under FakeTensorMode the op gives the real call's shape and dtype without computing (the
    custom ops' register_fake; no value is read)."""
    _skip_missing(backend, op)
    x = inputs(op)
    real = call(op, x, backend)
    if backend != "triton":  # the Triton interpreter runs CPU tensors only
        meta = call(op, {k: v.to("meta") for k, v in x.items()}, backend)
        assert meta.device.type == "meta" and meta.shape == real.shape and meta.dtype == real.dtype
    with FakeTensorMode() as mode:
        fake = call(op, {k: mode.from_tensor(v) for k, v in x.items()}, backend)
        assert fake.shape == real.shape and fake.dtype == real.dtype
        if differentiable(op):
            g = with_grad({k: mode.from_tensor(v) for k, v in x.items()}, op)
            call(op, g, backend).float().sum().backward()
            assert g["q"].grad.shape == x["q"].shape


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
def test_torch_compile_fullgraph(op, backend):
    """torch.compile(fullgraph=True) of the public function traces without a graph break (no host sync, no backend
    import inside the graph) and gives the eager values and gradients, with a gradient and under no_grad."""
    _skip_missing(backend, op)
    torch._dynamo.reset()
    x = inputs(op)
    qn, dn = token_names(op)
    compiled = torch.compile(lambda a, b: call(op, {**x, qn: a, dn: b}, backend), fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x[qn], x[dn]), call(op, x, backend))
    if not differentiable(op):
        return
    a, b = x[qn].clone().requires_grad_(), x[dn].clone().requires_grad_()
    compiled(a, b).float().sum().backward()
    e = with_grad(x, op)
    call(op, e, backend).float().sum().backward()
    torch.testing.assert_close(a.grad, e[qn].grad)
    torch.testing.assert_close(b.grad, e[dn].grad)
