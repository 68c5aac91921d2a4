"""A synthetic structural near-miss task that pooled cosine cannot solve but token maps can.

Every "sentence" is a sequence of `length` distinct tokens drawn from a vocabulary of random unit
vectors (one fixed table for train and test). For query s:
    positive   = s again (a paraphrase: same tokens, same order), fresh noise on every token
    near-miss  = s with two positions swapped (a role swap: the same bag of tokens in another order)
Without context the pooled mean of a near-miss equals that of the positive up to noise, so F0 (and
MaxSim, which is invariant to the order of the document's tokens) sit at chance; the diagonal of the
map M (positive) versus a broken diagonal (near-miss) is what a map verifier can learn.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from spherekit.training.verifier import TokenTriplets


def make_task(n: int, seed: int, *, vocab: int = 24, h: int = 16, length: int = 6, noise: float = 0.1,
              pad: int = 0) -> TokenTriplets:
    """n examples; `pad` extra padding positions (mask False) at the end of every text."""
    table = F.normalize(torch.randn(vocab, h, generator=torch.Generator().manual_seed(1234)), dim=-1)
    g = torch.Generator().manual_seed(seed)
    seqs = torch.stack([torch.randperm(vocab, generator=g)[:length] for _ in range(n)])
    a = torch.randint(0, length, (n,), generator=g)
    b = (a + 1 + torch.randint(0, length - 1, (n,), generator=g)) % length
    rows = torch.arange(n)
    swapped = seqs.clone()
    swapped[rows, a], swapped[rows, b] = seqs[rows, b], seqs[rows, a]

    def noisy(s):
        x = table[s] + noise * torch.randn(*s.shape, h, generator=g)
        return F.pad(x, (0, 0, 0, pad))

    mask = torch.zeros(n, length + pad, dtype=torch.bool)
    mask[:, :length] = True
    return TokenTriplets(noisy(seqs), mask, noisy(seqs), mask.clone(), noisy(swapped)[:, None], mask[:, None].clone())


@torch.no_grad()
def pair_accuracy(verifier, data: TokenTriplets) -> float:
    """Fraction of queries whose positive outscores their near-miss (a tie counts 1/2)."""
    verifier.eval()
    sp = verifier.score(data.anchors, data.anchor_mask, data.positives, data.positive_mask)
    sn = verifier.score(data.anchors, data.anchor_mask, data.negatives[:, 0], data.negative_mask[:, 0])
    return float(((sp > sn).float() + 0.5 * (sp == sn).float()).mean())
