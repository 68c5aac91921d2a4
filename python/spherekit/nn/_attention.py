"""Shared pieces of the nGPT and GPT blocks: argument checks, the SDPA mask, multi-head attention.

Mask semantics: ``attention_mask`` is (B, T) with 1/True for a real token and 0/False for padding. A query
attends to the real keys (those at or before it when causal) and always to itself, so a padding query (e.g.
a left-padded position under a causal mask) has a non-empty softmax and stays finite; real queries never
see padding keys, so padding never changes the outputs at real tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def check_block_dims(d_model: int, n_heads: int, d_mlp: int) -> int:
    """Validate the block sizes and return d_head = d_model // n_heads."""
    for name, value in (("d_model", d_model), ("n_heads", n_heads), ("d_mlp", d_mlp)):
        if not (isinstance(value, int) and value > 0):
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads}); "
                         f"d_model % n_heads = {d_model % n_heads}")
    return d_model // n_heads


def check_inputs(h: Tensor, attention_mask: Tensor | None, d_model: int) -> None:
    if not isinstance(h, Tensor) or h.dim() != 3 or h.shape[-1] != d_model:
        shape = tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__
        raise ValueError(f"h must be (batch, seq_len, d_model={d_model}), got {shape}")
    if attention_mask is not None and tuple(attention_mask.shape) != tuple(h.shape[:2]):
        raise ValueError(f"attention_mask must be (batch, seq_len) = {tuple(h.shape[:2])}, "
                         f"got {tuple(attention_mask.shape)}")


def sdpa_mask(attention_mask: Tensor | None, seq_len: int, causal: bool, device) -> Tensor | None:
    """Boolean (B, 1, T, T) mask for scaled_dot_product_attention (True = attend), or None when unmasked."""
    if attention_mask is None and not causal:
        return None
    allowed = torch.ones(1, 1, seq_len, seq_len, dtype=torch.bool, device=device)
    if causal:
        allowed = allowed.tril()
    if attention_mask is not None:
        allowed = allowed & attention_mask.to(device=device, dtype=torch.bool)[:, None, None, :]
    return allowed | torch.eye(seq_len, dtype=torch.bool, device=device)


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, n_heads * d_head) -> (B, n_heads, T, d_head)."""
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """softmax(q k^T * scale + mask) v over (B, H, T, d_head) inputs, returned merged as (B, T, H * d_head)."""
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    b, n_heads, t, d_head = y.shape
    return y.transpose(1, 2).reshape(b, t, n_heads * d_head)
