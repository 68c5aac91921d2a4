"""gradcheck of the token-similarity-map oracles in float64 (including lam and tau of soft_align): the oracles
themselves must be right."""

import pytest
import torch

from spherekit.reference import sim_map as ref

F64 = torch.float64


def _x(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64).requires_grad_()


def _mask(*shape, seed):
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < 0.7
    mask[..., 0] = True
    return mask


QM, DM = _mask(2, 4, seed=1), _mask(3, 5, seed=2)


@pytest.mark.parametrize("normalize", [True, False])
def test_maxsim_all_layouts(normalize):
    q, d3, d4 = _x(2, 4, 6, seed=3), _x(3, 5, 6, seed=4), _x(2, 3, 5, 6, seed=5)
    dm4 = _mask(2, 3, 5, seed=6)
    kw = dict(normalize=normalize, compute_dtype=F64)
    assert torch.autograd.gradcheck(lambda a, b: ref.maxsim(a, QM, b, DM, **kw), (q, d3))
    assert torch.autograd.gradcheck(lambda a, b: ref.maxsim(a, QM, b, DM[:2], pairwise=True, **kw), (q, d3[:2]))
    assert torch.autograd.gradcheck(lambda a, b: ref.maxsim(a, QM, b, dm4, **kw), (q, d4))


@pytest.mark.parametrize("normalize", [True, False])
def test_soft_align_with_lam_and_tau(normalize):
    q, d = _x(2, 4, 6, seed=7), _x(2, 5, 6, seed=8)
    lam = torch.tensor(0.2, dtype=F64, requires_grad=True)
    tau = torch.tensor(0.5, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, l_, t_: ref.soft_align(a, QM, b, DM[:2], lam=l_, tau=t_, normalize=normalize, compute_dtype=F64),
        (q, d, lam, tau))


@pytest.mark.parametrize("patch", [None, 3])
@pytest.mark.parametrize("clip", [True, False])
def test_sim_map_all_channels(patch, clip):
    q, d = _x(2, 4, 6, seed=9), _x(2, 5, 6, seed=10)
    scale = 1.0 if clip else 0.5  # with clip, normalize=False below keeps some |M| > 1 and some < 1
    assert torch.autograd.gradcheck(
        lambda a, b: ref.sim_map(a * scale, QM, b * scale, DM[:2], patch=patch, channels=("sim", "rowmax", "colmax"),
                                 clip=clip, normalize=False, compute_dtype=F64), (q, d))
    assert torch.autograd.gradcheck(
        lambda a, b: ref.sim_map(a, QM, b, DM[:2], patch=patch, channels=("colmax", "sim"), compute_dtype=F64), (q, d))


def test_global_avg_sim():
    q, d = _x(2, 4, 6, seed=11), _x(2, 5, 6, seed=12)
    assert torch.autograd.gradcheck(lambda a, b: ref.global_avg_sim(a, QM, b, DM[:2], compute_dtype=F64), (q, d))
