"""info_nce against the fp64 oracle: values and every gradient, fp32/fp16, odd shapes, every flag."""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import info_nce
from spherekit.ops import _chunked_gemm
from tests.ops._harness import backends, compare, linear_weights

BACKENDS = backends("info_nce")
DTYPES = [torch.float32, torch.float16]
# (B, N, d, k): one row, N = B + 1 (one extra negative), non-powers of two, k hard negatives or none
SHAPES = [(1, 2, 41, 1), (37, 38, 41, 3), (16, 33, 64, None), (5, 71, 19, 2)]


def _unit(*shape, gen):
    return F.normalize(torch.randn(*shape, generator=gen, dtype=torch.float64), dim=-1)


def _case(B, N, d, k, *, seed=0, labels=False, bias=False, ignore=False, targets=False):
    gen = torch.Generator().manual_seed(seed)
    case = dict(queries=_unit(B, d, gen=gen), candidates=_unit(N, d, gen=gen),
                hard_negatives=None if k is None else _unit(B, k, d, gen=gen))
    t = torch.randperm(N, generator=gen)[:B] if targets else torch.arange(B)
    if ignore and B > 1:
        t = t.clone()
        t[::3] = -100
    case["targets"] = t
    if labels:
        E = 4
        cl = torch.randint(0, E, (N,), generator=gen)
        ql = torch.where(t >= 0, cl[t.clamp_min(0)], torch.randint(0, E, (B,), generator=gen))
        cl[: min(E, N)] = torch.arange(min(E, N))  # every label has candidates: no empty denominator
        ql = torch.where(t >= 0, cl[t.clamp_min(0)], ql)
        case.update(query_labels=ql, candidate_labels=cl)
        if bias:
            case["label_bias"] = torch.randn(E, E, generator=gen, dtype=torch.float64) * 0.5
    return case


