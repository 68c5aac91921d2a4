"""EntryBankLoss on the CPU over column blocks of the bank (frozen_bank_cross_entropy): value and gradient equal
the cross-entropy over all B x E logits (fp64 oracle), no less accurate than one info_nce call over the whole
bank, for one block, several blocks, uneven blocks and blocks of two entries."""

import pytest
import torch
import torch.nn.functional as F

from spherekit.losses.entry_bank import frozen_bank_cross_entropy
from spherekit.ops import info_nce


def _value_and_grad(fn, h):
    x = h.detach().clone().requires_grad_()
    loss = fn(x)
    (3.0 * loss).backward()  # grad_output != 1
    return loss.detach().double(), x.grad.double()


@pytest.mark.parametrize("n_entries, block_elements", [(41, 1 << 23), (401, 7 * 64), (1271, 7 * 100), (5, 14)])
@pytest.mark.parametrize("temperature", [1.0, 0.05])
def test_blocks_match_full_softmax(n_entries, block_elements, temperature):
    g = torch.Generator().manual_seed(n_entries)
    bank = torch.randn(n_entries, 16, generator=g)
    labels = torch.randint(0, n_entries, (7,), generator=g)
    labels[0] = n_entries - 1  # a target in the last block
    h = torch.randn(7, 16, generator=g)
    oracle = _value_and_grad(lambda x: F.cross_entropy(x @ bank.double().T / temperature, labels), h.double())
    ours = _value_and_grad(lambda x: frozen_bank_cross_entropy(x, bank, labels, temperature, "auto",
                                                               block_elements), h)
    whole = _value_and_grad(lambda x: info_nce(x, bank, labels, temperature=temperature, candidate_grad=False), h)
    torch32 = _value_and_grad(lambda x: F.cross_entropy(x @ bank.T / temperature, labels), h)
    for i in (0, 1):  # value, gradient
        err = (ours[i] - oracle[i]).abs().max().item()
        allowed = 2 * max((whole[i] - oracle[i]).abs().max().item(), (torch32[i] - oracle[i]).abs().max().item())
        assert err <= max(allowed, 1e-6), (i, err, allowed)


def test_blocks_have_at_least_two_entries_and_cover_the_bank(monkeypatch):
    import spherekit.losses.entry_bank as eb

    widths = []

    def spy(h, block, *args, **kwargs):
        widths.append(block.shape[0])
        return info_nce(h, block, *args, **kwargs)

    monkeypatch.setattr(eb, "info_nce", spy)
    bank = torch.randn(9, 4)
    frozen_bank_cross_entropy(torch.randn(3, 4), bank, torch.tensor([0, 8, 4]), 1.0, "auto", block_elements=6)
    assert sum(widths) == 9 and min(widths) >= 2 and max(widths) - min(widths) <= 1
