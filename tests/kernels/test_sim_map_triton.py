"""Triton token-similarity kernels (kernels/maxsim.py, soft_align.py, sim_map.py) in the interpreter against
the fp64 oracles of spherekit.reference.sim_map (tokens given already normalised, as the ops pass them).

Sizes are not multiples of the blocks (m=37, n=41, h=24), with m = 1 / n = 1 edge cases, ragged masks and
no masks, fp32 and fp16, grad_output != 1. Smooth quantities follow the project rule (kernel error <= 2x the
same-precision torch error vs fp64). MaxSim / row-max gradients go through an argmax, so their tests use
tokens on a 1/8 grid: every product is exact in fp16 and fp32, the argmax (ties included: first index) is
the oracle's, and the gradients must match it to rounding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.kernels import maxsim as KM
from spherekit.kernels import sim_map as KS
from spherekit.kernels import soft_align as KA
from spherekit.reference import sim_map as ref
from tests._oracle import assert_close_to_oracle, max_abs

DTYPES = [torch.float32, torch.float16]
GRID_TOL = {torch.float32: 1e-5, torch.float16: 2e-3}  # exact products; only sums / casts round


def _masks(gen, B, m, extra=()):
    mask = torch.rand(B, *extra, m, generator=gen) > 0.35
    mask[..., 0] = True  # every sequence keeps a valid token (the ops require it)
    return mask


def _tokens(gen, shape, grid):
    if grid:  # multiples of 1/8 in [-1, 1]: exact products, frequent exact ties
        return torch.randint(-8, 9, shape, generator=gen).double() / 8
    return F.normalize(torch.randn(shape, generator=gen, dtype=torch.float64), dim=-1)


# ---------------------------------------------------------------- maxsim
LAYOUTS = ["all-pairs", "pairwise", "per-query"]
MAXSIM_SHAPES = [(3, 2, 37, 41, 24), (2, 3, 1, 5, 16), (2, 2, 6, 1, 24)]  # (Bq, Bd or K, m, n, h)


def _maxsim_case(layout, Bq, K, m, n, h, *, grid, masked=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = _tokens(gen, (Bq, m, h), grid)
    q_mask = _masks(gen, Bq, m) if masked else torch.ones(Bq, m, dtype=torch.bool)
    if layout == "all-pairs":
        d = _tokens(gen, (K, n, h), grid)
        d_mask = _masks(gen, K, n) if masked else torch.ones(K, n, dtype=torch.bool)
        d4, dm4, shared = d[None], d_mask[None], True
    elif layout == "pairwise":
        d = _tokens(gen, (Bq, n, h), grid)
        d_mask = _masks(gen, Bq, n) if masked else torch.ones(Bq, n, dtype=torch.bool)
        d4, dm4, shared = d[:, None], d_mask[:, None], False
    else:
        d = _tokens(gen, (Bq, K, n, h), grid)
        d_mask = _masks(gen, Bq, n, (K,)) if masked else torch.ones(Bq, K, n, dtype=torch.bool)
        d4, dm4, shared = d, d_mask, False
    return q, q_mask, d, d_mask, d4, dm4, shared


def _maxsim_oracle(q, q_mask, d, d_mask, layout, dtype):
    out = ref.maxsim(q, q_mask, d, d_mask, pairwise=layout == "pairwise", normalize=False, compute_dtype=dtype)
    return out[:, None] if layout == "pairwise" else out


def _oracle_argmax(q, q_mask, d4, dm4):
    sims = torch.einsum("aih,aknh->akin", q, d4.expand(q.shape[0], *d4.shape[1:]))
    sims = sims.masked_fill(~dm4.expand(q.shape[0], *dm4.shape[1:])[:, :, None, :], float("-inf"))
    top2 = sims.topk(min(2, sims.shape[-1]), dim=-1)
    gap = (top2.values[..., 0] - top2.values[..., -1]) if sims.shape[-1] > 1 else torch.full(top2.values.shape[:-1],
                                                                                               float("inf"))
    arg = torch.where(q_mask[:, None, :], sims.argmax(-1), -1)
    return arg, gap


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", MAXSIM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_maxsim_forward(layout, shape, dtype):
    q, q_mask, d, d_mask, d4, dm4, shared = _maxsim_case(layout, *shape, grid=False)
    scores, argmax = KM.maxsim_fwd(q.to(dtype), q_mask, d4.to(dtype), dm4, shared=shared)
    assert scores.shape == (shape[0], d4.shape[1]) and scores.dtype == torch.float32
    assert argmax.shape == (shape[0], d4.shape[1], shape[2]) and argmax.dtype == torch.int32
    oracle = _maxsim_oracle(q, q_mask, d, d_mask, layout, torch.float64)
    base = _maxsim_oracle(q.to(dtype), q_mask, d.to(dtype), d_mask, layout, dtype)
    assert_close_to_oracle("scores", scores, base, oracle, dtype)
    arg, gap = _oracle_argmax(q, q_mask, d4, dm4)
    assert (argmax[~q_mask[:, None, :].expand_as(argmax)] == -1).all()
    clear = gap > (1e-6 if dtype == torch.float32 else 1e-2)  # rounding cannot reorder these rows
    assert clear.float().mean() > 0.5
    assert torch.equal(argmax.long()[clear], arg[clear])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", MAXSIM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_maxsim_backward(layout, shape, dtype):
    q, q_mask, d, d_mask, d4, dm4, shared = _maxsim_case(layout, *shape, grid=True, seed=1)
    scores, argmax = KM.maxsim_fwd(q.to(dtype), q_mask, d4.to(dtype), dm4, shared=shared)
    arg, _ = _oracle_argmax(q, q_mask, d4, dm4)
    assert torch.equal(argmax.long(), arg)  # exact products: ties resolved like torch (first index)
    g = torch.randn(scores.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    gq, gd4 = KM.maxsim_bwd(g.float(), q.to(dtype), q_mask, d4.to(dtype), dm4, argmax, shared=shared)
    assert gq.dtype == dtype and gq.shape == q.shape and gd4.dtype == dtype and gd4.shape == d4.shape

    qq, dd = q.clone().requires_grad_(), d.clone().requires_grad_()
    oracle = _maxsim_oracle(qq, q_mask, dd, d_mask, layout, torch.float64)
    assert max_abs(scores, oracle) <= GRID_TOL[dtype]
    oq, od = torch.autograd.grad((oracle * g).sum(), [qq, dd])
    od4 = od[None] if layout == "all-pairs" else (od[:, None] if layout == "pairwise" else od)
    tol = GRID_TOL[dtype] * max(1.0, oq.abs().max().item(), od.abs().max().item())
    assert max_abs(gq, oq) <= tol, "grad_q"
    assert max_abs(gd4, od4) <= tol, "grad_d"


def test_maxsim_without_masks_and_partial_gradients():
    q, q_mask, d, d_mask, d4, dm4, shared = _maxsim_case("all-pairs", 2, 3, 37, 41, 24, grid=True, masked=False)
    scores, argmax = KM.maxsim_fwd(q.float(), None, d4.float(), None, shared=shared)
    s2, a2 = KM.maxsim_fwd(q.float(), q_mask, d4.float(), dm4, shared=shared)  # all-True masks: same result
    assert torch.equal(scores, s2) and torch.equal(argmax, a2)
    assert max_abs(scores, _maxsim_oracle(q, q_mask, d, d_mask, "all-pairs", torch.float64)) <= 1e-5
    g = torch.rand(scores.shape) + 0.5
    gq, gd = KM.maxsim_bwd(g, q.float(), None, d4.float(), None, argmax, shared=shared)
    gq_only, none_d = KM.maxsim_bwd(g, q.float(), None, d4.float(), None, argmax, shared=shared, need_dd=False)
    none_q, gd_only = KM.maxsim_bwd(g, q.float(), None, d4.float(), None, argmax, shared=shared, need_dq=False)
    assert none_d is None and none_q is None
    assert torch.equal(gq, gq_only) and max_abs(gd, gd_only) <= 1e-6


def test_maxsim_errors():
    q = torch.randn(2, 5, 8)
    d4 = torch.randn(1, 3, 4, 8)
    with pytest.raises(ValueError, match=r"d4.shape\[0\] must be 2 \(Bq\)"):
        KM.maxsim_fwd(q, None, d4, None, shared=False)
    with pytest.raises(ValueError, match=r"d4.shape\[3\] must equal q.shape\[2\] \(8\)"):
        KM.maxsim_fwd(q, None, torch.randn(1, 3, 4, 6), None, shared=True)
    with pytest.raises(TypeError, match="d4 must have the dtype of q"):
        KM.maxsim_fwd(q, None, d4.half(), None, shared=True)
    with pytest.raises(ValueError, match=r"q_mask must have shape \(2, 5\), got \(2, 4\)"):
        KM.maxsim_fwd(q, torch.ones(2, 4, dtype=torch.bool), d4, None, shared=True)
    with pytest.raises(TypeError, match="d_mask4 must have dtype in"):
        KM.maxsim_fwd(q, None, d4, torch.ones(1, 3, 4), shared=True)


# ---------------------------------------------------------------- soft_align
SOFT_SHAPES = [(3, 37, 41, 24), (2, 1, 9, 16), (2, 7, 1, 24)]  # (B, m, n, h)


@pytest.mark.parametrize("shape", SOFT_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lam,tau", [(0.1, 0.1), (0.03, 0.5)])
def test_soft_align(shape, dtype, lam, tau):
    B, m, n, h = shape
    gen = torch.Generator().manual_seed(3)
    q, d = _tokens(gen, (B, m, h), False), _tokens(gen, (B, n, h), False)
    q_mask, d_mask = _masks(gen, B, m), _masks(gen, B, n)
    score, lse, s = KA.soft_align_fwd(q.to(dtype), q_mask, d.to(dtype), d_mask, lam, tau)
    assert score.shape == (B,) and lse.shape == (B, m) and s.shape == (B, m) and score.dtype == torch.float32
    g = torch.rand(B, generator=gen, dtype=torch.float64) + 0.5
    gq, gd, glam, gtau = KA.soft_align_bwd(g.float(), q.to(dtype), q_mask, d.to(dtype), d_mask, lam, tau, lse, s)
    assert gq.dtype == dtype and gd.dtype == dtype and glam.shape == (B,) and gtau.shape == (B,)

    def run(cast):
        qq, dd = q.to(cast).requires_grad_(), d.to(cast).requires_grad_()
        lt = torch.tensor(lam, dtype=cast, requires_grad=True)
        tt = torch.tensor(tau, dtype=cast, requires_grad=True)
        out = ref.soft_align(qq, q_mask, dd, d_mask, lam=lt, tau=tt, normalize=False, compute_dtype=cast)
        return out, torch.autograd.grad((out * g.to(cast)).sum(), [qq, dd, lt, tt])

    oracle, ograds = run(torch.float64)
    base, bgrads = run(dtype)
    assert_close_to_oracle("score", score, base, oracle, dtype)
    for name, got, o, b in zip(("grad_q", "grad_d", "grad_lam", "grad_tau"), (gq, gd, glam.sum(), gtau.sum()),
                               ograds, bgrads):
        assert_close_to_oracle(name, got, b, o, dtype)
    # per-row statistics: s_i = sum_j A_ij M_ij over valid j (checked on valid rows)
    sims = torch.einsum("bih,bjh->bij", q, d)
    z = ((sims - lam * (torch.arange(m)[:, None] - torch.arange(n)[None]).abs()) / tau)
    z = z.masked_fill(~d_mask[:, None, :], float("-inf"))
    s64 = (z.softmax(-1) * sims).sum(-1)
    assert max_abs(s[q_mask], s64[q_mask]) <= (1e-5 if dtype == torch.float32 else 5e-3)
    assert max_abs(lse[q_mask], z.logsumexp(-1)[q_mask]) <= (1e-4 if dtype == torch.float32 else 5e-2)


def test_soft_align_without_masks_and_errors():
    gen = torch.Generator().manual_seed(4)
    q, d = _tokens(gen, (2, 19, 24), False).float(), _tokens(gen, (2, 23, 24), False).float()
    ones_q, ones_d = torch.ones(2, 19, dtype=torch.bool), torch.ones(2, 23, dtype=torch.bool)
    a = KA.soft_align_fwd(q, None, d, None, 0.1, 0.1)
    b = KA.soft_align_fwd(q, ones_q, d, ones_d, 0.1, 0.1)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    oracle = ref.soft_align(q.double(), ones_q, d.double(), ones_d, lam=0.1, tau=0.1, normalize=False,
                            compute_dtype=torch.float64)
    assert max_abs(a[0], oracle) <= 1e-5
    with pytest.raises(ValueError, match="tau must be > 0, got 0.0"):
        KA.soft_align_fwd(q, None, d, None, 0.1, 0.0)
    with pytest.raises(ValueError, match=r"d must have shape \(2, n, 24\)"):
        KA.soft_align_fwd(q, None, d[:1], None, 0.1, 0.1)


# ---------------------------------------------------------------- sim_map
MAP_CASES = [  # (channels, patch, clip)
    (("sim",), None, True),
    (("sim", "rowmax", "colmax"), None, False),
    (("colmax", "sim"), 4, True),
    (("rowmax",), 5, True),
    (("sim", "rowmax", "colmax"), 6, True),
]
MAP_SHAPES = [(2, 37, 41, 24), (2, 1, 9, 16), (2, 7, 1, 24)]


def _map_case(shape, *, seed, masked=True):
    """Grid tokens scaled so |M| exceeds 1 often (the clamp and its gradient gate are exercised), redrawn
    until no entry is exactly +-1: there, several clamped entries tie at 1 and torch's max sends the
    gradient to the first of them (possibly the one at exactly 1, whose clamp passes it), the kernels to the
    largest unclipped entry (clamp gate 0); both are valid subgradients of this measure-zero case."""
    B, m, n, h = shape
    gen = torch.Generator().manual_seed(seed)
    while True:
        q, d = _tokens(gen, (B, m, h), True) * 0.5, _tokens(gen, (B, n, h), True) * 0.5
        q_mask = _masks(gen, B, m) if masked else torch.ones(B, m, dtype=torch.bool)
        d_mask = _masks(gen, B, n) if masked else torch.ones(B, n, dtype=torch.bool)
        if not (torch.einsum("bih,bjh->bij", q, d).abs() == 1).any():
            return q, q_mask, d, d_mask, gen


@pytest.mark.parametrize("case", MAP_CASES)
@pytest.mark.parametrize("shape", MAP_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sim_map(case, shape, dtype):
    channels, patch, clip = case
    q, q_mask, d, d_mask, gen = _map_case(shape, seed=5)
    qq, dd = q.clone().requires_grad_(), d.clone().requires_grad_()
    oracle = ref.sim_map(qq, q_mask, dd, d_mask, patch=patch, channels=channels, clip=clip, normalize=False,
                         compute_dtype=torch.float64)
    if clip and shape[1] > 1 and shape[2] > 1:
        assert (torch.einsum("bih,bjh->bij", q, d).abs() > 1).any()  # the clamp matters in this case
    out, *stats = KS.sim_map_fwd(q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch, channels=channels, clip=clip,
                                 out_dtype=dtype)
    assert out.shape == oracle.shape and out.dtype == dtype
    assert max_abs(out, oracle) <= GRID_TOL[dtype] * max(1.0, oracle.abs().max().item())
    g = torch.randn(oracle.shape, generator=gen, dtype=torch.float64)
    oq, od = torch.autograd.grad((oracle * g).sum(), [qq, dd])
    tol = GRID_TOL[dtype] * max(1.0, oq.abs().max().item(), od.abs().max().item()) * 2
    gq, gd = KS.sim_map_bwd(g.to(dtype), q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch, channels=channels,
                            clip=clip, stats=stats)
    assert gq.dtype == dtype and gd.dtype == dtype
    assert max_abs(gq, oq) <= tol, "grad_q"
    assert max_abs(gd, od) <= tol, "grad_d"
    if "rowmax" in channels or "colmax" in channels:  # without the saved statistics the backward recomputes them
        gq2, gd2 = KS.sim_map_bwd(g.float(), q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch, channels=channels,
                                  clip=clip)
        assert max_abs(gq2, oq) <= tol and max_abs(gd2, od) <= tol


@pytest.mark.parametrize("dtype", DTYPES)
def test_sim_map_random_tokens(dtype):
    """Smooth case on normalised tokens: the sim channel and its gradients under the 2x rule."""
    B, m, n, h = 2, 37, 41, 24
    gen = torch.Generator().manual_seed(6)
    q, d = _tokens(gen, (B, m, h), False), _tokens(gen, (B, n, h), False)
    q_mask, d_mask = _masks(gen, B, m), _masks(gen, B, n)
    g = torch.randn(B, 10 * 11, 16, generator=gen, dtype=torch.float64)

    def run(cast):
        qq, dd = q.to(cast).requires_grad_(), d.to(cast).requires_grad_()
        out = ref.sim_map(qq, q_mask, dd, d_mask, patch=4, channels=("sim",), clip=False, normalize=False,
                          compute_dtype=cast)
        return out, torch.autograd.grad((out * g.to(cast)).sum(), [qq, dd])

    oracle, (oq, od) = run(torch.float64)
    base, (bq, bd) = run(dtype)
    out, *stats = KS.sim_map_fwd(q.to(dtype), q_mask, d.to(dtype), d_mask, patch=4, channels=("sim",), clip=False,
                                 out_dtype=torch.float32)
    assert out.dtype == torch.float32
    assert_close_to_oracle("map", out, base, oracle, dtype)
    gq, gd = KS.sim_map_bwd(g.float(), q.to(dtype), q_mask, d.to(dtype), d_mask, patch=4, channels=("sim",),
                            clip=False, stats=stats)
    assert_close_to_oracle("grad_q", gq, bq, oq, dtype)
    assert_close_to_oracle("grad_d", gd, bd, od, dtype)


def test_sim_map_strided_gradient_and_no_masks():
    q, q_mask, d, d_mask, gen = _map_case((2, 13, 11, 24), seed=7, masked=False)
    chans = ("sim", "rowmax", "colmax")
    out, *stats = KS.sim_map_fwd(q.float(), None, d.float(), None, patch=None, channels=chans, clip=True,
                                 out_dtype=torch.float32)
    out2, *_ = KS.sim_map_fwd(q.float(), q_mask, d.float(), d_mask, patch=None, channels=chans, clip=True,
                              out_dtype=torch.float32)
    assert torch.equal(out, out2)
    g = torch.randn(2, 13, 11, 3, generator=gen)
    g_strided = torch.randn(3, 2, 11, 13, generator=gen).permute(1, 3, 2, 0)  # same shape, no unit stride
    g_strided.copy_(g)
    a = KS.sim_map_bwd(g, q.float(), None, d.float(), None, patch=None, channels=chans, clip=True, stats=stats)
    b = KS.sim_map_bwd(g_strided, q.float(), None, d.float(), None, patch=None, channels=chans, clip=True, stats=stats)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    gp = torch.randn(2, 12, 16 * 3, generator=gen)  # patch layout (4 x 3 patches), strided
    gp_strided = torch.randn(48, 2, 12, generator=gen).permute(1, 2, 0)
    gp_strided.copy_(gp)
    outp, *statsp = KS.sim_map_fwd(q.float(), None, d.float(), None, patch=4, channels=chans, clip=True,
                                   out_dtype=torch.float32)
    a = KS.sim_map_bwd(gp, q.float(), None, d.float(), None, patch=4, channels=chans, clip=True, stats=statsp)
    b = KS.sim_map_bwd(gp_strided, q.float(), None, d.float(), None, patch=4, channels=chans, clip=True, stats=statsp)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_sim_map_errors():
    q, d = torch.randn(2, 5, 8), torch.randn(2, 6, 8)
    with pytest.raises(ValueError, match="unknown channel 'max'"):
        KS.sim_map_fwd(q, None, d, None, patch=None, channels=("sim", "max"), clip=True, out_dtype=torch.float32)
    with pytest.raises(ValueError, match="must not repeat"):
        KS.sim_map_fwd(q, None, d, None, patch=None, channels=("sim", "sim"), clip=True, out_dtype=torch.float32)
    with pytest.raises(ValueError, match="patch must be None or an int >= 1, got 0"):
        KS.sim_map_fwd(q, None, d, None, patch=0, channels=("sim",), clip=True, out_dtype=torch.float32)
    with pytest.raises(TypeError, match="out_dtype must be"):
        KS.sim_map_fwd(q, None, d, None, patch=None, channels=("sim",), clip=True, out_dtype=torch.int32)
    with pytest.raises(ValueError, match=r"grad_out must have shape \(2, 4, 16\), got \(2, 5, 6, 1\)"):
        KS.sim_map_bwd(torch.randn(2, 5, 6, 1), q, None, d, None, patch=4, channels=("sim",), clip=True)
