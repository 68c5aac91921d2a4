"""Independent pure-torch oracles of the seed-003 head blocks (eq. 12/15/17 and 18-20), written from the
equations with F.normalize, an explicit masked softmax and per-head loops, in float64. They read only the
weights of a block (by name), never call its methods."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _attention(x, wq, wk, wv, wo, mask, n_heads, causal, scale, s_qk=None):
    b, t, d = x.shape
    dh = d // n_heads
    allowed = torch.ones(b, t, t, dtype=torch.bool)
    if mask is not None:
        allowed &= mask.bool()[:, None, :]
    if causal:
        allowed &= torch.ones(t, t, dtype=torch.bool).tril()
    allowed |= torch.eye(t, dtype=torch.bool)
    heads = []
    for n in range(n_heads):
        sl = slice(n * dh, (n + 1) * dh)
        q, k, v = x @ wq[sl].T, x @ wk[sl].T, x @ wv[sl].T
        if s_qk is not None:
            q, k = F.normalize(q, dim=-1) * s_qk[sl], F.normalize(k, dim=-1) * s_qk[sl]
        logits = (q @ k.transpose(1, 2)) * scale
        logits = logits.masked_fill(~allowed, float("-inf"))
        heads.append(torch.softmax(logits, dim=-1) @ v)
    return torch.cat(heads, dim=-1) @ wo.T


def ngpt_block(block, h, mask=None):
    """Eq. 18-20 with the block's weights and effective scales (|alpha| steps)."""
    P = {k: v.detach().double() for k, v in block.named_parameters()}
    d, dm = block.d_model, block.d_mlp
    wq, wk, wv = P["qkv.weight"].split(d)
    alpha_a = (P["alpha_attn.raw"] * block.alpha_attn.ratio).abs()
    alpha_m = (P["alpha_mlp.raw"] * block.alpha_mlp.ratio).abs()
    s_qk = P["s_qk.raw"] * block.s_qk.ratio
    s_u, s_v = P["s_u.raw"] * block.s_u.ratio, P["s_v.raw"] * block.s_v.ratio
    h = h.double()
    att = _attention(h, wq, wk, wv, P["attn_out.weight"], mask, block.n_heads, block.causal,
                     math.sqrt(d // block.n_heads), s_qk)
    h1 = F.normalize((1 - alpha_a) * F.normalize(h, dim=-1) + alpha_a * F.normalize(att, dim=-1), dim=-1)
    wu, wv_ = P["uv.weight"].split(dm)
    u = (h1 @ wu.T) * s_u
    v = (h1 @ wv_.T) * s_v * math.sqrt(dm)
    mlp = (F.silu(v) * u) @ P["mlp_out.weight"].T
    return F.normalize((1 - alpha_m) * h1 + alpha_m * F.normalize(mlp, dim=-1), dim=-1)


def _rms(x, g, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g


def gpt_block(block, h, mask=None, eps=1e-6):
    """Eq. 12, 15, 17 with the block's weights."""
    P = {k: v.detach().double() for k, v in block.named_parameters()}
    d, dm = block.d_model, block.d_mlp
    wq, wk, wv = P["qkv.weight"].split(d)
    h = h.double()
    h1 = h + _attention(_rms(h, P["norm_attn.weight"], eps), wq, wk, wv, P["attn_out.weight"], mask,
                        block.n_heads, block.causal, 1 / math.sqrt(d // block.n_heads))
    x = _rms(h1, P["norm_mlp.weight"], eps)
    wu, wv_ = P["uv.weight"].split(dm)
    return h1 + (F.silu(x @ wu.T) * (x @ wv_.T)) @ P["mlp_out.weight"].T
