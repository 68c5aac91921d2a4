"""The all-pairs layout of the Triton sim_map launchers (kernels/sim_map.py, all_pairs=True) in the interpreter:
q (Bq, m, h) against every d (Bd, n, h), the map of pair a * Bd + b written from the unrepeated sequences. Tokens
on a 1/8 grid, scaled so |M| > 1 often (clip and its gradient gate exercised) and redrawn until no entry is exactly
+-1 (see test_sim_map_triton._map_case): products are exact in fp16 / fp32, the argmax is the oracle's and every
value and gradient must match the fp64 oracle to rounding. Sizes off the blocks, Bq != Bd, Bd = 1, no masks,
strided gradients, the row statistics recomputed when not passed."""

from __future__ import annotations

import pytest
import torch

from spherekit.kernels import sim_map as KS
from spherekit.reference import sim_map as ref
from tests._oracle import max_abs

GRID_TOL = {torch.float32: 1e-5, torch.float16: 2e-3}
CASES = [  # (channels, patch, clip)
    (("sim",), None, True),
    (("sim", "rowmax", "colmax"), None, False),
    (("colmax", "sim"), 4, True),
    (("sim", "rowmax", "colmax"), 6, True),
]
SHAPES = [(3, 2, 19, 21, 24), (2, 1, 1, 9, 16), (1, 3, 7, 1, 24)]  # (Bq, Bd, m, n, h)


def _case(shape, *, seed, masked=True):
    Bq, Bd, m, n, h = shape
    gen = torch.Generator().manual_seed(seed)
    while True:
        q = (torch.randint(-8, 9, (Bq, m, h), generator=gen).double() / 8) * 0.5
        d = (torch.randint(-8, 9, (Bd, n, h), generator=gen).double() / 8) * 0.5
        q_mask = torch.rand(Bq, m, generator=gen) > 0.35
        d_mask = torch.rand(Bd, n, generator=gen) > 0.35
        q_mask[:, 0] = d_mask[:, 0] = True
        if not masked:
            q_mask, d_mask = torch.ones_like(q_mask), torch.ones_like(d_mask)
        if not (torch.einsum("aih,bjh->abij", q, d).abs() == 1).any():
            return q, q_mask, d, d_mask, gen


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_all_pairs_map(case, shape, dtype):
    channels, patch, clip = case
    q, q_mask, d, d_mask, gen = _case(shape, seed=5)
    Bq, Bd = shape[:2]
    qq, dd = q.clone().requires_grad_(), d.clone().requires_grad_()
    oracle = ref.sim_map(qq, q_mask, dd, d_mask, patch=patch, channels=channels, clip=clip, normalize=False,
                         all_pairs=True, compute_dtype=torch.float64)
    out, *stats = KS.sim_map_fwd(q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch, channels=channels, clip=clip,
                                 out_dtype=dtype, all_pairs=True)
    assert out.shape == (Bq * Bd, *oracle.shape[2:]) and out.dtype == dtype
    assert max_abs(out.view(oracle.shape), oracle) <= GRID_TOL[dtype] * max(1.0, oracle.abs().max().item())
    g = torch.randn(oracle.shape, generator=gen, dtype=torch.float64)
    oq, od = torch.autograd.grad((oracle * g).sum(), [qq, dd])
    tol = GRID_TOL[dtype] * max(1.0, oq.abs().max().item(), od.abs().max().item()) * 2
    flat = g.flatten(0, 1)
    gq, gd = KS.sim_map_bwd(flat.to(dtype), q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch, channels=channels,
                            clip=clip, stats=stats, all_pairs=True)
    assert gq.shape == q.shape and gd.shape == d.shape
    assert max_abs(gq, oq) <= tol, "grad_q"
    assert max_abs(gd, od) <= tol, "grad_d"
    if "rowmax" in channels or "colmax" in channels:  # statistics recomputed by the backward
        gq2, gd2 = KS.sim_map_bwd(flat.float(), q.to(dtype), q_mask, d.to(dtype), d_mask, patch=patch,
                                  channels=channels, clip=clip, all_pairs=True)
        assert max_abs(gq2, oq) <= tol and max_abs(gd2, od) <= tol


def test_all_pairs_without_masks_and_strided_gradient():
    q, q_mask, d, d_mask, gen = _case((2, 3, 9, 7, 16), seed=8, masked=False)
    chans = ("sim", "rowmax", "colmax")
    out, *stats = KS.sim_map_fwd(q.float(), None, d.float(), None, patch=None, channels=chans, clip=True,
                                 out_dtype=torch.float32, all_pairs=True)
    out2, *_ = KS.sim_map_fwd(q.float(), q_mask, d.float(), d_mask, patch=None, channels=chans, clip=True,
                              out_dtype=torch.float32, all_pairs=True)
    assert torch.equal(out, out2)
    g = torch.randn(6, 9, 7, 3, generator=gen)
    g_strided = torch.randn(3, 6, 7, 9, generator=gen).permute(1, 3, 2, 0)
    g_strided.copy_(g)
    a = KS.sim_map_bwd(g, q.float(), None, d.float(), None, patch=None, channels=chans, clip=True, stats=stats,
                       all_pairs=True)
    b = KS.sim_map_bwd(g_strided, q.float(), None, d.float(), None, patch=None, channels=chans, clip=True,
                       stats=stats, all_pairs=True)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_all_pairs_errors():
    q, d = torch.randn(2, 5, 8), torch.randn(3, 6, 8)
    with pytest.raises(ValueError, match=r"d must have shape \(2, n, 8\)"):
        KS.sim_map_fwd(q, None, d, None, patch=None, channels=("sim",), clip=True, out_dtype=torch.float32)
    with pytest.raises(ValueError, match=r"grad_out must have shape \(6, 5, 6, 1\)"):
        KS.sim_map_bwd(torch.randn(2, 5, 6, 1), q, None, d, None, patch=None, channels=("sim",), clip=True,
                       all_pairs=True)
