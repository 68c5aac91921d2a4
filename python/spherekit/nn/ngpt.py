"""NGPTBlock: the normalised Transformer block of nGPT (Loshchilov et al. 2025) as used for the head of "Mapping
the Circumplex of Affect" (arXiv:2601.06575) (appendix B, eq. 18-20). Every hidden state lives on the unit sphere
S^{d-1}:

    h'  = Norm(Norm(h)  + |alpha_A| * (Norm(ATTN(h))  - Norm(h)))        geodesic residual (attention)
    out = Norm(Norm(h') + |alpha_M| * (Norm(MLP(h'))  - Norm(h')))       geodesic residual (MLP)

    ATTN: q = Norm_head(h W_Q) * s_qk,  k = Norm_head(h W_K) * s_qk,  v = h W_V  (per head, d_head each)
          A = softmax(q k^T * sqrt(d_head) + mask) v,  ATTN(h) = concat_heads(A) W_O
    MLP:  u = (h W_u) * s_u,  v = (h W_v) * s_v * v_scale (default sqrt(d_mlp), the paper's eq. 20),
          MLP(h) = (u * SiLU(v)) W_oMLP

alpha_A, alpha_M in R^d (init 0.05), s_qk in R^{n_heads * d_head} (init 1), s_u, s_v in R^{d_mlp} (init 1) use
the ScaledParameter reparametrisation (alpha and s_qk stored at init_scaling = 1/sqrt(d_model), s_u/s_v at 1,
as in NVIDIA's code). Every weight matrix has unit-norm vectors along the embedding dimension (W_Q, W_K, W_V,
W_u, W_v: rows over d_model; W_O, W_oMLP: columns over d_model) at init and after each optimiser step
(``renormalize_weights_``, one spherekit.ops.renormalize_ call). No biases, no positional encoding: the
backbone's token states carry position. Norm is spherekit.ops.l2_normalize / geodesic_residual (eps clamp).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import ops
from ._attention import attend, check_block_dims, check_inputs, sdpa_mask, split_heads
from .scaling import ScaledParameter


class NGPTBlock(nn.Module):
    """One nGPT block on (B, T, d_model) states; forward(h, attention_mask=None) -> (B, T, d_model), unit rows.

    Args:
        d_model: the embedding dimension d.
        n_heads: attention heads; d_model must be divisible by n_heads.
        d_mlp: hidden width of the SwiGLU MLP.
        causal: unidirectional attention (token t sees 1..t) instead of bidirectional.
        alpha_init: initial value of the residual step sizes alpha_A, alpha_M (nGPT: 0.05).
        init_scaling: stored init of alpha and s_qk (default 1/sqrt(d_model), NVIDIA's base_scale).
        v_scale: the extra factor on v (default sqrt(d_mlp) as in "Mapping the Circumplex of Affect"; NVIDIA's
            code uses sqrt(d_model)).
        eps: the norm clamp of every normalisation.
        backend: backend of the spherekit ops ("auto", "cuda", "triton", "cpu", "reference").
    """

    def __init__(self, d_model: int, n_heads: int, d_mlp: int, causal: bool = False, alpha_init: float = 0.05,
                 init_scaling: float | None = None, v_scale: float | None = None, eps: float = 1e-6,
                 backend: str = "auto"):
        super().__init__()
        self.d_head = check_block_dims(d_model, n_heads, d_mlp)
        self.d_model, self.n_heads, self.d_mlp, self.causal = d_model, n_heads, d_mlp, bool(causal)
        self.v_scale = math.sqrt(d_mlp) if v_scale is None else float(v_scale)
        self.eps, self.backend = eps, backend
        base = d_model ** -0.5 if init_scaling is None else init_scaling
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.attn_out = nn.Linear(d_model, d_model, bias=False)
        self.uv = nn.Linear(d_model, 2 * d_mlp, bias=False)
        self.mlp_out = nn.Linear(d_mlp, d_model, bias=False)
        self.alpha_attn = ScaledParameter(d_model, alpha_init, base)
        self.alpha_mlp = ScaledParameter(d_model, alpha_init, base)
        self.s_qk = ScaledParameter(d_model, 1.0, base)
        self.s_u = ScaledParameter(d_mlp, 1.0, 1.0)
        self.s_v = ScaledParameter(d_mlp, 1.0, 1.0)
        for w, _ in self.unit_norm_weights():
            nn.init.normal_(w, std=d_model ** -0.5)
        self.renormalize_weights_()

    def unit_norm_weights(self) -> list[tuple[nn.Parameter, int]]:
        """(weight, dim) pairs kept at unit norm along dim (the embedding dimension of each nn.Linear weight)."""
        return [(self.qkv.weight, 1), (self.attn_out.weight, 0), (self.uv.weight, 1), (self.mlp_out.weight, 0)]

    @torch.no_grad()
    def renormalize_weights_(self) -> None:
        """Put every weight matrix back on the unit sphere along its embedding dimension (one fused launch)."""
        weights, dims = zip(*self.unit_norm_weights())
        ops.renormalize_(list(weights), list(dims), eps=self.eps, backend=self.backend)

    def _unit(self, x: Tensor) -> Tensor:
        return ops.l2_normalize(x, -1, eps=self.eps, backend=self.backend)

    def _residual(self, h: Tensor, f: Tensor, alpha: ScaledParameter) -> Tensor:
        return ops.geodesic_residual(h, f.to(h.dtype), alpha(), eps=self.eps, backend=self.backend)

    def attention(self, h: Tensor, mask: Tensor | None) -> Tensor:
        q, k, v = (split_heads(x, self.n_heads) for x in self.qkv(h).split(self.d_model, dim=-1))
        s_qk = self.s_qk().view(self.n_heads, 1, self.d_head).to(q.dtype)
        q, k = self._unit(q) * s_qk, self._unit(k) * s_qk
        return self.attn_out(attend(q, k, v, mask, scale=math.sqrt(self.d_head)))

    def mlp(self, h: Tensor) -> Tensor:
        u, v = self.uv(h).split(self.d_mlp, dim=-1)
        u = u * self.s_u().to(u.dtype)
        v = v * (self.s_v() * self.v_scale).to(v.dtype)
        return self.mlp_out(u * F.silu(v))

    def forward(self, h: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """h (B, T, d_model) (on the sphere, e.g. normalised backbone states); attention_mask (B, T), 1 = token."""
        check_inputs(h, attention_mask, self.d_model)
        mask = sdpa_mask(attention_mask, h.shape[1], self.causal, h.device)
        h = self._residual(h, self.attention(h, mask), self.alpha_attn)
        return self._residual(h, self.mlp(h), self.alpha_mlp)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, d_mlp={self.d_mlp}, causal={self.causal}, "
                f"v_scale={self.v_scale:.4g}, eps={self.eps}, backend={self.backend!r}")
