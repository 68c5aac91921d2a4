"""The verifier interface shared by F0..F4: input checks (through spherekit.ops.checks) and the (query, K
candidates) flattening.

A verifier scores paired token sequences: ``score(q_tokens, q_mask, d_tokens, d_mask) -> (B,)`` with
q_tokens (B, m, h), d_tokens (B, n, h) and bool masks (B, m), (B, n) (True = valid token). Masks may
be None (every token valid) or integer 0/1 tensors (a tokenizer's attention_mask); they become bool.

Two batched forms are built on it without a Python loop over the batch:

- ``score_candidates(q (B, m, h), q_mask, d (B, K, n, h), d_mask (B, K, n)) -> (B, K)``: one query
  against its own K candidates. The generic path flattens the (B, K) grid into B*K paired calls
  (q repeated K times along the batch axis); verifiers with a fused layout override it.
- ``score_all_pairs(q (Bq, m, h), q_mask, d (Bd, n, h), d_mask) -> (Bq, Bd)``: every query against
  every document (the in-batch block of an MNRL loss), by default through score_candidates with
  the documents broadcast to every query (MaxSim uses the op's all-pairs layout: no copies).
- ``score_grid(q, q_mask, pos, pos_mask, neg, neg_mask) -> (B, B + H)``: the MNRL candidate grid.

The flattening paths normalise every text once (Norm(x) = x / max(||x||, 1e-6), as the ops do) before
the B*K copies and call the ops with normalize=False, so the copies are not normalised (and saved for
backward) again; the scores are those of the paired calls.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..ops.checks import check_verifier_pair as check_pair
from ..ops.tokens import normalize_tokens, pad_tokens


def repeat_queries(q: Tensor, q_mask: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """(B, m, h), (B, m) -> (B*K, m, h), (B*K, m): each query repeated K times, query-major."""
    b, m, h = q.shape
    return q.unsqueeze(1).expand(b, k, m, h).reshape(b * k, m, h), q_mask.unsqueeze(1).expand(b, k, m).reshape(b * k, m)


class Verifier(nn.Module):
    """Base class: subclasses implement ``_score(q, q_mask, d, d_mask)`` on validated paired inputs."""

    #: short name used in reports ("F0".."F4")
    kind = "F?"
    #: True when a score depends on the other pairs of the call (BatchNorm in training mode)
    joint_grid = False

    def _score(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, normalize: bool = True) -> Tensor:
        """Paired scores (B,); normalize=False when the tokens are already unit vectors."""
        raise NotImplementedError

    def score(self, q_tokens: Tensor, q_mask: Tensor | None, d_tokens: Tensor, d_mask: Tensor | None) -> Tensor:
        """Paired scores: q_tokens (B, m, h) against d_tokens (B, n, h) -> (B,) fp32."""
        q_mask, d_mask = check_pair(q_tokens, q_mask, d_tokens, d_mask)
        return self._score(q_tokens, q_mask, d_tokens, d_mask)

    def forward(self, q_tokens: Tensor, q_mask: Tensor | None, d_tokens: Tensor, d_mask: Tensor | None) -> Tensor:
        return self.score(q_tokens, q_mask, d_tokens, d_mask)

    def score_candidates(self, q_tokens: Tensor, q_mask: Tensor | None, d_tokens: Tensor,
                         d_mask: Tensor | None) -> Tensor:
        """Each query against its own K candidates: q (B, m, h), d (B, K, n, h), d_mask (B, K, n) -> (B, K).

        Computed as B*K paired scores in one call (no loop over the batch)."""
        q_mask, d_mask = check_pair(q_tokens, q_mask, d_tokens, d_mask, d_ndim=4)
        return self._score_candidates(q_tokens, q_mask, d_tokens, d_mask)

    def _score_candidates(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor,
                          normalized: bool = False) -> Tensor:
        # normalise each text once, before the B*K copies (the paired ops then skip their own Norm)
        if not normalized:
            q, d = normalize_tokens(q), normalize_tokens(d)
        b, k, n, h = d.shape
        qq, qm = repeat_queries(q, q_mask, k)
        return self._score(qq, qm, d.reshape(b * k, n, h), d_mask.reshape(b * k, n), normalize=False).reshape(b, k)

    def score_all_pairs(self, q_tokens: Tensor, q_mask: Tensor | None, d_tokens: Tensor,
                        d_mask: Tensor | None) -> Tensor:
        """Every query against every document: q (Bq, m, h), d (Bd, n, h) -> (Bq, Bd)."""
        q_mask, d_mask = check_pair(q_tokens, q_mask, d_tokens, d_mask, same_batch=False)
        return self._score_all_pairs(q_tokens, q_mask, d_tokens, d_mask)

    def _score_all_pairs(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
        bq, q, d = q.shape[0], normalize_tokens(q), normalize_tokens(d)
        return self._score_candidates(q, q_mask, d[None].expand(bq, *d.shape), d_mask[None].expand(bq, *d_mask.shape),
                                      normalized=True)

    def score_grid(self, q_tokens: Tensor, q_mask: Tensor | None, pos_tokens: Tensor, pos_mask: Tensor | None,
                   neg_tokens: Tensor | None = None, neg_mask: Tensor | None = None) -> Tensor:
        """The MNRL candidate grid (B, B + H): column j < B scores query i against positive j (in-batch
        negatives for j != i), column B + k against query i's own near-miss k.

        q (B, m, h), positives (B, n, h), near-misses (B, H, n', h) with mask (B, H, n') or None.
        Verifiers whose scores depend on the batch (BatchNorm: ``joint_grid = True``) score the whole
        grid in one flattened call; the others score the two blocks separately (the in-batch block
        through score_all_pairs, which never copies the positives B times for F0 and F1).
        """
        q_mask, pos_mask = check_pair(q_tokens, q_mask, pos_tokens, pos_mask)
        if neg_tokens is None:
            if neg_mask is not None:
                raise ValueError("neg_mask was given without neg_tokens")
            return self._score_all_pairs(q_tokens, q_mask, pos_tokens, pos_mask)
        _, neg_mask = check_pair(q_tokens, q_mask, neg_tokens, neg_mask, d_ndim=4)
        if not self.joint_grid:
            return torch.cat([self._score_all_pairs(q_tokens, q_mask, pos_tokens, pos_mask),
                              self._score_candidates(q_tokens, q_mask, neg_tokens, neg_mask)], dim=1)
        b, n = q_tokens.shape[0], max(pos_tokens.shape[1], neg_tokens.shape[2])
        pos_tokens, pos_mask = pad_tokens(normalize_tokens(pos_tokens), pos_mask, n)
        neg_tokens, neg_mask = pad_tokens(normalize_tokens(neg_tokens), neg_mask, n)
        d4 = torch.cat([pos_tokens[None].expand(b, *pos_tokens.shape), neg_tokens], dim=1)
        m4 = torch.cat([pos_mask[None].expand(b, *pos_mask.shape), neg_mask], dim=1)
        return self._score_candidates(normalize_tokens(q_tokens), q_mask, d4, m4, normalized=True)

    @property
    def num_parameters(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