def _run_and_compare(case, dtype, backend, *, reduction="none", tau_grad=False, tau=0.07, op_opts=None, **opts):
    """The op on `backend` against the oracle (tests/ops/_harness.py): loss (fp32), the gradients of the queries,
    candidates and hard negatives, and the temperature's when tau_grad."""
    inputs = {**case, "temperature": torch.tensor(tau, dtype=torch.float64)}
    grads = [k for k in ("queries", "candidates", "hard_negatives") if case[k] is not None]
    if tau_grad:
        grads.append("temperature")
    out = compare(partial(info_nce, reduction=reduction, **opts, **(op_opts or {}), backend=backend),
                  partial(reference.info_nce, reduction=reduction, **opts), inputs, dtype, grads,
                  params=("temperature",), consts=("label_bias",), weights=linear_weights)
    assert out.dtype == torch.float32


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
@pytest.mark.parametrize("reduction", ["none", "mean"])  # cpu + mean: the one-pass forward_backward path
def test_values_and_grads(backend, dtype, shape, mode, reduction):
    case = _case(*shape)
    modes = {} if case["hard_negatives"] is None else dict(hard_negative_mode=mode)  # a mode needs hard negatives
    _run_and_compare(case, dtype, backend, reduction=reduction, **modes)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 7, 23])  # chunks of the one-pass path: one row each, uneven (7+7+7+2), one
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_chunked_path_over_its_chunkings(backend, dtype, rows, reduction, monkeypatch):
    """The one-pass path (a scalar loss with grad) against the oracle over several chunkings of the rows, with
    labels, label bias, ignored rows, shuffled targets, hard negatives in both terms and the temperature's grad."""
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    case = _case(23, 45, 41, 2, seed=4, labels=True, bias=True, ignore=True, targets=True)
    element = 4 if backend == "cpu" else torch.finfo(dtype).bits // 8
    _run_and_compare(case, dtype, backend, reduction=reduction, hard_negative_mode="both", tau_grad=True,
                     op_opts=dict(workspace_bytes=rows * 45 * element))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_labels_bias_ignore_targets_tau_grad(backend, dtype):
    case = _case(23, 45, 41, 2, seed=3, labels=True, bias=True, ignore=True, targets=True)
    _run_and_compare(case, dtype, backend, hard_negative_mode="both", tau_grad=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_smallest_temperature_keeps_everything_finite_and_accurate(backend):
    """At the smallest temperature allowed (1e-4: logits up to 1e4 for unit vectors, d_temperature ~ 1e8) the
    loss and every gradient are as accurate as the same-precision torch computation (issue 16: 1e-39 gave NaN).
    fp32 only: in fp16 the torch computation that sets the error bound overflows itself."""
    case = _case(23, 45, 41, 2, seed=3, labels=True, bias=True, ignore=True, targets=True)
    _run_and_compare(case, torch.float32, backend, hard_negative_mode="both", tau_grad=True, tau=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reductions_with_ignored_rows(backend, reduction):
    case = _case(19, 20, 33, 2, seed=5, ignore=True, labels=True)
    _run_and_compare(case, torch.float32, backend, reduction=reduction, tau_grad=True,
                     bce_weight=0.3, bce_scale=10.0, bce_bias=-3.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_frozen_bank_gets_no_gradient(backend):
    case = _case(9, 300, 24, None, seed=7, targets=True)
    q = case["queries"].float().requires_grad_()
    bank = case["candidates"].float().requires_grad_()
    loss = info_nce(q, bank, case["targets"], candidate_grad=False, backend=backend)
    loss.backward()
    assert bank.grad is None and q.grad is not None
    ref = reference.info_nce(q.detach(), bank.detach(), case["targets"])
    torch.testing.assert_close(loss, ref, atol=1e-5, rtol=1e-5)


def test_all_rows_ignored_gives_zero():
    q = F.normalize(torch.randn(4, 8), dim=-1).requires_grad_()
    t = torch.full((4,), -100)
    loss = info_nce(q, q.detach(), t, backend="cpu")
    loss.backward()
    assert loss.item() == 0.0 and torch.all(q.grad == 0)


@pytest.mark.parametrize("backend", ["cpu", "triton", "reference"])
def test_temperature_float_and_tensor_agree(backend):
    case = _case(7, 9, 16, 2)
    q, c, h = (case[k].float() for k in ("queries", "candidates", "hard_negatives"))
    a = info_nce(q, c, None, h, temperature=0.1, backend=backend)
    b = info_nce(q, c, None, h, temperature=torch.tensor(0.1), backend=backend)
    torch.testing.assert_close(a, b)


def test_torch_compile_traces_through_the_custom_op():
    case = _case(8, 12, 16, 2)
    q, c, h = (case[k].float() for k in ("queries", "candidates", "hard_negatives"))
    q.requires_grad_()
    fn = torch.compile(lambda q_, c_, h_: info_nce(q_, c_, None, h_, backend="cpu"), backend="aot_eager",
                       fullgraph=False)
    got = fn(q, c, h)
    got.backward()
    ref_q = q.detach().clone().requires_grad_()
    ref = reference.info_nce(ref_q, c, None, h)
    ref.backward()
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(q.grad, ref_q.grad, atol=1e-5, rtol=1e-5)


def test_opcheck():
    case = _case(6, 9, 16, 2, labels=True, bias=True)
    q, c, h = (case[k].float() for k in ("queries", "candidates", "hard_negatives"))
    args = (q, c, case["targets"], h, torch.tensor(0.05), case["query_labels"], case["candidate_labels"],
            case["label_bias"].float(), True, 0.5, 20.0, -10.0, "cpu")
    torch.library.opcheck(torch.ops.spherekit.info_nce_fwd.default, args,
                          test_utils=("test_schema", "test_faketensor"))
    for backend in BACKENDS:
        for accumulator in ("input", "fp32"):
            torch.library.opcheck(torch.ops.spherekit.info_nce_chunked.default,
                                  args[:-1] + ("mean", True, True, True, True, backend, 4 * 9 * 4, accumulator),
                                  test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_loss_takes_the_chunked_path_and_matches_the_two_pass_one(backend, monkeypatch):
    """reduction="mean" with grad runs the chunked one-pass path (here over 4 chunks of 8 rows); it must equal the
    generic forward + recomputing backward (reduction="none", then the same mean)."""
    case = _case(29, 31, 24, 2, seed=9, ignore=True, labels=True, bias=True)
    q, c, h = (case[k].float().requires_grad_() for k in ("queries", "candidates", "hard_negatives"))
    kw = dict(hard_negative_mode="both", query_labels=case["query_labels"], candidate_labels=case["candidate_labels"],
              label_bias=case["label_bias"].float(), backend=backend)
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    fused = info_nce(q, c, case["targets"], h, workspace_bytes=8 * 31 * 4, **kw)
    assert "InfoNCEChunked" in fused.grad_fn.name()
    g1 = torch.autograd.grad(fused * 0.7, (q, c, h))
    rows = info_nce(q, c, case["targets"], h, reduction="none", **kw)
    two_pass = rows.sum() / (case["targets"] != -100).sum()
    g2 = torch.autograd.grad(two_pass * 0.7, (q, c, h))
    torch.testing.assert_close(fused, two_pass, atol=1e-6, rtol=1e-6)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_launcher_gradients_come_in_the_input_dtype_rounded_once():
    """The kernels store fp16 gradients straight from their fp32 accumulators (no fp32 buffer and cast): equal,
    bit for bit, to the fp32 gradients rounded to fp16, with hard negatives and BCE as well."""
    from spherekit.kernels import info_nce as kernels

    g = torch.Generator().manual_seed(5)
    q, c, h = (F.normalize(torch.randn(*s, generator=g), dim=-1).half() for s in ((40, 32), (56, 32), (40, 1, 32)))
    t, tau = torch.arange(40), torch.tensor(0.05)
    opts = dict(hn_softmax=False, bce_weight=0.5, bce_scale=20.0, bce_bias=0.0)
    _, lse = kernels.info_nce_fwd(q, c, t, h, tau, None, None, None, **opts)
    need = dict(need_dq=True, need_dc=True, need_dh=True, need_dtau=False)
    half = kernels.info_nce_bwd(torch.full((40,), 1 / 40), q, c, t, h, tau, None, None, None, lse, **opts, **need)
    full = kernels.info_nce_bwd(torch.full((40,), 1 / 40), q, c, t, h, tau, None, None, None, lse, **opts, **need,
                                grad_dtype=torch.float32)
    for name, a, b in zip(("dq", "dc", "dh"), half, full):
        assert a.dtype == torch.float16 and b.dtype == torch.float32, name
        assert torch.equal(a, b.half()), name


def test_fp16_backward_keeps_tiny_gradients_out_of_the_subnormal_range():
    """tau = 1 spreads the softmax (p ~ 1/N) and the upstream gradient is 1e-6 per row, so the raw
    dot-gradients are ~ 1e-8: flushed to zero in fp16 unless the kernel rescales the tile first. The
    launcher's results are asked for in fp32 (grad_dtype; by default they are fp16, where 1e-6 is itself
    subnormal)."""
    from spherekit.kernels import info_nce as kernels

    g = torch.Generator().manual_seed(11)
    q = F.normalize(torch.randn(48, 16, generator=g, dtype=torch.float64), dim=-1).half()
    c = F.normalize(torch.randn(64, 16, generator=g, dtype=torch.float64), dim=-1).half()
    t, tau = torch.arange(48), torch.tensor(1.0)
    grad_rows = torch.full((48,), 1e-6)
    opts = dict(hn_softmax=False, bce_weight=0.0, bce_scale=20.0, bce_bias=-10.0)
    _, lse = kernels.info_nce_fwd(q, c, t, None, tau, None, None, None, **opts)
    dq, dc, _, _ = kernels.info_nce_bwd(grad_rows, q, c, t, None, tau, None, None, None, lse, **opts, need_dq=True,
                                        need_dc=True, need_dh=False, need_dtau=False, grad_dtype=torch.float32)
    q_o, c_o = q.double().requires_grad_(), c.double().requires_grad_()
    (reference.info_nce(q_o, c_o, temperature=1.0, reduction="none", compute_dtype=torch.float64) * 1e-6).sum() \
        .backward()
    for got, want in ((dq, q_o.grad), (dc, c_o.grad)):
        rel = (got.double() - want).abs().max() / want.abs().max()
        assert rel < 2e-3, f"relative error {rel:.2e}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_hard_negatives_in_no_term_get_a_zero_gradient(backend):
    """bce_weight=0 in "bce" mode: the hard negatives take part in no term; their gradient is 0 (not an error)."""
    case = _case(9, 11, 16, 2, seed=2)
    q, c, h = (case[k].float().requires_grad_() for k in ("queries", "candidates", "hard_negatives"))
    loss = info_nce(q, c, None, h, hard_negative_mode="bce", bce_weight=0.0, backend=backend)
    loss.backward()
    assert torch.equal(h.grad, torch.zeros_like(h))
    torch.testing.assert_close(loss, info_nce(q, c, backend=backend))
