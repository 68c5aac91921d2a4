"""soft_align (F2) against the fp64 oracle: value and the gradients of q, d, lam and tau, fp32/fp16, ragged
masks, m or n = 1, sizes off the block grid, normalize on/off, grad_output != 1, backends cpu (forced through
several chunks), triton (interpreter) and reference."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from spherekit.ops import soft_align
from spherekit.reference import sim_map as ref
from tests.ops._harness import backends, compare
from tests.ops._sim_map_cases import DTYPES, need_triton, ragged_mask, small_cpu_chunks, tokens  # noqa: F401

BACKENDS = backends("soft_align")
SHAPES = [(3, 37, 41, 24), (2, 1, 9, 16), (3, 6, 1, 8), (4, 20, 7, 32)]  # (B, m, n, h)


@pytest.fixture(autouse=True)
def _chunks(small_cpu_chunks):  # noqa: F811
    pass


def _case(shape, seed, lam=0.15, tau=0.2):
    B, m, n, h = shape
    return dict(q=tokens(B, m, h, seed=seed), q_mask=ragged_mask(B, m, seed=seed + 1),
                d=tokens(B, n, h, seed=seed + 2), d_mask=ragged_mask(B, n, seed=seed + 3),
                lam=torch.tensor(lam, dtype=torch.float64), tau=torch.tensor(tau, dtype=torch.float64))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("normalize", [True, False])
def test_values_and_grads(backend, dtype, shape, normalize):
    if backend == "triton":
        need_triton("soft_align")
    inputs = _case(shape, seed=shape[1] + 3 * shape[2], tau=0.2 if normalize else 2.0)
    out = compare(partial(soft_align, normalize=normalize, backend=backend),
                  partial(ref.soft_align, normalize=normalize), inputs, dtype, ("q", "d", "lam", "tau"),
                  params=("lam", "tau"))
    assert out.shape == (shape[0],) and out.dtype == torch.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_sharp_softmax_and_negative_lam(backend):
    """tau = 0.02 (logits up to 50 apart) and lam < 0 (a learnable lam may cross 0)."""
    if backend == "triton":
        need_triton("soft_align")
    inputs = _case((3, 13, 29, 16), seed=4, lam=-0.05, tau=0.02)
    compare(partial(soft_align, backend=backend), ref.soft_align, inputs, torch.float32, ("q", "d", "lam", "tau"),
            params=("lam", "tau"))


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_float_and_tensor_parameters_agree(backend):
    if backend == "triton":
        need_triton("soft_align")
    x = _case((2, 5, 7, 8), seed=9)
    q, qm, d, dm = x["q"].float(), x["q_mask"], x["d"].float(), x["d_mask"]
    a = soft_align(q, d, q_mask=qm, d_mask=dm, lam=0.3, tau=0.25, backend=backend)
    b = soft_align(q, d, q_mask=qm, d_mask=dm, lam=torch.tensor(0.3), tau=torch.tensor(0.25), backend=backend)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, ref.soft_align(q, qm, d, dm, lam=0.3, tau=0.25))


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_lam_and_tau_learn(backend):
    """Frozen tokens: gradients reach lam and tau only (the kernels skip grad_q / grad_d)."""
    if backend == "triton":
        need_triton("soft_align")
    x = _case((3, 9, 11, 16), seed=12)
    lam = torch.tensor(0.1, requires_grad=True)
    tau = torch.tensor(0.1, requires_grad=True)
    (soft_align(x["q"].float(), x["d"].float(), q_mask=x["q_mask"], d_mask=x["d_mask"], lam=lam, tau=tau,
                backend=backend)
     * torch.tensor([0.5, -1.0, 2.0])).sum().backward()
    lam64 = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    tau64 = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    (ref.soft_align(x["q"], x["q_mask"], x["d"], x["d_mask"], lam=lam64, tau=tau64, compute_dtype=torch.float64)
     * torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)).sum().backward()
    torch.testing.assert_close(lam.grad.double(), lam64.grad, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(tau.grad.double(), tau64.grad, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_padding_never_contributes(backend):
    if backend == "triton":
        need_triton("soft_align")
    x = _case((2, 8, 10, 16), seed=21)
    q, qm, d, dm = x["q"].float(), x["q_mask"], x["d"].float(), x["d_mask"]
    outs = []
    for scale in (1.0, -40.0):
        qx = torch.where(qm[..., None], q, q * scale).requires_grad_()
        dx = torch.where(dm[..., None], d, d * scale).requires_grad_()
        out = soft_align(qx, dx, q_mask=qm, d_mask=dm, backend=backend)
        out.sum().backward()
        assert bool((qx.grad[~qm] == 0).all()) and bool((dx.grad[~dm] == 0).all())
        outs.append(out.detach())
    torch.testing.assert_close(outs[0], outs[1])


def test_lam_zero_and_large_tau_is_the_mean_of_the_map():
    """lam = 0, tau -> inf: A is uniform over valid j, so the score is F0 (the global average)."""
    from spherekit.ops import global_avg_sim

    x = _case((3, 6, 9, 16), seed=31)
    q, qm, d, dm = x["q"].double(), x["q_mask"], x["d"].double(), x["d_mask"]
    torch.testing.assert_close(soft_align(q, d, q_mask=qm, d_mask=dm, lam=0.0, tau=1e9, backend="cpu"),
                               global_avg_sim(q, d, q_mask=qm, d_mask=dm, backend="cpu"))


def test_float64_gradcheck_through_the_custom_op():
    x = _case((2, 4, 5, 6), seed=41)
    lam = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
    tau = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    q, d = x["q"].requires_grad_(), x["d"].requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q_, d_, l_, t_: soft_align(q_, d_, q_mask=x["q_mask"], d_mask=x["d_mask"], lam=l_, tau=t_,
                                          backend="cpu"),
        (q, d, lam, tau))


def test_torch_compile_traces_through_the_custom_op():
    x = _case((2, 5, 7, 8), seed=51)
    q = x["q"].float().requires_grad_()
    tau = torch.tensor(0.2, requires_grad=True)
    fn = torch.compile(lambda q_, t_: soft_align(q_, x["d"].float(), q_mask=x["q_mask"], d_mask=x["d_mask"], tau=t_,
                                                 backend="cpu"),
                       backend="aot_eager", fullgraph=False)
    got = fn(q, tau)
    got.sum().backward()
    q_ref = x["q"].float().requires_grad_()
    tau_ref = torch.tensor(0.2, requires_grad=True)
    expected = ref.soft_align(q_ref, x["q_mask"], x["d"].float(), x["d_mask"], tau=tau_ref)
    expected.sum().backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(q.grad, q_ref.grad)
    torch.testing.assert_close(tau.grad, tau_ref.grad)


def test_opcheck():
    x = _case((2, 5, 7, 8), seed=61)
    q, d = x["q"].float().requires_grad_(), x["d"].float().requires_grad_()
    lam, tau = torch.tensor(0.1, requires_grad=True), torch.tensor(0.2, requires_grad=True)
    args = (q, x["q_mask"], d, x["d_mask"], lam, tau, "cpu")
    torch.library.opcheck(torch.ops.spherekit.soft_align_fwd.default, args)
    _, lse, rows = torch.ops.spherekit.soft_align_fwd(*args)
    bwd = (torch.rand(2), q.detach(), x["q_mask"], d.detach(), x["d_mask"], lam.detach(), tau.detach(), lse, rows,
           True, True, "cpu")
    torch.library.opcheck(torch.ops.spherekit.soft_align_bwd.default, bwd,
                          test_utils=("test_schema", "test_faketensor"))
