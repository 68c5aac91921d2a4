"""kernels/ngpt.py launchers (Triton interpreter, CPU tensors) against the fp64 oracle
(spherekit.reference.ngpt in float64, gradients by autograd): outputs, norms and every gradient with
grad_output != 1, d in (1, 41, 128, 1000), 1 and 37 rows, negative and zero alpha entries, zero rows
(clamped Jacobian, no NaN), strided rows, and multi-tensor renormalize_ over mixed shapes, dims, dtypes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.kernels import ngpt as K
from spherekit.reference import ngpt as ref
from tests._oracle import assert_close_to_oracle

DTYPES = [torch.float32, torch.float16]
DIMS = [1, 41, 128, 1000]
ROWS = [1, 37]


def _rand(R, d, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(R, d, generator=g, dtype=torch.float64).to(dtype)


def _alpha(d, seed=7):
    """Step sizes with mixed signs (a = |alpha|), one exact 0 (gradient sign(0) = 0) and |alpha| > 1."""
    a = (torch.rand(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) - 0.3) * 1.4
    a[0] = 0.0
    if d > 2:
        a[1] = -0.25
        a[2] = 1.3
    return a


def _torch_geodesic(h, f, alpha, g, eps, dtype):
    """Reference forward + autograd gradients computed in `dtype` (fp64: the oracle)."""
    h_, f_, a_ = (x.detach().to(dtype).requires_grad_() for x in (h, f, alpha))
    out = ref.geodesic_residual(h_, f_, a_, eps, compute_dtype=dtype)
    gh, gf, ga = torch.autograd.grad(out, (h_, f_, a_), g.to(dtype))
    norms = torch.stack([h_.norm(dim=-1), f_.norm(dim=-1)], dim=-1)
    hn, fn = F.normalize(h_, dim=-1, eps=eps), F.normalize(f_, dim=-1, eps=eps)
    y = hn + a_.abs() * (fn - hn)
    return out.detach(), torch.cat([norms, y.norm(dim=-1, keepdim=True)], -1).detach(), gh, gf, ga


def _compare(names, got, base, oracle, dtype, per_row):
    """The accuracy rule per tensor, or per row of the (R, d) tensors when rows differ in scale by orders of
    magnitude (clamped rows get gradients ~ 1/eps that would hide errors in the others)."""
    for name, t, b, o in zip(names, got, base, oracle):
        if per_row and t.dim() == 2 and t.shape[1] > 3:
            for i in range(t.shape[0]):
                assert_close_to_oracle(f"{name}[{i}]", t[i], b[i], o[i], dtype)
        else:
            assert_close_to_oracle(name, t, b, o, dtype)


def _check_geodesic(h64, f64, a64, g64, dtype, eps, per_row=False):
    h, f, g = h64.to(dtype), f64.to(dtype), g64.to(dtype)
    alpha = a64.float()
    out, norms = K.geodesic_residual_fwd(h, f, alpha, eps=eps)
    gh, gf, ga = K.geodesic_residual_bwd(g, h, f, alpha, norms, eps=eps)
    assert out.dtype == dtype and gh.dtype == dtype and gf.dtype == dtype
    assert norms.dtype == torch.float32 and norms.shape == (h.shape[0], 3)
    assert ga.dtype == torch.float32 and ga.shape == alpha.shape
    for t in (out, norms, gh, gf, ga):
        assert torch.isfinite(t).all()
    # the oracle sees the same rounded inputs as the kernel
    oracle = _torch_geodesic(h.double(), f.double(), alpha.double(), g.double(), eps, torch.float64)
    base = _torch_geodesic(h, f, alpha, g, eps, dtype)
    _compare(("out", "norms", "grad_h", "grad_f", "grad_alpha"), (out, norms, gh, gf, ga), base, oracle, dtype,
             per_row)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("R", ROWS)
def test_geodesic_residual_matches_oracle(dtype, d, R):
    h, f = _rand(R, d, 1), _rand(R, d, 2) * 3.0
    g = _rand(R, d, 3) * 0.7
    _check_geodesic(h, f, _alpha(d), g, dtype, 1e-6)


@pytest.mark.parametrize("d", [41, 128])
def test_geodesic_residual_bf16(d):
    """bf16 storage (the kernels upcast right after tl.load, so the interpreter computes correctly)."""
    h, f, g = _rand(37, d, 1), _rand(37, d, 2), _rand(37, d, 3)
    h16, f16, g16 = (x.bfloat16() for x in (h, f, g))
    alpha = _alpha(d).float()
    out, norms = K.geodesic_residual_fwd(h16, f16, alpha, eps=1e-6)
    gh, gf, ga = K.geodesic_residual_bwd(g16, h16, f16, alpha, norms, eps=1e-6)
    o = _torch_geodesic(h16.double(), f16.double(), alpha.double(), g16.double(), 1e-6, torch.float64)
    b = _torch_geodesic(h16, f16, alpha, g16, 1e-6, torch.float32)  # fp32 math, bf16 storage
    for name, got, oo, bb in zip(("out", "norms", "grad_h", "grad_f", "grad_alpha"), (out, norms, gh, gf, ga), o, b):
        assert_close_to_oracle(name, got, bb.to(got.dtype), oo, torch.bfloat16)


@pytest.mark.parametrize("dtype, eps", [(torch.float32, 1e-6), (torch.float16, 1e-2)])
def test_geodesic_residual_zero_rows(dtype, eps):
    """Zero h row, zero f row, both zero, y = 0 (h = -f, a = 1/2), and 0 < ||h|| < eps: clamped Jacobian
    I/eps (no tangent projection), no NaN."""
    d = 41
    h, f, g = _rand(7, d, 1), _rand(7, d, 2), _rand(7, d, 3)
    h[0] = 0.0
    f[1] = 0.0
    h[2] = 0.0
    f[2] = 0.0
    f[3] = -h[3] * 2.0
    h[6] = h[6] / h[6].norm() * (0.5 * eps)
    alpha = torch.full((d,), 0.5, dtype=torch.float64)
    alpha[5] = -0.5
    _check_geodesic(h, f, alpha, g, dtype, eps, per_row=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_geodesic_residual_clamped_y(dtype):
    """0 < ||y|| < eps (fn almost -hn, a = 1/2): out = y / eps and g_y = g / eps without projection."""
    eps, d = 0.1, 41
    h, g = _rand(3, d, 1), _rand(3, d, 3)
    u = F.normalize(h, dim=-1)
    w = F.normalize(_rand(3, d, 2) - u * (u * _rand(3, d, 2)).sum(-1, keepdim=True), dim=-1)  # w orthogonal to u
    theta = 2 * torch.asin(torch.tensor([0.5, 0.2, 2.0]) * eps / 2)  # ||hn + fn|| = 2 sin(theta / 2)
    f = 3.0 * (-torch.cos(theta)[:, None] * u + torch.sin(theta)[:, None] * w)
    _check_geodesic(h, f, torch.full((d,), 0.5, dtype=torch.float64), g, dtype, eps, per_row=True)


def test_geodesic_residual_strided_rows():
    """Row strides larger than d (column slices of wider tensors) are honoured."""
    h = _rand(37, 50, 1)[:, :41]
    f = _rand(37, 45, 2)[:, 3:44]
    g = _rand(37, 60, 3)[:, 10:51]
    assert h.stride(0) != 41
    _check_geodesic(h, f, _alpha(41), g, torch.float32, 1e-6)


def _check_l2(x64, g64, dtype, eps, per_row=False):
    x, g = x64.to(dtype), g64.to(dtype)
    out, norms = K.l2_normalize_fwd(x, eps=eps)
    gx = K.l2_normalize_bwd(g, x, norms, eps=eps)
    assert out.dtype == dtype and gx.dtype == dtype and norms.dtype == torch.float32 and norms.shape == (x.shape[0],)
    for t in (out, norms, gx):
        assert torch.isfinite(t).all()

    def run(cd):
        x_ = x.detach().to(cd).requires_grad_()
        o = ref.l2_normalize(x_, -1, eps, compute_dtype=cd)
        return o.detach(), x_.norm(dim=-1).detach(), torch.autograd.grad(o, x_, g.to(cd))[0]

    _compare(("out", "norms", "grad_x"), (out, norms, gx), run(dtype), run(torch.float64), dtype, per_row)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("R", ROWS)
def test_l2_normalize_matches_oracle(dtype, d, R):
    _check_l2(_rand(R, d, 4) * 2.0, _rand(R, d, 5) * 0.7, dtype, 1e-6)


@pytest.mark.parametrize("dtype, eps", [(torch.float32, 1e-6), (torch.float16, 1e-2)])
def test_l2_normalize_zero_rows(dtype, eps):
    x = _rand(5, 41, 4)
    x[1] = 0.0
    x[3] = x[3] / x[3].norm() * (0.5 * eps)  # clamped but nonzero: Jacobian I/eps, no projection
    _check_l2(x, _rand(5, 41, 5), dtype, eps, per_row=True)


def _tiny_col(w):
    w[:, 1] *= 0.5e-6 / w[:, 1].norm()
    return w


def _renorm_case():
    """(tensor, dim) pairs: rows (short, long enough to loop over chunks), columns, a middle dim of a 3-D
    tensor, a zero row and a zero column, a single element, an empty tensor, three dtypes."""
    g = torch.Generator().manual_seed(11)

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * 3.0

    w_rows = r(5, 41)
    w_rows[2] = 0.0
    w_rows[3] *= 0.5e-6 / w_rows[3].norm()  # 0 < norm < eps: divided by eps
    w_cols = r(41, 19)
    w_cols[:, 4] = 0.0
    return [
        (w_rows, -1, torch.float32),
        (w_cols, 0, torch.float16),
        (r(3, 37, 9), 1, torch.float32),
        (r(7, 100), 1, torch.bfloat16),   # 100 > the interpreter's BLOCK_K: chunked row loop
        (_tiny_col(r(100, 3)), 0, torch.float32),  # 100 > BLOCK_N: chunked column loop
        (r(2, 3, 4), 0, torch.float16),   # outer = 1, inner = 12
        (r(1), 0, torch.float32),
        (r(0, 5), -1, torch.float32),
        (r(4, 1000), -1, torch.float16),
    ]


def _view3(w, dim):
    dim %= w.dim()
    outer = int(torch.tensor(w.shape[:dim]).prod()) if dim else 1
    inner = int(torch.tensor(w.shape[dim + 1:]).prod()) if dim + 1 < w.dim() else 1
    return w.view(outer, w.shape[dim], inner)


def test_renormalize_multi_tensor():
    case = _renorm_case()
    ws = [w.to(dt) for w, _, dt in case]
    before = [w.clone() for w in ws]
    ptrs = [w.data_ptr() for w in ws]
    for _ in range(2):  # the second call reuses the cached device tables and must stay correct (idempotent)
        K.renormalize_([_view3(w, dim) for w, (_, dim, _) in zip(ws, case)], eps=1e-6)
        assert [w.data_ptr() for w in ws] == ptrs  # in place
        for i, (w, b, (_, dim, dt)) in enumerate(zip(ws, before, case)):
            assert w.dtype == dt
            oracle = F.normalize(b.double(), dim=dim, eps=1e-6)
            base = ref.renormalize(b, dim, 1e-6, compute_dtype=torch.float32 if dt == torch.bfloat16 else dt)
            assert torch.isfinite(w).all(), i
            assert_close_to_oracle(f"weights[{i}]", w, base.to(dt), oracle, dt)
        before = [w.clone() for w in ws]


def test_renormalize_many_tensors_bisection():
    """More tensors than one bisection step resolves: every tensor gets exactly its own normalisation."""
    g = torch.Generator().manual_seed(3)
    ws = [torch.randn(k % 4 + 1, k % 7 + 2, generator=g) * (k + 1) for k in range(13)]
    ws[6][1] *= 0.5e-6 / ws[6][1].norm()  # 0 < norm < eps on the one-load row path: divided by eps
    want = [F.normalize(w.double(), dim=-1, eps=1e-6) for w in ws]
    K.renormalize_([w.view(w.shape[0], w.shape[1], 1) for w in ws], eps=1e-6)
    for i, (w, o) in enumerate(zip(ws, want)):
        assert (w.double() - o).abs().max() < 1e-6, i


def test_errors_name_the_argument():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="alpha"):
        K.geodesic_residual_fwd(x, x, torch.ones(7), eps=1e-6)
    with pytest.raises(ValueError, match="f:"):
        K.geodesic_residual_fwd(x, torch.randn(3, 8), torch.ones(8), eps=1e-6)
    with pytest.raises(ValueError, match="norms"):
        K.geodesic_residual_bwd(x, x, x, torch.ones(8), torch.ones(4, 2), eps=1e-6)
    with pytest.raises(ValueError, match="x:"):
        K.l2_normalize_fwd(torch.randn(4, 8).t(), eps=1e-6)
    with pytest.raises(ValueError, match=f"d <= {K.MAX_D}"):
        K.l2_normalize_fwd(torch.randn(1, K.MAX_D + 1), eps=1e-6)
    with pytest.raises(ValueError, match=r"views\[1\]"):
        K.renormalize_([x.view(4, 8, 1), x.t().unsqueeze(0)], eps=1e-6)
    with pytest.raises(TypeError, match=r"views\[0\]"):
        K.renormalize_([x.double().view(4, 8, 1)], eps=1e-6)
