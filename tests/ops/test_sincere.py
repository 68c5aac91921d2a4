"""sincere (SINCERE / SoftCSE) against the fp64 oracle: value and every gradient, fp32/fp16, odd shapes,
label layouts, SoftCSE weights, anchors whose negatives all have weight 0 (bad input: test_sincere_errors.py)."""

from __future__ import annotations

import importlib
import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import _chunked_gemm, cpu_budget, sincere
from tests.ops._harness import backends, compare, linear_weights

sincere_ops = importlib.import_module("spherekit.ops.sincere")  # the module (the package exports the function)

BACKENDS = backends("sincere")
DTYPES = [torch.float32, torch.float16]
SHAPES = [(3, 41), (37, 64), (70, 19)]  # B = 2 can have no positive AND a negative: see test_sincere_errors.py
LAYOUTS = ["few", "many", "singletons"]
N_ANGLES = 12
ANGLES = torch.arange(N_ANGLES, dtype=torch.float64) * (math.pi / 6)  # 12 labels, i * 30 degrees
# SoftCSE log-weights log(1 - cos(theta_a - theta_b)); the diagonal is -inf (weight 0)
SOFTCSE_BIAS = torch.log1p(-torch.cos(ANGLES[:, None] - ANGLES[None, :]))


@pytest.fixture(autouse=True)
def small_cpu_chunks(monkeypatch):
    """Force both paths through several (uneven) row chunks even at these small batch sizes: the streaming one on
    the cpu backend (cpu_budget), the one-pass one on every backend (_chunked_gemm: 1,000 elements a chunk)."""
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", 1000)
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    for device in ("cpu", "cuda"):
        monkeypatch.setitem(_chunked_gemm.DEFAULT_WORKSPACE_BYTES, device, 4000)


def _labels(B, layout, gen):
    if layout == "few":  # three labels, many positives each
        y = torch.tensor([0, 1, 6])[torch.randint(0, 3, (B,), generator=gen)]
    elif layout == "many":  # all 12 labels, few positives each
        y = torch.randint(0, N_ANGLES, (B,), generator=gen)
    else:  # labels 10 and 11 once each: anchors without positives
        y = torch.randint(0, 4, (B,), generator=gen)
        y[-2:] = torch.tensor([10, 11])[: max(0, B - 2)]
    y[1] = y[0]  # at least one positive pair
    if B > 2 and bool((y == y[0]).all()):
        y[-1] = (y[0] + 5) % N_ANGLES
    return y


def _case(B, d, layout, *, seed=0):
    gen = torch.Generator().manual_seed(seed)
    e = F.normalize(torch.randn(B, d, generator=gen, dtype=torch.float64), dim=-1)
    return e, _labels(B, layout, gen)


def _run_and_compare(e64, labels, dtype, backend, *, label_bias=None, tau=0.07, grad_conditioning=0.0):
    """The op on `backend` against the oracle (tests/ops/_harness.py): the loss (a finite fp32 scalar; the one-pass
    op on the cpu backend), d_embeddings and d_temperature (grad_output 0.7); grad_conditioning: the relative error
    allowed in the gradients on top of the 2x rule (tests/_oracle.py)."""
    inputs = dict(embeddings=e64, labels=labels, temperature=torch.tensor(tau, dtype=torch.float64),
                  label_bias=label_bias)
    out = compare(partial(sincere, backend=backend), reference.sincere, inputs, dtype, ("embeddings", "temperature"),
                  params=("temperature",), consts=("label_bias",), weights=linear_weights,
                  grad_conditioning=grad_conditioning)
    assert out.dtype == torch.float32 and out.shape == ()
    if backend == "cpu":  # a scalar loss with gradients: the one-pass op
        assert "SincereChunked" in out.grad_fn.name()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("softcse", [False, True], ids=["sincere", "softcse"])
