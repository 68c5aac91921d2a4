"""EntryBankLoss (DefSent+, eq. 1): softmax over every entry of a frozen bank, checked against
F.cross_entropy on the materialised logits; the bank gets no gradient and is a non-saved buffer."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.losses import EntryBankLoss

ATOL, RTOL = 1e-5, 1e-5


def setup(batch=9, entries=37, dim=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(batch, dim, generator=g)
    bank = torch.randn(entries, dim, generator=g) * 0.4
    labels = torch.randint(0, entries, (batch,), generator=g)
    return h, bank, labels


def explicit(h, bank, labels, tau, normalize):
    if normalize:
        h, bank = F.normalize(h, dim=-1), F.normalize(bank, dim=-1)
    return F.cross_entropy(h @ bank.T / tau, labels)


@pytest.mark.parametrize("normalize,temperature", [(False, None), (False, 0.5), (True, None), (True, 0.1)])
@pytest.mark.parametrize("batch,entries", [(1, 2), (9, 37), (30, 401)])
def test_against_cross_entropy(normalize, temperature, batch, entries):
    h, bank, labels = setup(batch, entries, seed=batch + entries)
    loss = EntryBankLoss(None, bank, temperature=temperature, normalize=normalize)
    tau = temperature if temperature is not None else (0.05 if normalize else 1.0)
    assert loss.temperature == tau
    x = h.clone().requires_grad_(True)
    xr = h.clone().double().requires_grad_(True)
    out = loss.compute_loss_from_embeddings([x], labels)
    ref = explicit(xr, bank.double(), labels, tau, normalize)
    (out * 1.7).backward()
    (ref * 1.7).backward()
    torch.testing.assert_close(out.double(), ref.detach(), atol=ATOL, rtol=RTOL)
    torch.testing.assert_close(x.grad.double(), xr.grad, atol=ATOL, rtol=RTOL)


def test_bank_is_frozen_buffer_not_saved():
    h, bank, labels = setup()
    bank_param = bank.clone().requires_grad_(True)  # even a tensor that asks for grad is frozen
    loss = EntryBankLoss(None, bank_param)
    assert not loss.bank.requires_grad
    assert "bank" in dict(loss.named_buffers()) and "bank" not in loss.state_dict()
    loss.compute_loss_from_embeddings([h.requires_grad_(True)], labels).backward()
    assert bank_param.grad is None
    loss.to("meta")
    assert loss.bank.device.type == "meta"


def test_set_bank_and_dtype():
    h, bank, labels = setup()
    loss = EntryBankLoss(None, bank)
    new = torch.randn(5, bank.shape[1], dtype=torch.float64)
    loss.set_bank(new)
    assert loss.bank.shape == (5, bank.shape[1])
    labels = labels % 5
    out = loss.compute_loss_from_embeddings([h], labels)  # float64 bank, float32 embeddings
    torch.testing.assert_close(out, explicit(h, new.float(), labels, 1.0, False), atol=ATOL, rtol=RTOL)
    assert loss.get_config_dict() == {"bank_shape": (5, bank.shape[1]), "temperature": 1.0, "normalize": False,
                                      "backend": "auto"}


def test_validation():
    h, bank, labels = setup()
    with pytest.raises(ValueError, match="E >= 2"):
        EntryBankLoss(None, bank[:1])
    with pytest.raises(TypeError, match="floating"):
        EntryBankLoss(None, bank.long())
    with pytest.raises(ValueError, match="NaN"):
        EntryBankLoss(None, torch.full((3, 4), float("nan")))
    with pytest.raises(TypeError, match="torch.Tensor"):
        EntryBankLoss(None, [[0.0, 1.0], [1.0, 0.0]])
    loss = EntryBankLoss(None, bank)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 37\)"):
        loss.compute_loss_from_embeddings([h], torch.full((h.shape[0],), 37))
    with pytest.raises(ValueError, match="embedding size"):
        loss.compute_loss_from_embeddings([h[:, :5]], labels)
    with pytest.raises(ValueError, match="temperature"):
        EntryBankLoss(None, bank, temperature=-1.0)


def test_citation_and_doc():
    loss = EntryBankLoss(None, torch.randn(3, 4))
    assert "2405.16153" in loss.citation
    for part in ("Args:", "References:", "Inputs:", "Example:", "non-persistent buffer"):
        assert part in EntryBankLoss.__init__.__doc__
