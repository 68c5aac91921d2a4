"""MNRL (InfoNCE) over verifier scores: in-batch negatives plus each query's own near-miss negatives.

For a batch of B queries q_i with positives p_i and H near-misses n_{i,1..H} per query, the verifier F
scores the grid of B x (B + H) (query, candidate) pairs (``score_grid``, no Python loop over the batch;
the map verifiers F3 / F4 get the in-batch block from the all-pairs layout of sim_map, written from the
B + B token sequences without copying any of them once per pair):

    S_ij      = F(q_i, p_j)          j = 0..B-1   (the positive at j = i, in-batch negatives elsewhere)
    S_i,B+k   = F(q_i, n_{i,k})      k = 0..H-1   (the query's own near-misses)
    loss      = (1/B) sum_i [ logsumexp_c (s * S_ic) - s * S_ii ]

with scale s = 1 / temperature (fixed, or learnable through log s). The paper's code scores the same
grid with one verifier call per query plus one for the near-misses (H = 1), temperature 0.05 by
default and 0.1 in its experiment script; the default here is scale 10 (temperature 0.1).

Two training regimes ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), sec. 3.2): frozen (token embeddings precomputed or computed under no_grad; only the verifier
learns) and end-to-end (the encoder's token embeddings carry gradients). ``VerifierMNRLLoss`` follows
sentence-transformers' loss conventions for both.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..nn import Verifier
from ..ops.checks import check_verifier_pair as check_pair
from ..ops.tokens import pad_tokens
from ._verifier_grid import MAP_VERIFIERS, map_verifier_grid

__all__ = ["VerifierMNRLLoss", "score_grid", "verifier_mnrl_loss"]


def _check_scale(scale) -> None:
    if isinstance(scale, Tensor):
        if scale.dim() != 0 or not scale.is_floating_point():
            raise ValueError(f"scale must be a float or a 0-dim floating tensor, got shape {tuple(scale.shape)}")
        if not float(scale.detach()) > 0:
            raise ValueError(f"scale must be > 0, got {float(scale.detach())}")
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite float > 0, got {scale!r}")


def _check_chunk_rows(verifier, chunk_rows) -> None:
    if chunk_rows is None:
        return
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive int or None, got {chunk_rows!r}")
    if not isinstance(verifier, MAP_VERIFIERS):
        raise ValueError(f"chunk_rows is supported for the map verifiers F3 and F4 (CNNVerifier, "
                         f"PatchTransformerVerifier); got {type(verifier).__name__} ({verifier.kind})")


def verifier_mnrl_loss(verifier: Verifier, q_tokens: Tensor, q_mask: Tensor | None, pos_tokens: Tensor,
                       pos_mask: Tensor | None, neg_tokens: Tensor | None = None, neg_mask: Tensor | None = None,
                       *, scale: float | Tensor = 10.0, return_scores: bool = False, chunk_rows: int | None = None):
    """Cross-entropy of the (B, B + H) verifier score grid with target column i for query i.

    Args:
        verifier: any spherekit verifier (F0..F4).
        q_tokens, q_mask: queries (B, m, h), (B, m).
        pos_tokens, pos_mask: their positives (B, n, h), (B, n).
        neg_tokens, neg_mask: near-misses (B, H, n', h), (B, H, n') or None (in-batch negatives only).
        scale: logit scale s = 1 / temperature (float or 0-dim tensor, > 0).
        return_scores: also return the (B, B + H) score grid (before scaling).
        chunk_rows: F3 / F4: score the in-batch block this many queries at a time (and each near-miss column on
            its own), each call under activation checkpointing: one chunk's maps and activations alive at once,
            recomputed in backward, for about one more forward pass of the verifier. F4: the same loss and
            gradients. F3 in training mode: BatchNorm statistics per call instead of over the whole grid
            (chunk_rows = 1 is the released code's per-query calls). None: the whole grid in one call.
    Returns:
        the mean loss (0-dim fp32), and the scores when asked.
    """
    _check_scale(scale)
    scores = score_grid(verifier, q_tokens, q_mask, pos_tokens, pos_mask, neg_tokens, neg_mask, chunk_rows=chunk_rows)
    target = torch.arange(scores.shape[0], device=scores.device)
    loss = F.cross_entropy(scores.float() * scale, target)
    return (loss, scores) if return_scores else loss


def score_grid(verifier: Verifier, q_tokens: Tensor, q_mask: Tensor | None, pos_tokens: Tensor,
               pos_mask: Tensor | None, neg_tokens: Tensor | None = None, neg_mask: Tensor | None = None, *,
               chunk_rows: int | None = None) -> Tensor:
    """The (B, B + H) MNRL grid: F3 / F4 from the all-pairs layout of sim_map (no token sequence copied per
    pair; spherekit.losses._verifier_grid), every other verifier through its own Verifier.score_grid;
    chunk_rows: see verifier_mnrl_loss (F3 / F4)."""
    _check_chunk_rows(verifier, chunk_rows)
    if not isinstance(verifier, MAP_VERIFIERS):
        return verifier.score_grid(q_tokens, q_mask, pos_tokens, pos_mask, neg_tokens, neg_mask)
    q_mask, pos_mask = check_pair(q_tokens, q_mask, pos_tokens, pos_mask)
    if neg_tokens is None and neg_mask is not None:
        raise ValueError("neg_mask was given without neg_tokens")
    if neg_tokens is not None:
        _, neg_mask = check_pair(q_tokens, q_mask, neg_tokens, neg_mask, d_ndim=4)
    return map_verifier_grid(verifier, q_tokens, q_mask, pos_tokens, pos_mask, neg_tokens, neg_mask, chunk_rows)


def stack_columns(tokens: list[Tensor], masks: list[Tensor]) -> tuple[Tensor, Tensor]:
    """H columns of (B, n_k, h) tokens / (B, n_k) masks -> (B, H, max n_k, h), (B, H, max n_k), zero-padded."""
    n = max(t.shape[1] for t in tokens)
    padded = [pad_tokens(t, m.bool(), n) for t, m in zip(tokens, masks)]
    return torch.stack([t for t, _ in padded], dim=1), torch.stack([m for _, m in padded], dim=1)


class VerifierMNRLLoss(nn.Module):
    def __init__(self, model: nn.Module | None, verifier: Verifier, scale: float = 10.0, *, learn_scale: bool = False,
                 freeze_encoder: bool = True, chunk_rows: int | None = None) -> None:
        """MultipleNegativesRankingLoss over a token-map verifier's scores (in-batch + near-miss negatives).

        Args:
            model: a SentenceTransformer whose output features hold ``token_embeddings`` and
                ``attention_mask`` (None when only ``compute_loss_from_token_embeddings`` is used).
            verifier: the verifier F0..F4 (its parameters belong to this loss's parameters).
            scale: logit scale s = 1 / temperature (paper's code: temperature 0.05 by default, 0.1 in
                its experiment script).
            learn_scale: learn log(s) as a parameter (initialised at log(scale)).
            freeze_encoder: True computes the token embeddings under torch.no_grad (frozen regime);
                False lets gradients reach the encoder (end-to-end regime).
            chunk_rows: F3 / F4: score the grid this many queries at a time under activation checkpointing
                (less memory; F3's BatchNorm statistics per chunk; see verifier_mnrl_loss).

        References:
            - Ralev et al. 2026, Training for Compositional Sensitivity Reduces Dense Retrieval
              Generalization: https://arxiv.org/abs/2604.16351
            - Henderson et al. 2017, Efficient Natural Language Response Suggestion for Smart Reply:
              https://arxiv.org/abs/1705.00652

        Inputs:
            +-----------------------------------------------------+--------+
            | Inputs                                              | Labels |
            +=====================================================+========+
            | (anchor, positive) pairs                            | none   |
            +-----------------------------------------------------+--------+
            | (anchor, positive, near_miss_1, ..., near_miss_H)   | none   |
            +-----------------------------------------------------+--------+

        Example:
            ::

                from spherekit.nn import PatchTransformerVerifier
                from spherekit.losses import VerifierMNRLLoss

                verifier = PatchTransformerVerifier()
                loss = VerifierMNRLLoss(model, verifier, freeze_encoder=False)
                features = [model.preprocess(col) for col in (anchors, positives, near_misses)]
                loss(features).backward()   # gradients reach the verifier and the encoder
        """
        super().__init__()
        _check_scale(scale)
        _check_chunk_rows(verifier, chunk_rows)
        self.model = model
        self.verifier = verifier
        self.freeze_encoder = freeze_encoder
        self.chunk_rows = chunk_rows
        log_scale = torch.tensor(math.log(float(scale)))
        if learn_scale:
            self.log_scale = nn.Parameter(log_scale)
        else:
            self.register_buffer("log_scale", log_scale)

    @property
    def scale(self) -> Tensor:
        return self.log_scale.exp()

    def token_embeddings(self, features: dict) -> tuple[Tensor, Tensor]:
        """Run the encoder on one column of features -> (token_embeddings (B, n, h), bool mask (B, n))."""
        if self.model is None:
            raise ValueError("VerifierMNRLLoss was built with model=None; call compute_loss_from_token_embeddings")
        context = torch.no_grad() if self.freeze_encoder else nullcontext()
        with context:
            out = self.model(features)
        return out["token_embeddings"], out["attention_mask"].bool()

    def forward(self, sentence_features: list[dict], labels: Tensor | None = None) -> Tensor:
        if len(sentence_features) < 2:
            raise ValueError(f"VerifierMNRLLoss expects at least 2 input columns (anchor, positive), "
                             f"got {len(sentence_features)}")
        cols = [self.token_embeddings(f) for f in sentence_features]
        return self.compute_loss_from_token_embeddings([t for t, _ in cols], [m for _, m in cols])

    def compute_loss_from_token_embeddings(self, tokens: list[Tensor], masks: list[Tensor]) -> Tensor:
        """tokens[0] anchors, tokens[1] positives, tokens[2:] near-miss columns, each (B, n_k, h)."""
        if len(tokens) < 2 or len(tokens) != len(masks):
            raise ValueError(f"expected matching lists of at least 2 token tensors and masks, got {len(tokens)} "
                             f"tokens and {len(masks)} masks")
        neg, neg_mask = stack_columns(tokens[2:], masks[2:]) if len(tokens) > 2 else (None, None)
        return verifier_mnrl_loss(self.verifier, tokens[0], masks[0], tokens[1], masks[1], neg, neg_mask,
                                  scale=self.scale, chunk_rows=self.chunk_rows)

    def get_config_dict(self) -> dict:
        return {"verifier": type(self.verifier).__name__, "scale": float(self.scale.detach()),
                "learn_scale": isinstance(self.log_scale, nn.Parameter), "freeze_encoder": self.freeze_encoder,
                "chunk_rows": self.chunk_rows}

    @property
    def citation(self) -> str:
        return """
@misc{ralev2026compositional,
    title = {Training for Compositional Sensitivity Reduces Dense Retrieval Generalization},
    author = {Radoslav Ralev and Aditeya Baral and Iliya Zhechev and Jen Agarwal and Srijith Rajamohan},
    year = {2026},
    eprint = {2604.16351},
    archivePrefix = {arXiv},
}
"""