def test_values_and_grads(backend, dtype, shape, layout, softcse):
    e, y = _case(*shape, layout, seed=shape[0] + len(layout))
    _run_and_compare(e, y, dtype, backend, label_bias=SOFTCSE_BIAS if softcse else None)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_anchor_whose_negatives_all_have_weight_zero(backend, dtype):
    """Label 0 gives weight 0 to every other label: its anchors get L_i = -inf, loss 0, no NaN anywhere."""
    e, _ = _case(29, 41, "few", seed=11)
    y = torch.tensor([0, 1, 2, 3]).repeat(8)[:29]
    bias = torch.randn(4, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    bias[0, 1:] = float("-inf")
    bias[2, 3] = float("-inf")  # partial: label 2 still has weight on labels 0 and 1
    _run_and_compare(e, y, dtype, backend, label_bias=bias)


@pytest.mark.parametrize("backend", BACKENDS)
def test_smallest_temperature_keeps_everything_finite_and_accurate(backend):
    """At the smallest temperature allowed (1e-4: logits up to 1e4, d_temperature ~ 1e8) the loss and both
    gradients are as accurate as the same-precision torch computation (issue 16: 1e-39 gave NaN).
    fp32 only: in fp16 the torch computation that sets the error bound overflows itself.

    Here every fp32 logit (|s| up to 1/tau = 1e4) is rounded by up to eps / tau = 1.2e-3, and each softmax weight
    carries that relative error. torch's autograd reuses the forward's weights; a fused kernel recomputes the
    logits in its backward pass (the Triton one also takes s_ij for s_ji), rounding them anew, so the weights of
    its two passes can differ by that much (the interpreter on an AMD EPYC: 2.8e-4 of the gradient's scale, 4.5x
    torch's error; it was within 2x on an Intel Xeon). The Triton kernel's gradients get eps / tau of their scale
    on top of the 2x rule (the cpu backend stays under the plain rule); an overflow or a wrong log-sum-exp is off
    by the whole scale."""
    e, y = _case(45, 19, "many", seed=4)
    tau = 1e-4
    conditioning = torch.finfo(torch.float32).eps / tau if backend == "triton" else 0.0
    _run_and_compare(e, y, torch.float32, backend, tau=tau, grad_conditioning=conditioning)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_bias_and_large_logits(backend):
    """A general (asymmetric) bias with a small temperature: logits up to 1/tau = 50."""
    e, y = _case(45, 19, "many", seed=4)
    bias = torch.randn(N_ANGLES, N_ANGLES, generator=torch.Generator().manual_seed(9), dtype=torch.float64) * 2
    _run_and_compare(e, y, torch.float32, backend, label_bias=bias, tau=0.02)


@pytest.mark.parametrize("backend", ["cpu", "triton", "reference"])
def test_temperature_float_and_tensor_agree(backend):
    e, y = _case(21, 16, "few", seed=3)
    e = e.float()
    a = sincere(e, y, temperature=0.1, label_bias=SOFTCSE_BIAS.float(), backend=backend)
    b = sincere(e, y, temperature=torch.tensor(0.1), label_bias=SOFTCSE_BIAS.float(), backend=backend)
    ref = reference.sincere(e, y, temperature=0.1, label_bias=SOFTCSE_BIAS.float())
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_temperature_grad_only(backend):
    """Frozen embeddings: only the temperature receives a gradient (the kernel skips dE)."""
    e, y = _case(33, 24, "many", seed=6)
    e = e.float()
    tau = torch.tensor(0.07, requires_grad=True)
    (0.7 * sincere(e, y, temperature=tau, backend=backend)).backward()
    tau_ref = torch.tensor(0.07, dtype=torch.float64, requires_grad=True)
    (0.7 * reference.sincere(e.double(), y, temperature=tau_ref, compute_dtype=torch.float64)).backward()
    torch.testing.assert_close(tau.grad.double(), tau_ref.grad, atol=1e-5, rtol=1e-5)


def test_bf16_runs_on_cpu():
    e, y = _case(20, 16, "few", seed=8)
    x = e.bfloat16().requires_grad_()
    loss = sincere(x, y, backend="cpu")
    loss.backward()
    ref = reference.sincere(e.bfloat16().double(), y, compute_dtype=torch.float64)
    assert x.grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss.double(), ref, atol=1e-4, rtol=1e-4)


