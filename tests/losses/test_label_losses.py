"""SincereLoss, SoftCSELoss, CircularCSELoss ("Mapping the Circumplex of Affect", eq. 5-9): checked against the
equations written out with explicit loops here (value and gradient), against the spherekit.reference oracles, and for
their degenerate batches, validation and API."""

from __future__ import annotations

import logging
import math

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.losses import CircularCSELoss, SincereLoss, SoftCSELoss

ATOL, RTOL = 1e-5, 1e-5
ANGLES = [0.0, math.pi / 4, math.pi / 2, math.pi, 1.25 * math.pi, 1.75 * math.pi]  # 6 labels on a circle


def sincere_explicit(e, labels, tau=0.05, angles=None):
    """Eq. 5-8 with loops: mean over anchors with positives of the mean over positives of
    -log(e^{s_ij} / (e^{s_ij} + sum_k w_ik e^{s_ik})), w_ik = (1 - cos dtheta) / mean_N (1 - cos dtheta)."""
    e = F.normalize(e, dim=-1)
    s = e @ e.T / tau
    y = labels.tolist()
    per_anchor = []
    for i in range(len(y)):
        pos = [j for j in range(len(y)) if j != i and y[j] == y[i]]
        neg = [k for k in range(len(y)) if y[k] != y[i]]
        if not pos:
            continue
        if angles is None:
            w = [1.0] * len(neg)
        else:
            raw = [1 - math.cos(angles[y[i]] - angles[y[k]]) for k in neg]
            w = [r / (sum(raw) / len(raw)) for r in raw]
        terms = []
        for j in pos:
            denom = torch.exp(s[i, j]) + sum(wk * torch.exp(s[i, k]) for wk, k in zip(w, neg))
            terms.append(-(s[i, j] - torch.log(denom)))
        per_anchor.append(torch.stack(terms).mean())
    return torch.stack(per_anchor).mean()


def circular_explicit(e, labels, angles, margin=0.0):
    """Eq. 9 with loops."""
    e = F.normalize(e, dim=-1)
    y = labels.tolist()
    b = len(y)
    total = 0.0
    for i in range(b):
        for j in range(b):
            if i == j:
                continue
            x = e[i] @ e[j]
            c = math.cos(angles[y[i]] - angles[y[j]])
            if y[i] == y[j]:
                total = total + torch.clamp((x - c).abs() - margin, min=0.0) ** 2
            else:
                total = total + (x - c) ** 2
    return total / (b * (b - 1))


def run(loss_fn, ref_fn, e, labels, upstream=0.6):
    x = e.clone().requires_grad_(True)
    xr = e.clone().double().requires_grad_(True)
    out = loss_fn.compute_loss_from_embeddings([x], labels)
    ref = ref_fn(xr, labels)
    (out * upstream).backward()
    (ref * upstream).backward()
    torch.testing.assert_close(out.double(), ref.detach(), atol=ATOL, rtol=RTOL)
    torch.testing.assert_close(x.grad.double(), xr.grad, atol=ATOL, rtol=RTOL)
    return out


def batch(n, dim=12, n_labels=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, n_labels, (n,), generator=g)
    if n >= 3:
        labels[:3] = torch.tensor([0, 0, 3])  # at least one positive pair and a second label
    return torch.randn(n, dim, generator=g) * 2, labels


@pytest.mark.parametrize("n", [3, 11, 24])
def test_sincere_explicit(n):
    e, y = batch(n, seed=n)
    run(SincereLoss(None), lambda x, lab: sincere_explicit(x, lab), e, y)
    run(SincereLoss(None, temperature=0.3), lambda x, lab: sincere_explicit(x, lab, tau=0.3), e, y)


@pytest.mark.parametrize("n", [3, 11, 24])
def test_softcse_explicit(n):
    e, y = batch(n, seed=100 + n)
    run(SoftCSELoss(None, ANGLES, temperature=0.1), lambda x, lab: sincere_explicit(x, lab, 0.1, ANGLES), e, y)


def test_softcse_is_reference_sincere_with_log_weights():
    e, y = batch(17, seed=7)
    theta = torch.tensor(ANGLES, dtype=torch.float64)
    bias = torch.log(1 - torch.cos(theta[:, None] - theta[None, :]))
    run(SoftCSELoss(None, theta), lambda x, lab: reference.sincere(F.normalize(x, dim=-1), lab, label_bias=bias,
                                                                  compute_dtype=torch.float64), e, y)
    loss = SoftCSELoss(None, torch.tensor(ANGLES))
    off = ~torch.eye(len(ANGLES), dtype=torch.bool)
    torch.testing.assert_close(loss.label_bias[off].double(), bias[off], atol=1e-6, rtol=1e-6)
    assert torch.isneginf(loss.label_bias.diagonal()).all()


