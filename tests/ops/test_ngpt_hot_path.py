"""The nGPT ops' hot path in the default ("fast") check mode: no host sync (no tensor value read on the host), a
number of kernel launches and aten ops that does not grow with the rows, and NaN / Inf in an input coming out as
NaN / Inf in exactly the rows it reaches (never a finite wrong number); in spherekit.checks("full") the value scan
runs (and so does its sync). Every CPU-runnable backend (tests/ops/test_ngpt.py's BACKENDS)."""

from __future__ import annotations

import pytest
import torch

import spherekit
from spherekit import ops
from tests.ops._hot_path import HostSyncError, count_launches, no_host_sync
from tests.ops.test_ngpt import BACKENDS, backend  # noqa: F401  (the fixture)

D = 41


def _inputs(rows: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    h, f, grad = (torch.randn(rows, D, generator=g) for _ in range(3))
    alpha = (torch.rand(D, generator=g) - 0.3) * 0.6
    return h, f, alpha, grad


def _train_step(backend: str, rows: int, alpha_number: bool = False):
    """What an nGPT block runs per step: the geodesic residual and l2_normalize forward and backward, then the
    in-place renormalisation of two weight matrices (rows and columns)."""
    h, f, alpha, grad = _inputs(rows)
    h.requires_grad_(), f.requires_grad_(), alpha.requires_grad_()
    out = ops.geodesic_residual(h, f, 0.25 if alpha_number else alpha, backend=backend)
    unit = ops.l2_normalize(h, dim=-1, backend=backend)
    wanted = (h, f) if alpha_number else (h, f, alpha)
    grads = torch.autograd.grad((out * grad).sum() + (unit * grad).sum(), wanted)
    weights = [torch.randn(rows, D), torch.randn(D, rows)]
    ops.renormalize_(weights, [-1, 0], backend=backend)
    return out, unit, grads, weights


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("alpha_number", [False, True])
def test_no_host_sync_by_default(backend, alpha_number):
    with no_host_sync():
        out, unit, grads, weights = _train_step(backend, 6, alpha_number)
    assert all(torch.isfinite(t).all() for t in (out, unit, *grads, *weights))


def test_full_checks_scan_values_and_sync():
    """The probe sees the opt-in scan: in the full mode the finiteness check reads values on the host."""
    with spherekit.checks("full"), no_host_sync(), pytest.raises(HostSyncError):
        _train_step("cpu", 6)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_launches_do_not_grow_with_rows(backend):
    """The same Triton launches and aten ops for 3 rows as for 50 (the Triton kernels loop over rows inside a fixed
    grid of programs; nothing runs once per row or per row block on the host)."""
    _, ops_small, launches_small = count_launches(_train_step, backend, 3)
    _, ops_large, launches_large = count_launches(_train_step, backend, 50)
    assert launches_small == launches_large
    assert ops_small == ops_large
    if backend == "triton":  # geodesic fwd + bwd, l2 fwd + bwd, renormalize_
        assert launches_small == 5


NON_FINITE = [float("nan"), float("inf"), -float("inf")]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("poisoned", ["h", "f", "alpha"])
def test_geodesic_residual_non_finite_in_non_finite_out(backend, poisoned):
    """A NaN / Inf in row 2 of h or f: row 2 of the output and of grad_h, grad_f is not finite (grad_alpha, a sum
    over rows, neither), every other row is finite and the clean run's (to rounding: the Triton forward takes its
    explicit path for a whole tile of rows when one of them is not finite); in alpha: every row is not finite."""
    for value in NON_FINITE:
        h, f, alpha, grad = _inputs(5, seed=1)
        clean = ops.geodesic_residual(h, f, alpha, backend=backend)
        bad = {"h": h, "f": f, "alpha": alpha}[poisoned].clone()
        if poisoned == "alpha":
            bad[7] = value
        else:
            bad[2, 7] = value
        args = {"h": h, "f": f, "alpha": alpha, poisoned: bad}
        leaves = [args[k].clone().requires_grad_() for k in ("h", "f", "alpha")]
        out = ops.geodesic_residual(*leaves, backend=backend)
        gh, gf, ga = torch.autograd.grad(out, leaves, grad)
        rows = torch.arange(5) == 2 if poisoned != "alpha" else torch.ones(5, dtype=torch.bool)
        for name, t in (("out", out), ("grad_h", gh), ("grad_f", gf)):
            assert (~torch.isfinite(t)).any(-1).equal(rows), f"{name} with {value} in {poisoned}: {t}"
        assert not torch.isfinite(ga).all(), f"grad_alpha with {value} in {poisoned}"
        torch.testing.assert_close(out[~rows], clean[~rows])


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_l2_normalize_and_renormalize_non_finite_in_non_finite_out(backend):
    """l2_normalize: the slice holding the NaN / Inf is not finite, the others are untouched; renormalize_ writes
    NaN into that slice of the weight and leaves the other slices and tensors right."""
    for value in NON_FINITE:
        x = torch.randn(5, D)
        x[2, 7] = value
        leaf = x.clone().requires_grad_()
        out = ops.l2_normalize(leaf, backend=backend)
        (gx,) = torch.autograd.grad(out, leaf, torch.randn(5, D))
        rows = torch.arange(5) == 2
        assert (~torch.isfinite(out)).any(-1).equal(rows) and (~torch.isfinite(gx)).any(-1).equal(rows)
        torch.testing.assert_close(out[~rows], torch.nn.functional.normalize(x[~rows], dim=-1))
        columns = x.t().contiguous()  # normalised along dim 0: column 2 holds the value
        weights = [x.clone(), columns, torch.randn(3, D)]
        clean = torch.nn.functional.normalize(weights[2], dim=-1)
        ops.renormalize_(weights, [-1, 0, -1], backend=backend)
        assert (~torch.isfinite(weights[0])).any(-1).equal(rows)
        assert (~torch.isfinite(weights[1])).any(0).equal(rows)
        torch.testing.assert_close(weights[0][~rows], torch.nn.functional.normalize(x[~rows], dim=-1))
        torch.testing.assert_close(weights[2], clean)
