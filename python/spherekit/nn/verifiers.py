"""Stage-2 verifiers F0..F4 over token similarity maps ("Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351), appendix C).

With qn_i, dn_j the L2-normalised tokens of a query (m valid tokens) and a candidate (n valid tokens),
M_ij = <qn_i, dn_j> (the token cosine map). Every verifier maps (q tokens, d tokens) to one score:

    F0  GlobalAverageVerifier      (1/mn) sum_ij M_ij                               spherekit.ops.global_avg_sim
    F1  MaxSimVerifier             (1/m) sum_i max_j M_ij                           spherekit.ops.maxsim
    F2  SoftAlignVerifier          (1/m) sum_i sum_j A_ij M_ij,                     spherekit.ops.soft_align
                                   A_ij = softmax_j((M_ij - lam |i-j|) / tau)
    F3  CNNVerifier                tanh(MLP(GAP(CNN_kxk(phi(M)))))                  spherekit.ops.sim_map
    F4  PatchTransformerVerifier   tanh(MLP(Transformer([CLS]; psi(phi(M)) W + pos)_[CLS]))
                                                                                    spherekit.ops.sim_map(patch=p)

phi(M) stacks three channels per token pair (i, j): M_ij, max_j' M_ij' (row max) and max_i' M_i'j
(column max) over valid tokens, zero at padding pairs; psi cuts phi(M) into p x p patches.

Defaults (the paper's text is silent on every architecture number; these come from its released code,
radoslavralev/limitations-text-retrieval, verifiers.py and train_and_eval_verifiers_experiment.py):

- F2: lam = 0.1, tau = 0.1, both fixed in the paper's code. Here either may be learnable
  (``learn_lam`` / ``learn_tau``); tau is stored as log(tau) so it stays positive.
- F3: the code's experiment config: 2 conv blocks (Conv kxk, padding k//2 -> BatchNorm -> ReLU -> MaxPool 2)
  with 128 then 256 channels, k = 3, global average pooling, MLP 256 -> 128 -> 1 with ReLU and dropout
  0.1, tanh output; the map is zero-padded to 128 x 128 (max sequence length 128). (The code's class
  defaults are 3 blocks of 32, 64, 128 channels: ``channels=32, num_layers=3``.)
- F4: the code's class defaults: patch 8 on a 128 x 128 map (16 x 16 = 256 patch positions), width 256,
  2 pre-norm GELU layers, 8 heads, feed-forward 1024, dropout 0.1, learnable [CLS] and positional
  embeddings (init N(0, 0.02)), LayerNorm + dropout on the input sequence, MLP head width -> width -> 1
  (GELU, dropout), tanh output. (Its experiment script used width = the encoder's dimension, 1 layer,
  1 head, feed-forward 32: ``PatchTransformerVerifier(width=384, num_layers=1, num_heads=1, ff_dim=32)``.)

F4 here differs from the paper's code in cost only: the paper pads every map to 128 x 128 and embeds
all 256 patches with a strided Conv2d, masking patches without a valid token pair in attention. Here
sim_map cuts only the ceil(m/p) x ceil(n/p) patches of the batch's padded map, a Linear embeds them
(= the Conv2d with kernel = stride = p), and each keeps the positional embedding of its place in the
16 x 16 grid; masked patches never reach [CLS], so the scores are the same (tested against a
paper-style implementation in tests/nn/test_verifiers.py) at a fraction of the work for short texts.
Maps larger than ``map_size`` raise an error (the paper's code silently cropped them).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import ops
from ..ops.tokens import normalize_tokens
from ._cnn_crop import cropped_cnn
from ._verifier_base import Verifier

SIM_CHANNELS = ("sim", "rowmax", "colmax")
OUTPUTS = ("tanh", "none")

__all__ = [
    "CNNVerifier",
    "GlobalAverageVerifier",
    "MaxSimVerifier",
    "PatchTransformerVerifier",
    "SoftAlignVerifier",
    "VERIFIERS",
    "build_verifier",
]


def _check_output(output: str) -> str:
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    return output


def check_map_size(m: int, n: int, map_size: int) -> None:
    if m > map_size or n > map_size:
        raise ValueError(f"token maps of {m} x {n} exceed map_size={map_size} (the verifier was built for "
                         f"sequences of at most {map_size} tokens); truncate the texts or raise map_size")


def _mean_unit(x: Tensor, mask: Tensor, normalized: bool) -> Tensor:
    """(..., n, h) -> (..., h) fp32: the mean of Norm(x_j) over the valid tokens j (0 for a text without valid tokens,
    so that F0 scores it 0, as ops.global_avg_sim does)."""
    x = (x if normalized else normalize_tokens(x)).float()
    w = mask.to(x.dtype)
    return (x * w[..., None]).sum(-2) / w.sum(-1, keepdim=True).clamp_min(1.0)


class GlobalAverageVerifier(Verifier):
    """F0: (1/(m n)) sum_ij M_ij over valid token pairs (= the cosine-map mean; no parameters).

    Paired scores come from spherekit.ops.global_avg_sim. The batched forms use the same identity as
    that op, F0 = <mean_i qn_i, mean_j dn_j>, on per-text means: (Bq, Bd) or (B, K) scores from one
    product, never a copy of a text per pair.
    """

    kind = "F0"

    def __init__(self, *, backend: str = "auto") -> None:
        super().__init__()
        self.backend = backend

    def _score(self, q, q_mask, d, d_mask, normalize=True):
        return ops.global_avg_sim(q, d, q_mask=q_mask, d_mask=d_mask, normalize=normalize, backend=self.backend)

    def _score_candidates(self, q, q_mask, d, d_mask, normalized=False):
        return torch.einsum("bh,bkh->bk", _mean_unit(q, q_mask, normalized), _mean_unit(d, d_mask, normalized))

    def _score_all_pairs(self, q, q_mask, d, d_mask):
        return _mean_unit(q, q_mask, False) @ _mean_unit(d, d_mask, False).T


class MaxSimVerifier(Verifier):
    """F1: late interaction, (1/m) sum_{valid i} max_{valid j} M_ij over normalised tokens (no parameters): the mean
    over query tokens of "Compositional Sensitivity" eq. 6, which it passes to ops.maxsim explicitly (the op's
    defaults are ColBERT's: the sum of raw similarities)."""

    kind = "F1"
    reduction = "mean"

    def __init__(self, *, backend: str = "auto") -> None:
        super().__init__()
        self.backend = backend

    def _score(self, q, q_mask, d, d_mask, normalize=True):
        return ops.maxsim(q, d, q_mask=q_mask, d_mask=d_mask, pairwise=True, normalize=normalize,
                          reduction=self.reduction, backend=self.backend)

    def _score_candidates(self, q, q_mask, d, d_mask, normalized=False):
        # the per-query-K layout of the op: no copy of the queries
        return ops.maxsim(q, d, q_mask=q_mask, d_mask=d_mask, normalize=not normalized, reduction=self.reduction,
                          backend=self.backend)

    def _score_all_pairs(self, q, q_mask, d, d_mask):  # the all-pairs layout: no copies
        return ops.maxsim(q, d, q_mask=q_mask, d_mask=d_mask, normalize=True, reduction=self.reduction,
                          backend=self.backend)


class SoftAlignVerifier(Verifier):
    """F2: soft alignment with a positional bias (eq. 7, 10 of "Compositional Sensitivity").

    A_ij = softmax over valid j of (M_ij - lam |i - j|) / tau;  score = (1/m) sum_{valid i} sum_j A_ij M_ij.

    Args:
        lam: positional penalty per token of offset (paper's code: 0.1).
        tau: softmax temperature, > 0 (paper's code: 0.1); stored as log(tau).
        learn_lam, learn_tau: make lam / log(tau) trainable parameters (the paper keeps both fixed).
        backend: spherekit backend for soft_align.
    """

    kind = "F2"

    def __init__(self, lam: float = 0.1, tau: float = 0.1, *, learn_lam: bool = False, learn_tau: bool = False,
                 backend: str = "auto") -> None:
        super().__init__()
        if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
            raise ValueError(f"tau must be a finite float > 0, got {tau!r}")
        if not (isinstance(lam, (int, float)) and math.isfinite(lam)):
            raise ValueError(f"lam must be a finite float, got {lam!r}")
        lam_t = torch.tensor(float(lam))
        log_tau = torch.tensor(math.log(float(tau)))
        if learn_lam:
            self.lam = nn.Parameter(lam_t)
        else:
            self.register_buffer("lam", lam_t)
        if learn_tau:
            self.log_tau = nn.Parameter(log_tau)
        else:
            self.register_buffer("log_tau", log_tau)
        self.backend = backend

    @property
    def tau(self) -> Tensor:
        return self.log_tau.exp()

    def _score(self, q, q_mask, d, d_mask, normalize=True):
        return ops.soft_align(q, d, q_mask=q_mask, d_mask=d_mask, lam=self.lam, tau=self.tau, normalize=normalize,
                              backend=self.backend)


class CNNVerifier(Verifier):
    """F3: a tiny CNN over phi(M) = [M, row max, column max], zero-padded to map_size x map_size (the padding
    is not computed: the CNN runs on the window of each layer that the m x n map reaches, see ``features``).

    Args:
        channels: channels of the first conv block, doubled in each further block (code: 128).
        num_layers: conv blocks (Conv -> BatchNorm -> ReLU -> MaxPool 2) (code: 2).
        kernel_size: odd conv kernel size k (code: 3).
        mlp_hidden: hidden width of the MLP head (code: 128).
        dropout: dropout in the MLP head (code: 0.1).
        map_size: maps are zero-padded to map_size x map_size (code: the max sequence length 128).
        output: "tanh" (score in (-1, 1), as the code) or "none" (the raw MLP output).
        backend: spherekit backend for sim_map.
    """

    kind = "F3"
    joint_grid = True  # BatchNorm: the whole MNRL grid shares one set of batch statistics

    def __init__(self, channels: int = 128, num_layers: int = 2, kernel_size: int = 3, mlp_hidden: int = 128,
                 dropout: float = 0.1, map_size: int = 128, *, output: str = "tanh", backend: str = "auto") -> None:
        super().__init__()
        if kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        if num_layers < 1 or map_size < 2 ** num_layers:
            raise ValueError(f"num_layers must be >= 1 with map_size >= 2**num_layers, got num_layers={num_layers}, "
                             f"map_size={map_size}")
        layers, c_in = [], len(SIM_CHANNELS)
        for i in range(num_layers):
            c_out = channels * 2 ** i
            layers += [nn.Conv2d(c_in, c_out, kernel_size, padding=kernel_size // 2), nn.BatchNorm2d(c_out),
                       nn.ReLU(), nn.MaxPool2d(2)]
            c_in = c_out
        self.conv = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.mlp = nn.Sequential(nn.Linear(c_in, mlp_hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(mlp_hidden, 1))
        self.map_size = map_size
        self.output = _check_output(output)
        self.backend = backend

    def _score(self, q, q_mask, d, d_mask, normalize=True):
        check_map_size(q.shape[1], d.shape[1], self.map_size)
        phi = ops.sim_map(q, d, q_mask=q_mask, d_mask=d_mask, channels=SIM_CHANNELS, normalize=normalize,
                          backend=self.backend)  # (B, m, n, 3)
        out = self.mlp(self.features(phi.permute(0, 3, 1, 2))).squeeze(-1)
        return torch.tanh(out) if self.output == "tanh" else out

    def features(self, maps: Tensor) -> Tensor:
        """(N, 3, m, n) maps -> (N, C) pooled CNN features, as if zero-padded to map_size x map_size; computed on
        the part of each layer the maps reach (spherekit.nn._cnn_crop, exact up to rounding)."""
        return cropped_cnn(self.conv, maps.float(), self.map_size)


class PatchTransformerVerifier(Verifier):
    """F4: a tiny Transformer over p x p patches of phi(M), read out at a learnable [CLS] token.

    Patch (r, c) of the map (token rows r*p..r*p+p-1, columns c*p..c*p+p-1) is embedded by a Linear of
    its p*p*3 values, gets the positional embedding of grid place r*G + c (G = map_size / p), and is
    masked in attention when it holds no valid token pair.

    Args:
        patch: patch size p (code: 8); map_size must be a multiple of it.
        width: model width (code: 256).
        num_layers, num_heads, ff_dim: Transformer encoder layers (pre-norm, GELU) (code: 2, 8, 1024).
        dropout: dropout of the input sequence, the layers and the head (code: 0.1).
        map_size: largest map side (code: 128, the max sequence length).
        output: "tanh" (as the code) or "none".
        backend: spherekit backend for sim_map.
    """

    kind = "F4"

    def __init__(self, patch: int = 8, width: int = 256, num_layers: int = 2, num_heads: int = 8, ff_dim: int = 1024,
                 dropout: float = 0.1, map_size: int = 128, *, output: str = "tanh", backend: str = "auto") -> None:
        super().__init__()
        if patch < 1 or map_size % patch != 0:
            raise ValueError(f"map_size ({map_size}) must be a positive multiple of patch ({patch})")
        if width % num_heads != 0:
            raise ValueError(f"width ({width}) must be divisible by num_heads ({num_heads})")
        self.patch, self.map_size, self.grid = patch, map_size, map_size // patch
        self.embed = nn.Linear(patch * patch * len(SIM_CHANNELS), width)
        self.cls_token = nn.Parameter(torch.empty(1, 1, width).normal_(0.0, 0.02))
        self.pos_embed = nn.Parameter(torch.empty(1 + self.grid * self.grid, width).normal_(0.0, 0.02))
        self.norm = nn.LayerNorm(width)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(width, num_heads, ff_dim, dropout, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout), nn.Linear(width, 1))
        self.output = _check_output(output)
        self.backend = backend

    def patch_layout(self, q_mask: Tensor, d_mask: Tensor) -> tuple[Tensor, Tensor]:
        """Positional-embedding rows (gm*gn,) and patch validity (B, gm*gn) for masks (B, m), (B, n)."""
        p = self.patch
        gm, gn = -(-q_mask.shape[1] // p), -(-d_mask.shape[1] // p)
        rows = F.pad(q_mask, (0, gm * p - q_mask.shape[1])).view(-1, gm, p).any(-1)
        cols = F.pad(d_mask, (0, gn * p - d_mask.shape[1])).view(-1, gn, p).any(-1)
        valid = (rows[:, :, None] & cols[:, None, :]).flatten(1)
        grid = torch.arange(gm, device=q_mask.device)[:, None] * self.grid + torch.arange(gn, device=q_mask.device)
        return 1 + grid.flatten(), valid

    def _score(self, q, q_mask, d, d_mask, normalize=True):
        check_map_size(q.shape[1], d.shape[1], self.map_size)
        patches = ops.sim_map(q, d, q_mask=q_mask, d_mask=d_mask, patch=self.patch, channels=SIM_CHANNELS,
                              normalize=normalize, backend=self.backend)
        pos, valid = self.patch_layout(q_mask, d_mask)
        x = self.embed(patches.to(self.embed.weight.dtype)) + self.pos_embed[pos]
        cls = (self.cls_token + self.pos_embed[:1]).expand(x.shape[0], -1, -1)
        x = self.dropout(self.norm(torch.cat([cls, x], dim=1)))
        ignore = torch.cat([valid.new_zeros(valid.shape[0], 1), ~valid], dim=1)
        out = self.head(self.encoder(x, src_key_padding_mask=ignore)[:, 0]).squeeze(-1)
        return torch.tanh(out) if self.output == "tanh" else out


VERIFIERS = {
    "F0": GlobalAverageVerifier,
    "F1": MaxSimVerifier,
    "F2": SoftAlignVerifier,
    "F3": CNNVerifier,
    "F4": PatchTransformerVerifier,
}


def build_verifier(kind: str, **kwargs) -> Verifier:
    """``build_verifier("F4", width=384, num_layers=1)``: a verifier by its name in "Compositional Sensitivity"."""
    if kind not in VERIFIERS:
        raise ValueError(f"kind must be one of {tuple(VERIFIERS)}, got {kind!r}")
    return VERIFIERS[kind](**kwargs)