@pytest.mark.parametrize("margin", [0.0, 0.3])
@pytest.mark.parametrize("n", [2, 9, 20])
def test_circular_cse_explicit(n, margin):
    e, y = batch(n, seed=200 + n)
    run(CircularCSELoss(None, ANGLES, margin=margin), lambda x, lab: circular_explicit(x, lab, ANGLES, margin), e, y)


def test_reference_backends_agree():
    e, y = batch(10, seed=8)
    run(SincereLoss(None, backend="reference"), lambda x, lab: sincere_explicit(x, lab), e, y)
    run(SoftCSELoss(None, ANGLES, backend="reference"), lambda x, lab: sincere_explicit(x, lab, angles=ANGLES), e, y)
    run(CircularCSELoss(None, ANGLES, backend="reference"), lambda x, lab: circular_explicit(x, lab, ANGLES), e, y)


@pytest.mark.parametrize("labels,why", [([0, 1, 2, 3], "no two texts share"), ([2, 2, 2], "share one label")])
@pytest.mark.parametrize("cls", ["sincere", "softcse"])
def test_degenerate_batches_give_zero(labels, why, cls, caplog):
    loss = SincereLoss(None) if cls == "sincere" else SoftCSELoss(None, ANGLES)
    x = torch.randn(len(labels), 8, requires_grad=True)
    with caplog.at_level(logging.WARNING):
        out = loss.compute_loss_from_embeddings([x], torch.tensor(labels))
    out.backward()
    assert out.item() == 0.0 and torch.count_nonzero(x.grad) == 0
    assert why in caplog.text


def test_circular_single_text_gives_zero():
    x = torch.randn(1, 8, requires_grad=True)
    out = CircularCSELoss(None, ANGLES).compute_loss_from_embeddings([x], torch.tensor([2]))
    out.backward()
    assert out.item() == 0.0 and torch.count_nonzero(x.grad) == 0


@pytest.mark.parametrize("make", [lambda: SincereLoss(None), lambda: SoftCSELoss(None, ANGLES),
                                  lambda: CircularCSELoss(None, ANGLES)], ids=["sincere", "softcse", "circular"])
def test_label_validation(make):
    loss = make()
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="labels"):
        loss.compute_loss_from_embeddings([x], None)
    with pytest.raises(TypeError, match="integer"):
        loss.compute_loss_from_embeddings([x], torch.tensor([0.0, 0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        loss.compute_loss_from_embeddings([x], torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="1 input column"):
        loss.compute_loss_from_embeddings([x, x], torch.tensor([0, 0, 1, 1]))
    if not isinstance(loss, SincereLoss) or isinstance(loss, SoftCSELoss):
        with pytest.raises(ValueError, match=r"\[0, 6\)"):
            loss.compute_loss_from_embeddings([x], torch.tensor([0, 0, 1, 6]))


def test_angle_and_option_validation():
    for bad, err in (([], ValueError), ([[0.0, 1.0]], ValueError), ([0.0, float("nan")], ValueError),
                     ("north", TypeError)):
        with pytest.raises(err, match="label_angles"):
            SoftCSELoss(None, bad)
        with pytest.raises(err, match="label_angles"):
            CircularCSELoss(None, bad)
    with pytest.raises(ValueError, match="margin"):
        CircularCSELoss(None, ANGLES, margin=-0.1)
    with pytest.raises(ValueError, match="temperature"):
        SincereLoss(None, temperature=0.0)


def test_buffers_move_but_are_not_saved():
    soft, circ = SoftCSELoss(None, ANGLES), CircularCSELoss(None, ANGLES)
    assert "label_bias" not in soft.state_dict() and "label_angles" not in circ.state_dict()
    soft.to("meta")
    circ.to("meta")
    assert soft.label_bias.device.type == "meta" and circ.label_angles.device.type == "meta"


def test_config_and_citations():
    assert SincereLoss(None).get_config_dict() == {"temperature": 0.05, "backend": "auto"}
    assert SoftCSELoss(None, [0.0, 1.0]).get_config_dict() == {"label_angles": [0.0, 1.0], "temperature": 0.05,
                                                               "backend": "auto"}
    assert CircularCSELoss(None, [0.0, 1.0], margin=0.1).get_config_dict() == {
        "label_angles": [0.0, 1.0], "margin": 0.1, "backend": "auto"}
    assert "2309.14277" in SincereLoss(None).citation
    assert "zhuang2024" in SoftCSELoss(None, ANGLES).citation
    assert "2026.acl-long.772" in CircularCSELoss(None, ANGLES).citation
    for cls in (SincereLoss, SoftCSELoss, CircularCSELoss):
        for part in ("Args:", "References:", "Inputs:", "Example:"):
            assert part in cls.__init__.__doc__, (cls, part)
    assert "RADIANS" in SoftCSELoss.__init__.__doc__ and "RADIANS" in CircularCSELoss.__init__.__doc__