def test_label_bias_in_any_float_dtype_gives_the_same_loss():
    e, y = _case(40, 16, "many", seed=12)
    e = e.float()
    losses = [sincere(e, y, label_bias=SOFTCSE_BIAS.to(dt), backend="cpu") for dt in (torch.float64, torch.float32)]
    torch.testing.assert_close(losses[0], losses[1])


def test_torch_compile_traces_through_the_custom_op():
    e, y = _case(12, 16, "few", seed=1)
    x = e.float().requires_grad_()
    lb = SOFTCSE_BIAS.float()
    fn = torch.compile(lambda x_: sincere(x_, y, label_bias=lb, backend="cpu"), backend="aot_eager", fullgraph=False)
    got = fn(x)
    got.backward()
    x_ref = e.float().requires_grad_()
    ref = reference.sincere(x_ref, y, label_bias=lb)
    ref.backward()
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-5)


def test_opcheck():
    from spherekit.reference.contrastive import sincere_bias_shift

    e, y = _case(9, 16, "few", seed=2)
    e = e.float()
    lb = SOFTCSE_BIAS.float()
    shift = sincere_bias_shift(y, lb)
    tau = torch.tensor(0.05)
    args = (e, y, tau, lb, shift, "cpu")
    utils = ("test_schema", "test_faketensor")
    torch.library.opcheck(torch.ops.spherekit.sincere_fwd.default, args, test_utils=utils)
    _, lse, usum, npos = torch.ops.spherekit.sincere_fwd(*args)
    bwd_args = (torch.full((9,), 0.1), e, y, tau, lb, shift, lse, usum, npos, True, True, "cpu")
    torch.library.opcheck(torch.ops.spherekit.sincere_bwd.default, bwd_args, test_utils=utils)
    for backend in BACKENDS:
        for need in ((True, True), (True, False), (False, True)):
            torch.library.opcheck(torch.ops.spherekit.sincere_chunked.default,
                                  args[:-1] + need + (backend, 3 * 9 * 4), test_utils=utils)


