"""The paper's way of computing F3 / F4 and their MNRL loss ("Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351)'s released code, re-expressed): the baselines of the verifier
throughput benchmarks, and the equivalence oracles for CNNVerifier and PatchTransformerVerifier.

F3: the same map, zero-padded to map_size x map_size, through the whole CNN (every padded pixel computed).

Per (query, candidate) pair: M = bmm(Norm(q), Norm(d)^T); channels [M, masked row max, masked column
max], zero at invalid pairs; the (B, 3, m, n) map zero-padded to map_size x map_size; a Conv2d with
kernel = stride = p embeds all (map_size / p)^2 patches; patches without a valid pair are masked in
attention (max-pooled pair mask); [CLS] + positional embeddings, LayerNorm, dropout, Transformer,
MLP head on [CLS], tanh. The MNRL loss scores the in-batch block with one verifier call per query
(a Python loop over the batch) and the explicit negatives with one more call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

if TYPE_CHECKING:  # reference/ imports only torch; the types are for the annotations
    from ..nn.verifiers import CNNVerifier, PatchTransformerVerifier


def paper_map(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> tuple[Tensor, Tensor]:
    """(B, 3, m, n) maps [M, masked row max, masked column max], zero at invalid pairs, and the (B, m, n) pair mask."""
    sims = torch.bmm(F.normalize(q, dim=-1), F.normalize(d, dim=-1).transpose(1, 2))
    pair = q_mask[:, :, None] & d_mask[:, None, :]
    masked = sims.masked_fill(~pair, float("-inf"))
    row = masked.max(-1, keepdim=True).values.expand_as(sims)
    col = masked.max(-2, keepdim=True).values.expand_as(sims)
    return torch.stack([sims, row, col], dim=1).masked_fill(~pair[:, None], 0.0), pair


class PaperStyleF3(nn.Module):
    """F3 computed as the paper's code does, on a CNNVerifier's own modules (shared, not copied)."""

    def __init__(self, conv: nn.Module, mlp: nn.Module, map_size: int = 128, output: str = "tanh") -> None:
        super().__init__()
        self.conv, self.mlp, self.map_size, self.output = conv, mlp, map_size, output

    @classmethod
    def from_verifier(cls, v: CNNVerifier) -> PaperStyleF3:
        return cls(v.conv, v.mlp, v.map_size, v.output)

    def forward(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
        x, _ = paper_map(q, q_mask, d, d_mask)
        x = F.pad(x, (0, self.map_size - x.shape[3], 0, self.map_size - x.shape[2]))
        out = self.mlp(self.conv(x)).squeeze(-1)
        return torch.tanh(out) if self.output == "tanh" else out


class PaperStyleF4(nn.Module):
    """F4 computed as the paper's code does; same parameters as PatchTransformerVerifier."""

    def __init__(self, patch: int = 8, width: int = 256, num_layers: int = 2, num_heads: int = 8, ff_dim: int = 1024,
                 dropout: float = 0.1, map_size: int = 128) -> None:
        super().__init__()
        self.patch, self.map_size, grid = patch, map_size, map_size // patch
        self.embed = nn.Conv2d(3, width, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.empty(1, 1, width).normal_(0.0, 0.02))
        self.pos_embed = nn.Parameter(torch.empty(1, 1 + grid * grid, width).normal_(0.0, 0.02))
        self.norm = nn.LayerNorm(width)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(width, num_heads, ff_dim, dropout, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout), nn.Linear(width, 1))

    @classmethod
    def from_verifier(cls, v: PatchTransformerVerifier) -> PaperStyleF4:
        """A copy of v's weights in the paper's layout (the patch Linear becomes the strided Conv2d)."""
        width = v.embed.out_features
        layer = v.encoder.layers[0]
        out = cls(v.patch, width, len(v.encoder.layers), layer.self_attn.num_heads, layer.linear1.out_features,
                  layer.dropout.p, v.map_size)
        state = {k: t for k, t in v.state_dict().items() if not k.startswith("embed.")}
        state["pos_embed"] = v.pos_embed.detach()[None]
        state["embed.weight"] = v.embed.weight.detach().view(width, v.patch, v.patch, 3).permute(0, 3, 1, 2)
        state["embed.bias"] = v.embed.bias.detach()
        out.load_state_dict(state)
        return out.to(v.embed.weight.device)

    def forward(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
        x, pair = paper_map(q, q_mask, d, d_mask)
        pad = (0, self.map_size - x.shape[3], 0, self.map_size - x.shape[2])
        x = F.pad(x, pad)
        valid = F.max_pool2d(F.pad(pair[:, None].float(), pad), self.patch).flatten(1) > 0
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1) + self.pos_embed
        tokens = self.dropout(self.norm(tokens))
        ignore = torch.cat([valid.new_zeros(valid.shape[0], 1), ~valid], dim=1)
        return torch.tanh(self.head(self.encoder(tokens, src_key_padding_mask=ignore)[:, 0]).squeeze(-1))


def paper_mnrl_loss(verifier: nn.Module, q: Tensor, q_mask: Tensor, pos: Tensor, pos_mask: Tensor, neg: Tensor,
                    neg_mask: Tensor, scale: float = 10.0) -> Tensor:
    """MNRL with one explicit negative per query (neg (B, n, h)), in-batch rows scored one query at a time."""
    b = q.shape[0]
    rows = [verifier(q[i:i + 1].expand(b, -1, -1), q_mask[i:i + 1].expand(b, -1), pos, pos_mask) for i in range(b)]
    grid = torch.cat([torch.stack(rows), verifier(q, q_mask, neg, neg_mask)[:, None]], dim=1)
    return F.cross_entropy(grid * scale, torch.arange(b, device=q.device))
