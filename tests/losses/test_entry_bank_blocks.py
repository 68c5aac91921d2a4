"""EntryBankLoss's computation on the CPU (frozen_bank_cross_entropy: one info_nce call) when the bank is read in
column blocks (spherekit.ops._info_nce_cpu.tile_shape): value and gradient equal the cross-entropy over all B x E
logits (fp64 oracle), no less accurate than the same call over whole rows, for one block, several blocks, uneven
blocks and blocks of a single entry."""

import pytest
import torch
import torch.nn.functional as F

from spherekit.losses.entry_bank import frozen_bank_cross_entropy
from spherekit.ops import cpu_budget, _info_nce_cpu


def _value_and_grad(fn, h):
    x = h.detach().clone().requires_grad_()
    loss = fn(x)
    (3.0 * loss).backward()  # grad_output != 1
    return loss.detach().double(), x.grad.double()


@pytest.mark.parametrize("n_entries, tile_elements", [(41, 1 << 21), (401, 7 * 64), (1271, 7 * 100), (5, 7)])
@pytest.mark.parametrize("temperature", [1.0, 0.05])
def test_blocks_match_full_softmax(monkeypatch, n_entries, tile_elements, temperature):
    g = torch.Generator().manual_seed(n_entries)
    bank = torch.randn(n_entries, 16, generator=g)
    labels = torch.randint(0, n_entries, (7,), generator=g)
    labels[0] = n_entries - 1  # a target in the last block
    h = torch.randn(7, 16, generator=g)
    oracle = _value_and_grad(lambda x: F.cross_entropy(x @ bank.double().T / temperature, labels), h.double())
    whole = _value_and_grad(lambda x: frozen_bank_cross_entropy(x, bank, labels, temperature), h)
    torch32 = _value_and_grad(lambda x: F.cross_entropy(x @ bank.T / temperature, labels), h)
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", tile_elements)
    monkeypatch.setattr(cpu_budget, "MIN_TILE_ELEMENTS", 0)
    rows, cols = _info_nce_cpu.tile_shape(7, n_entries)
    assert rows == 7 and (cols == n_entries) == (tile_elements == 1 << 21)  # blocks of every row, or one tile
    ours = _value_and_grad(lambda x: frozen_bank_cross_entropy(x, bank, labels, temperature), h)
    for i in (0, 1):  # value, gradient
        err = (ours[i] - oracle[i]).abs().max().item()
        allowed = 2 * max((whole[i] - oracle[i]).abs().max().item(), (torch32[i] - oracle[i]).abs().max().item())
        assert err <= max(allowed, 1e-6), (i, err, allowed)