def _rows_fp64(e, y, tau, label_bias, shift):
    """Per-anchor oracle in fp64 (materialising): (1/|P_i|) sum_{j in P_i} softplus(L_i - s_ij), 0 without P_i."""
    s = e @ e.T / tau
    same = y[:, None] == y[None, :]
    pos = same & ~torch.eye(len(y), dtype=torch.bool)
    z = s if label_bias is None else s + label_bias[y][:, y] + shift[:, None]
    L = torch.logsumexp(z.masked_fill(same, float("-inf")), dim=1)
    terms = torch.where(pos, F.softplus(L[:, None] - s), torch.zeros_like(s))
    return terms.sum(1) / pos.sum(1).clamp_min(1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("softcse", [False, True], ids=["sincere", "softcse"])
def test_custom_op_with_per_row_upstream_gradients(backend, softcse):
    """The fwd/bwd ops (through their autograd Function) are general in the per-anchor upstream gradient (the public
    mean makes it uniform)."""
    from spherekit.reference.contrastive import sincere_bias_shift

    e64, y = _case(41, 24, "singletons", seed=13)
    lb = SOFTCSE_BIAS if softcse else None
    shift = None if lb is None else sincere_bias_shift(y, lb.float())
    w = torch.linspace(-1.0, 2.0, 41, dtype=torch.float64)
    e = e64.float().requires_grad_()
    tau = torch.tensor(0.1, requires_grad=True)
    rows, lse, usum, npos = sincere_ops._SincereStreaming.apply(e, y, tau, None if lb is None else lb.float(), shift,
                                                                backend)
    (rows * w.float()).sum().backward()
    e_ref = e64.clone().requires_grad_()
    tau_ref = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    rows_ref = _rows_fp64(e_ref, y, tau_ref, lb, None if shift is None else shift.double())
    (rows_ref * w).sum().backward()
    torch.testing.assert_close(rows.double(), rows_ref, atol=2e-6, rtol=1e-6)
    torch.testing.assert_close(npos, (y[:, None] == y[None, :]).sum(1).float() - 1)
    torch.testing.assert_close(e.grad.double(), e_ref.grad, atol=2e-6, rtol=1e-5)
    torch.testing.assert_close(tau.grad.double(), tau_ref.grad, atol=2e-5, rtol=1e-5)


def _zero_weight_bias():
    """Label 0 gives weight 0 to every other label: its anchors get L_i = -inf."""
    bias = torch.randn(N_ANGLES, N_ANGLES, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    bias[0, 1:] = float("-inf")
    bias[2, 3] = float("-inf")
    return bias


@pytest.mark.parametrize("case", ["sincere", "softcse", "zero_weight"])
@pytest.mark.parametrize("tau_grad", [True, False])
def test_cpu_scalar_loss_takes_the_one_pass_path_and_matches_the_two_pass_one(case, tau_grad):
    """sincere() with grad on the cpu backend runs forward_backward; it must equal the generic forward +
    recomputing backward ops (same mean over anchors with a positive), values and gradients."""
    from spherekit.reference.contrastive import sincere_bias_shift

    e64, y = _case(53, 24, "singletons", seed=21)
    lb = {"sincere": None, "softcse": SOFTCSE_BIAS, "zero_weight": _zero_weight_bias()}[case]
    lb = None if lb is None else lb.float()
    e = e64.float().requires_grad_()
    tau = torch.tensor(0.07, requires_grad=tau_grad)
    ins = (e, tau) if tau_grad else (e,)
    fused = sincere(e, y, temperature=tau, label_bias=lb, backend="cpu")
    assert "SincereChunked" in fused.grad_fn.name()
    g1 = torch.autograd.grad(fused * 0.7, ins)
    shift = None if lb is None else sincere_bias_shift(y, lb)
    rows, lse, _, npos = sincere_ops._SincereStreaming.apply(e, y, tau, lb, shift, "cpu")
    if case == "zero_weight":
        assert bool(torch.isneginf(lse).any())
    two_pass = rows.sum() / (npos > 0).sum()
    g2 = torch.autograd.grad(two_pass * 0.7, ins)
    torch.testing.assert_close(fused, two_pass, atol=1e-6, rtol=1e-6)
    for a, b in zip(g1, g2):
        assert a.dtype == b.dtype and torch.isfinite(a).all()
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    with torch.no_grad():  # no gradient wanted: the two-pass forward, same value
        torch.testing.assert_close(sincere(e, y, temperature=tau, label_bias=lb, backend="cpu"), fused)


@pytest.mark.parametrize("seed", range(4))
def test_bias_shift_from_label_counts_equals_the_oracles(seed):
    """The op's O(B + E^2) shift (label counts) equals the oracle's B x B computation, including anchors whose
    label fills the batch (no negatives: shift 0) and labels absent from the batch."""
    from spherekit.ops.sincere import sincere_bias_shift as fast
    from spherekit.reference.contrastive import sincere_bias_shift as oracle

    g = torch.Generator().manual_seed(seed)
    n_labels = 7
    labels = torch.randint(0, 4, (13,), generator=g)  # labels 4..6 never occur
    lb = torch.randn(n_labels, n_labels, generator=g)
    torch.testing.assert_close(fast(labels, lb), oracle(labels, lb), atol=1e-6, rtol=1e-6)
    same = torch.full((5,), 2)
    assert torch.equal(fast(same, lb), torch.zeros(5)) and torch.equal(oracle(same, lb), torch.zeros(5))
