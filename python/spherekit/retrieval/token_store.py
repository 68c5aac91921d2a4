"""Stored token embeddings of a corpus, for stage-2 verification: padded or ragged.

Row r of a store belongs to the document at position r of the stage-1 index (insertion order).

- ``PaddedTokenStore(tokens (N, n, h), mask (N, n))``: simple; costs N * n * h even for short texts.
- ``RaggedTokenStore(tokens (T, h), offsets (N+1,))``: document r is tokens[offsets[r]:offsets[r+1]]
  (only valid tokens are stored). ``packed(positions)`` gives K documents packed for
  ``spherekit.ops.maxsim_ragged``; ``gather`` pads them for any verifier.

``gather(positions (Q, K))`` -> tokens (Q, K, L, h) and bool mask (Q, K, L), zero-padded to the
longest gathered document L.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check_positions(positions: Tensor, size: int) -> Tensor:
    if not isinstance(positions, Tensor) or positions.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"positions must be an int64 tensor, got {getattr(positions, 'dtype', type(positions))}")
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= size):
        raise ValueError(f"positions must lie in [0, {size}), got values in "
                         f"[{int(positions.min())}, {int(positions.max())}]")
    return positions.long()


class PaddedTokenStore:
    """Token embeddings padded to one length: tokens (N, n, h), mask (N, n) bool (True = valid)."""

    def __init__(self, tokens: Tensor, mask: Tensor) -> None:
        if not isinstance(tokens, Tensor) or tokens.dim() != 3 or not tokens.is_floating_point():
            raise ValueError(f"tokens must be a floating (N, n, h) tensor, got {getattr(tokens, 'shape', tokens)}")
        if not isinstance(mask, Tensor) or tuple(mask.shape) != tuple(tokens.shape[:2]):
            raise ValueError(f"mask must have shape {tuple(tokens.shape[:2])}, got {tuple(getattr(mask, 'shape', ()))}")
        mask = mask.bool().to(tokens.device)
        if bool((~mask.any(1)).any()):
            raise ValueError(f"every document needs a valid token; rows without one: "
                             f"{torch.nonzero(~mask.any(1)).flatten()[:5].tolist()}")
        self.tokens, self.mask = tokens, mask

    def __len__(self) -> int:
        return self.tokens.shape[0]

    @property
    def dim(self) -> int:
        return self.tokens.shape[-1]

    def gather(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        pos = _check_positions(positions, len(self)).to(self.tokens.device)
        mask = self.mask[pos]
        length = int(mask.any(tuple(range(mask.dim() - 1))).nonzero().max()) + 1
        return self.tokens[pos][..., :length, :], mask[..., :length]

    def to_ragged(self) -> RaggedTokenStore:
        return RaggedTokenStore.from_padded(self.tokens, self.mask)


class RaggedTokenStore:
    """Valid tokens only, packed: tokens (T, h), offsets (N+1,) int64 with offsets[0] = 0, offsets[N] = T."""

    def __init__(self, tokens: Tensor, offsets: Tensor) -> None:
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or not tokens.is_floating_point():
            raise ValueError(f"tokens must be a floating (T, h) tensor, got {getattr(tokens, 'shape', tokens)}")
        if not isinstance(offsets, Tensor) or offsets.dim() != 1 or offsets.dtype != torch.int64 or offsets.numel() < 2:
            raise ValueError("offsets must be a 1-D int64 tensor of N+1 >= 2 entries")
        offsets = offsets.to(tokens.device)
        lengths = offsets[1:] - offsets[:-1]
        if int(offsets[0]) != 0 or int(offsets[-1]) != tokens.shape[0] or bool((lengths < 1).any()):
            raise ValueError(f"offsets must start at 0, end at T={tokens.shape[0]} and increase strictly "
                             f"(every document needs a token), got {offsets[:5].tolist()}...{offsets[-1:].tolist()}")
        self.tokens, self.offsets, self.lengths = tokens, offsets, lengths

    @classmethod
    def from_padded(cls, tokens: Tensor, mask: Tensor) -> RaggedTokenStore:
        padded = PaddedTokenStore(tokens, mask)  # validates
        lengths = padded.mask.sum(1)
        offsets = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
        return cls(padded.tokens[padded.mask], offsets)

    def __len__(self) -> int:
        return self.lengths.shape[0]

    @property
    def dim(self) -> int:
        return self.tokens.shape[-1]

    def packed(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """K documents (positions (K,)) packed: tokens (T', h), offsets (K+1,) int64."""
        pos = _check_positions(positions, len(self)).to(self.tokens.device)
        if pos.dim() != 1:
            raise ValueError(f"positions must be 1-D (K,), got shape {tuple(pos.shape)}")
        lens = self.lengths[pos]
        offsets = torch.cat([lens.new_zeros(1), lens.cumsum(0)])
        within = torch.arange(int(offsets[-1]), device=pos.device) - torch.repeat_interleave(offsets[:-1], lens)
        return self.tokens[torch.repeat_interleave(self.offsets[pos], lens) + within], offsets

    def gather(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        pos = _check_positions(positions, len(self)).to(self.tokens.device)
        lens = self.lengths[pos]
        steps = torch.arange(int(lens.max()), device=pos.device)
        mask = steps < lens[..., None]
        index = torch.where(mask, self.offsets[pos][..., None] + steps, torch.zeros_like(steps))
        return self.tokens[index] * mask[..., None].to(self.tokens.dtype), mask
