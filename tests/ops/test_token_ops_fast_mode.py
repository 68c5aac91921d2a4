"""The token-similarity ops in the default ("fast") check mode (issue 57, item 2): no host sync in forward or backward,
a number of launches that does not grow with the batch, a NaN / Inf input gives a NaN output (never a finite wrong
number, also with the GPU's NaN-dropping min / max emulated in the Triton interpreter), and an all-padding query or
document gets its documented value (0). The same inputs raise named errors in spherekit.checks("full")
(test_<op>_errors.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.ops._hot_path import count_launches, no_host_sync
from tests.ops._sim_map_cases import need_triton
from tests.ops._token_ops import OPS, call, cases, differentiable, inputs, token_names, with_grad

CASES = cases()
IDS = [f"{op}-{backend}" for op, backend in CASES]


def _skip_missing(backend: str, op: str) -> None:
    if backend == "triton":
        need_triton("maxsim" if op == "maxsim" else op)


def _fwd_bwd(op, x, backend):
    out = call(op, x, backend)
    if differentiable(op) and out.requires_grad:
        (out.float() * torch.linspace(0.5, 1.5, out.numel()).view(out.shape)).sum().backward()
    return out


@pytest.fixture
def gpu_nan_semantics(monkeypatch):
    """The Triton interpreter computes tl.maximum / tl.minimum and tl.clamp with numpy's NaN-propagating maximum,
    minimum and clip whatever their propagate_nan; a GPU returns the other operand for PropagateNan.NONE (the
    default). Emulate the GPU, so that a kernel relying on the default fails here as it would there (the interpreter's
    tl.max / tl.min reductions already drop NaN, as the GPU's do)."""
    from triton.language import PropagateNan
    from triton.runtime.interpreter import InterpreterBuilder

    monkeypatch.setattr(InterpreterBuilder, "create_maxnumf",
                        lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax))
    monkeypatch.setattr(InterpreterBuilder, "create_minnumf",
                        lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin))

    def clamp(self, arg, lo, hi, propagate_nans):
        if propagate_nans == PropagateNan.ALL:
            return self.ternary_op(arg, lo, hi, np.clip)
        return self.ternary_op(arg, lo, hi, lambda x, a, b: np.fmin(np.fmax(x, a), b))

    monkeypatch.setattr(InterpreterBuilder, "create_clampf", clamp)


def test_the_gpu_nan_emulation_drops_nan_like_a_gpu(gpu_nan_semantics):
    """The fixture is live: tl.maximum with the default propagate_nan drops a NaN, PropagateNan.ALL keeps it."""
    pytest.importorskip("triton")
    import triton
    import triton.language as tl

    @triton.jit
    def pair_max(out_ptr, x_ptr, y_ptr):
        o = tl.arange(0, 2)
        x, y = tl.load(x_ptr + o), tl.load(y_ptr + o)
        tl.store(out_ptr + o, tl.maximum(x, y))
        tl.store(out_ptr + 2 + o, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))

    out = torch.empty(4)
    pair_max[(1,)](out, torch.tensor([float("nan"), 1.0]), torch.tensor([2.0, float("nan")]))
    assert out[:2].tolist() == [2.0, 1.0] and torch.isnan(out[2:]).all()


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
def test_no_host_sync(op, backend):
    """Forward (with and without a gradient) and backward read no tensor value on the host."""
    _skip_missing(backend, op)
    x = inputs(op)
    with no_host_sync():
        with torch.no_grad():
            call(op, x, backend)
        _fwd_bwd(op, with_grad(x, op), backend)
    if op == "soft_align":  # tensor lam / tau: checked on the device (guard_scalar), not on the host
        tau = torch.tensor(0.2, requires_grad=True)
        with no_host_sync():
            call(op, with_grad(x, op), backend, lam=torch.tensor(0.1), tau=tau).sum().backward()
        assert tau.grad is not None


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
def test_launches_do_not_grow_with_the_batch(op, backend):
    """The aten operators and Triton kernels one call (forward, and forward + backward) dispatches are the same for a
    batch of 2 and of 5 (and documents of 6 or 9 tokens): no per-row or per-document host loop."""
    _skip_missing(backend, op)
    counts = []
    for B, n in ((2, 6), (5, 9)):
        x = inputs(op, B=B, n=n, seed=B)
        with torch.no_grad():
            _, aten, triton_launches = count_launches(call, op, x, backend)
        _, aten_bwd, triton_bwd = count_launches(_fwd_bwd, op, with_grad(x, op), backend)
        counts.append((aten, triton_launches, aten_bwd, triton_bwd))
    assert counts[0] == counts[1]
    if backend == "triton":
        assert counts[0][1] >= 1, "the triton backend launched no kernel"
        if op == "maxsim":
            assert counts[0][1] == 1 and counts[0][3] == 2, "maxsim: one forward kernel (+ one backward kernel)"


