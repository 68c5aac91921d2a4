"""GPTBlock: the pre-norm Transformer block of "Mapping the Circumplex of Affect" (arXiv:2601.06575)'s GPT head
baseline (appendix B, eq. 12, 15, 17):

    h'  = h  + ATTN(RMSNorm(h))
    out = h' + MLP(RMSNorm(h'))

    ATTN(x) = concat_heads(softmax(q k^T / sqrt(d_head) + mask) v) W_O,  q, k, v = x W_Q, x W_K, x W_V
    MLP(x)  = (SiLU(x W_u) * (x W_v)) W_oMLP

RMSNorm has a learnable gain; no biases, no positional encoding (the backbone's token states carry position).
Weights are N(0, init_std^2) (nanoGPT's 0.02).
"""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor, nn

from ._attention import attend, check_block_dims, check_inputs, sdpa_mask, split_heads


class GPTBlock(nn.Module):
    """One pre-RMSNorm Transformer block; forward(h, attention_mask=None) -> (B, T, d_model).

    Args:
        d_model, n_heads, d_mlp, causal: as in NGPTBlock (d_model divisible by n_heads).
        eps: RMSNorm epsilon.
        init_std: standard deviation of the initial weights.
    """

    def __init__(self, d_model: int, n_heads: int, d_mlp: int, causal: bool = False, eps: float = 1e-6,
                 init_std: float = 0.02):
        super().__init__()
        self.d_head = check_block_dims(d_model, n_heads, d_mlp)
        self.d_model, self.n_heads, self.d_mlp, self.causal = d_model, n_heads, d_mlp, bool(causal)
        self.norm_attn = nn.RMSNorm(d_model, eps=eps)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.attn_out = nn.Linear(d_model, d_model, bias=False)
        self.norm_mlp = nn.RMSNorm(d_model, eps=eps)
        self.uv = nn.Linear(d_model, 2 * d_mlp, bias=False)
        self.mlp_out = nn.Linear(d_mlp, d_model, bias=False)
        for lin in (self.qkv, self.attn_out, self.uv, self.mlp_out):
            nn.init.normal_(lin.weight, std=init_std)

    def attention(self, x: Tensor, mask: Tensor | None) -> Tensor:
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).split(self.d_model, dim=-1))
        return self.attn_out(attend(q, k, v, mask, scale=1.0 / math.sqrt(self.d_head)))

    def mlp(self, x: Tensor) -> Tensor:
        u, v = self.uv(x).split(self.d_mlp, dim=-1)
        return self.mlp_out(F.silu(u) * v)

    def forward(self, h: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """h (B, T, d_model); attention_mask (B, T) with 1/True = real token."""
        check_inputs(h, attention_mask, self.d_model)
        mask = sdpa_mask(attention_mask, h.shape[1], self.causal, h.device)
        h = h + self.attention(self.norm_attn(h), mask)
        return h + self.mlp(self.norm_mlp(h))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_mlp={self.d_mlp}, causal={self.causal}"
