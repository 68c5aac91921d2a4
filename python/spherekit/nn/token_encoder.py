"""Token embeddings (and the pooled sentence embedding) of texts from a sentence-transformers model.

``encode_tokens(model, texts)`` returns ``TokenBatch(tokens (N, L, h), mask (N, L) bool, pooled (N, h))``
with L the longest tokenised text (the model's ``max_seq_length`` truncates). With ``grad=False`` (the
frozen regime) texts are encoded in chunks of ``batch_size`` under torch.no_grad and the chunks are
zero-padded to one length; with ``grad=True`` (end-to-end) one forward keeps the graph.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class TokenBatch:
    tokens: Tensor  # (N, L, h)
    mask: Tensor  # (N, L) bool
    pooled: Tensor | None  # (N, h): the model's sentence_embedding (not normalised), when it has one


def _to_device(features: dict, device) -> dict:
    return {k: v.to(device) if isinstance(v, Tensor) else v for k, v in features.items()}


def encode_tokens(model: nn.Module, texts: list[str], *, batch_size: int = 64, grad: bool = False,
                  dtype: torch.dtype | None = None) -> TokenBatch:
    """Encode texts with a SentenceTransformer into padded token embeddings, masks and pooled vectors.

    Args:
        model: a SentenceTransformer (``preprocess`` + forward giving ``token_embeddings``,
            ``attention_mask`` and ``sentence_embedding``).
        texts: the texts (N >= 1).
        batch_size: texts per forward pass when grad=False.
        grad: keep the autograd graph (one forward over all texts; the end-to-end regime).
        dtype: cast tokens and pooled vectors to this dtype (e.g. torch.float16 to halve a stored corpus).
    """
    if isinstance(texts, str) or len(texts) == 0:
        raise ValueError(f"texts must be a non-empty list of strings, got {texts!r:.60}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = next(model.parameters()).device
    step = len(texts) if grad else batch_size
    parts = []
    with nullcontext() if grad else torch.no_grad():
        for start in range(0, len(texts), step):
            out = model(_to_device(model.preprocess(list(texts[start:start + step])), device))
            parts.append((out["token_embeddings"], out["attention_mask"].bool(), out.get("sentence_embedding")))
    length = max(t.shape[1] for t, _, _ in parts)
    tokens = torch.cat([F.pad(t, (0, 0, 0, length - t.shape[1])) for t, _, _ in parts])
    mask = torch.cat([F.pad(m, (0, length - m.shape[1]), value=False) for _, m, _ in parts])
    pooled = None if any(p is None for _, _, p in parts) else torch.cat([p for _, _, p in parts])
    if dtype is not None:
        tokens = tokens.to(dtype)
        pooled = None if pooled is None else pooled.to(dtype)
    return TokenBatch(tokens, mask, pooled)
