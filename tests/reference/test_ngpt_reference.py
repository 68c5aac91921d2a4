"""The nGPT oracles in float64: gradcheck (incl. zero rows and negative alpha), and the gradient formulas
stated in their docstrings written out by hand (so the kernels' math is checked against the oracle's)."""

import pytest
import torch
import torch.nn.functional as F

from spherekit.reference import ngpt as R

F64 = torch.float64


def _rand(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


@pytest.mark.parametrize("alpha_shape", [(), (1,), (7,)])
def test_gradcheck_geodesic_residual(alpha_shape):
    h = _rand(2, 3, 7, seed=1).requires_grad_()
    f = _rand(2, 3, 7, seed=2).requires_grad_()
    alpha = (_rand(*alpha_shape, seed=3) * 0.5).requires_grad_()  # mixed signs for (7,)
    fn = lambda h_, f_, a_: R.geodesic_residual(h_, f_, a_, compute_dtype=F64)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (h, f, alpha))


def test_gradcheck_geodesic_residual_clamped_rows():
    """Zero rows of h and f, a tiny row below eps, and a row where y = 0 (f = -h, a = 0.5): Jacobian I / eps."""
    eps = 1e-2
    h = _rand(5, 6, seed=4)
    f = _rand(5, 6, seed=5)
    h[0] = 0
    f[1] = 0
    h[2] *= 1e-4 / h[2].norm()
    f[3] = -h[3]
    alpha = torch.full((6,), -0.5, dtype=F64)  # a = |alpha| = 0.5 makes y_3 exactly 0
    alpha[0] = 0.3
    h.requires_grad_()
    f.requires_grad_()
    alpha.requires_grad_()
    out = R.geodesic_residual(h, f, alpha, eps, compute_dtype=F64)
    assert torch.isfinite(out).all()
    fn = lambda h_, f_, a_: R.geodesic_residual(h_, f_, a_, eps, compute_dtype=F64)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (h, f, alpha))


@pytest.mark.parametrize("dim", [0, -1, 1])
def test_gradcheck_l2_normalize_and_renormalize(dim):
    x = _rand(4, 5, 3, seed=6)
    x[0, 0] = 0  # a zero slice along dim 1 and -1 ... and a partly-zero one along dim 0
    x.requires_grad_()
    assert torch.autograd.gradcheck(lambda t: R.l2_normalize(t, dim, 1e-2, compute_dtype=F64), (x,))
    assert torch.autograd.gradcheck(lambda t: R.renormalize(t, dim, 1e-2, compute_dtype=F64), (x,))


def _norm_backward(g, x, eps):
    """Docstring formula: r (g - u <g, u>) for ||x|| >= eps, g / eps otherwise."""
    n = x.norm(dim=-1, keepdim=True)
    u = x / n.clamp_min(eps)
    keep = (n >= eps).to(x.dtype)
    return (g - keep * u * (g * u).sum(-1, keepdim=True)) / n.clamp_min(eps)


def test_docstring_gradient_formulas():
    eps = 1e-3
    h, f, g = _rand(6, 9, seed=7), _rand(6, 9, seed=8), _rand(6, 9, seed=9)
    h[0] = 0
    f[2] = 0
    alpha = _rand(9, seed=10)
    alpha[4] = 0  # sign(0) = 0
    leaves = [t.clone().requires_grad_() for t in (h, f, alpha)]
    out = R.geodesic_residual(*leaves, eps, compute_dtype=F64)
    gh, gf, ga = torch.autograd.grad(out, leaves, g)

    a = alpha.abs()
    hn, fn = F.normalize(h, dim=-1, eps=eps), F.normalize(f, dim=-1, eps=eps)
    y = hn + a * (fn - hn)
    torch.testing.assert_close(out, F.normalize(y, dim=-1, eps=eps))
    g_y = _norm_backward(g, y, eps)
    torch.testing.assert_close(gh, _norm_backward((1 - a) * g_y, h, eps))
    torch.testing.assert_close(gf, _norm_backward(a * g_y, f, eps))
    torch.testing.assert_close(ga, torch.sign(alpha) * ((fn - hn) * g_y).sum(0))
    assert ga[4] == 0

    x = leaves[0].detach().clone().requires_grad_()
    (gx,) = torch.autograd.grad(R.l2_normalize(x, -1, eps, compute_dtype=F64), (x,), g)
    torch.testing.assert_close(gx, _norm_backward(g, h, eps))
    assert torch.equal(gx[0], g[0] / eps)  # the zero row: g / eps, no NaN


def test_zero_rows_forward_and_dtype():
    x = torch.zeros(3, 4)
    assert torch.equal(R.l2_normalize(x), x)
    h = torch.zeros(2, 4, dtype=torch.float16)
    out = R.geodesic_residual(h, h, torch.tensor(0.3))
    assert out.dtype == torch.float16 and torch.equal(out, h)
    w = _rand(3, 4).float()
    assert torch.allclose(R.renormalize(w, 0).norm(dim=0), torch.ones(4))
