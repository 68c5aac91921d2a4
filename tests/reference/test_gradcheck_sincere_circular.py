"""gradcheck of the sincere (SINCERE / SoftCSE) and circular_cse oracles in float64."""

import math

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.reference.contrastive import sincere_bias_shift

ANGLES = torch.arange(12, dtype=torch.float64) * (math.pi / 6)
SOFTCSE_BIAS = torch.log1p(-torch.cos(ANGLES[:, None] - ANGLES[None, :]))  # diagonal -inf


def _unit(B, d, seed):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(B, d, generator=g, dtype=torch.float64), dim=-1).requires_grad_()


@pytest.mark.parametrize("bias", ["none", "softcse", "random", "dead_anchor"])
def test_gradcheck_sincere_reference(bias):
    e = _unit(9, 6, 0)
    tau = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 5])  # label 2 and 5: anchors without positives
    label_bias = {
        "none": None,
        "softcse": SOFTCSE_BIAS[:6, :6],
        "random": torch.randn(6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64),
        "dead_anchor": SOFTCSE_BIAS[:6, :6].clone().index_fill_(1, torch.tensor([1, 2, 3, 4, 5]), float("-inf")),
    }[bias]

    def fn(e_, tau_):
        return reference.sincere(e_, labels, temperature=tau_, label_bias=label_bias, compute_dtype=torch.float64)

    assert torch.isfinite(fn(e, tau))
    assert torch.autograd.gradcheck(fn, (e, tau))


def test_sincere_bias_shift_renormalises_weights_to_mean_one():
    labels = torch.tensor([0, 0, 1, 4, 4, 4, 7, 11])
    shift = sincere_bias_shift(labels, SOFTCSE_BIAS).double()
    for i in range(labels.numel()):
        neg = labels != labels[i]
        w = torch.exp(SOFTCSE_BIAS[labels[i], labels[neg]] + shift[i])
        torch.testing.assert_close(w.mean(), torch.tensor(1.0, dtype=torch.float64), atol=1e-6, rtol=1e-6)


def test_sincere_is_eq_5_6_by_direct_formula():
    """(1/|A|) sum_i (1/|P_i|) sum_j -log(e^{s_ij} / (e^{s_ij} + sum_{k in N_i} w_ik e^{s_ik})), w from eq. 8."""
    e = _unit(8, 5, 3).detach()
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 2, 3])
    tau = 0.2
    s = e @ e.T / tau
    terms = []
    for i in range(8):
        neg = labels != labels[i]
        w = 1 - torch.cos(ANGLES[labels[i]] - ANGLES[labels[neg]])
        w = w / w.mean()
        pos = [j for j in range(8) if j != i and labels[j] == labels[i]]
        if pos:
            z = torch.exp(s[i, neg]) @ w
            terms.append(torch.stack([-torch.log(torch.exp(s[i, j]) / (torch.exp(s[i, j]) + z)) for j in pos]).mean())
    expected = torch.stack(terms).mean()
    got = reference.sincere(e, labels, temperature=tau, label_bias=SOFTCSE_BIAS, compute_dtype=torch.float64)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("margin", [0.0, 0.15])
def test_gradcheck_circular_cse_reference(margin):
    e = _unit(8, 5, 2)
    labels = torch.tensor([0, 0, 0, 3, 3, 7, 9, 9])

    def fn(e_):
        return reference.circular_cse(e_, labels, ANGLES, margin=margin, compute_dtype=torch.float64)

    assert torch.autograd.gradcheck(fn, (e,))