def _nan_at(x: dict, name: str, index, value: float) -> dict:
    t = x[name].clone()
    t[index] = value
    return {**x, name: t}


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_in_gives_non_finite_out(op, backend, value, gpu_nan_semantics):
    """A NaN or Inf in a valid token of query 0 (the tokens are normalised: Norm(Inf) is NaN) makes every output of
    that query non-finite and leaves the others finite; a NaN in a valid document token does the same for that
    document."""
    _skip_missing(backend, op)
    x = inputs(op)
    out = call(op, _nan_at(x, "q", (0, 0, 1) if op != "maxsim_ragged" else (0, 1), value), backend)
    if op == "maxsim_ragged":  # one query: every document's score
        assert not torch.isfinite(out).any()
    else:
        first, rest = out[0], out[1:]
        assert not torch.isfinite(first).all() and torch.isfinite(rest).all()
        if op in ("maxsim", "soft_align", "global_avg_sim"):
            assert torch.isnan(first).all()  # every score of query 0
        if op == "sim_map":  # row 0 against every valid document token: NaN in all three channels (sim, clamped;
            assert torch.isnan(first[0, x["d_mask"][0]]).all()  # rowmax of row 0; colmax, whose column holds it)
    d_name = token_names(op)[1]
    last = (0, -1, 2) if op != "maxsim_ragged" else (0, 2)  # a valid token of document 0
    out = call(op, _nan_at(x, d_name, last, value), backend)
    if op == "maxsim":
        assert torch.isnan(out[:, 0]).all() and torch.isfinite(out[:, 1:]).all()
    elif op == "maxsim_ragged":
        assert torch.isnan(out[0]) and torch.isfinite(out[1:]).all()
    elif op == "sim_map":
        assert not torch.isfinite(out[0]).all() and torch.isfinite(out[1:]).all()
    else:
        assert torch.isnan(out[0]) and torch.isfinite(out[1:]).all()


@pytest.mark.parametrize("op, backend", CASES, ids=IDS)
def test_all_padding_rows_get_their_documented_value(op, backend):
    """Without the full checks an all-padding query and an all-padding document (or an empty packed document) score 0
    (sim_map: a map of zeros), the others are unchanged, and the gradients are finite (zero for the padding rows)."""
    _skip_missing(backend, op)
    x = inputs(op, B=3)
    if op == "maxsim_ragged":
        empty_doc = {**x, "docs": x["docs"][1:], "offsets": torch.tensor([0, 0, 2, 6, 8])}  # 4 docs, doc 0 empty
        out = call(op, empty_doc, backend)
        assert out[0] == 0 and (out[1:] != 0).all()
        assert torch.equal(call(op, {**x, "q_mask": torch.zeros_like(x["q_mask"])}, backend), torch.zeros(3))
        return
    q_mask, d_mask = x["q_mask"].clone(), x["d_mask"].clone()
    q_mask[1] = False  # query 1 has no valid token
    d_mask[2] = False  # document 2 has no valid token (for a paired op: the document of pair 2)
    full = call(op, x, backend)
    g = with_grad({**x, "q_mask": q_mask, "d_mask": d_mask}, op)
    out = call(op, g, backend)
    zero = torch.zeros((), dtype=out.dtype)
    if op == "maxsim":
        for reduction in ("sum", "mean"):
            got = call(op, {**x, "q_mask": q_mask, "d_mask": d_mask}, backend, reduction=reduction)
            assert (got[1] == zero).all() and (got[:, 2] == zero).all()
        keep = torch.tensor([0, 2]), torch.tensor([0, 1, 3])
        torch.testing.assert_close(out[keep[0]][:, keep[1]], full[keep[0]][:, keep[1]])
    else:
        assert (out[1] == zero).all() and (out[2] == zero).all()
        torch.testing.assert_close(out[0], full[0])
    out.float().sum().backward()
    gq, gd = g["q"].grad, g["d"].grad
    assert torch.isfinite(gq).all() and torch.isfinite(gd).all()
    assert (gq[1] == 0).all() and (gd[2] == 0).all()


@pytest.mark.parametrize("offsets", [[0, 5, 2, 9], [0, 3, 7, 12], [-1, 3, 7, 9]],
                         ids=["backwards", "past-the-end", "negative"])
def test_ragged_bad_offsets_give_nan_scores(offsets):
    """maxsim_ragged's offsets are checked on the device: offsets that step backwards or leave [0, T] make every score
    NaN (spherekit.checks("full") raises instead, test_maxsim_ragged_errors.py)."""
    x = inputs("maxsim_ragged")
    out = call("maxsim_ragged", {**x, "offsets": torch.tensor(offsets)}, "cpu")
    assert out.shape == (3,) and torch.isnan(out).all()


def test_every_op_is_covered():
    assert {op for op, _ in CASES} == set(OPS)
