"""The verifier-MNRL score grid of the map verifiers F3 (CNN) and F4 (patch Transformer) from the all-pairs layout
of spherekit.ops.sim_map: the (B, B) in-batch block is ONE sim_map(all_pairs=True) call over the B query and B
positive token sequences, never B^2 copies of them (the flattened path of Verifier.score_grid copies every query
and positive once per pair: B^2 (m + n) h values); each near-miss column k is one paired call.

    S_ij     = F(q_i, p_j)       from phi(M) of the all-pairs layout, pair (i, j)
    S_i,B+k  = F(q_i, n_i,k)     from the paired layout of column k

F3's BatchNorm normalises over every map of the call, so its B^2 + B H maps go through the CNN together (as the
flattened path does), each computed only where it reaches (CNNVerifier.features); F4 scores each block on its
own (its scores depend on one map only). The networks are the verifier's own modules (conv / mlp, embed /
pos_embed / encoder / head): the scores equal Verifier.score_grid's (tests/losses/test_verifier_mnrl_all_pairs.py).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from .. import ops
from ..nn import running_stats_frozen
from ..nn.verifiers import SIM_CHANNELS, CNNVerifier, PatchTransformerVerifier, check_map_size

MAP_VERIFIERS = (CNNVerifier, PatchTransformerVerifier)


def _out(verifier, raw: Tensor) -> Tensor:
    return torch.tanh(raw) if verifier.output == "tanh" else raw


def _cnn_input(phi: Tensor, n: int) -> Tensor:
    """(N, m, n', 3) maps -> (N, 3, m, n), zero-padded to the grid's widest candidate n (the CNN pads to its
    map_size itself, without computing on the padding: CNNVerifier.features)."""
    x = phi.permute(0, 3, 1, 2).float()
    return F.pad(x, (0, n - x.shape[3]))


def _transformer(verifier: PatchTransformerVerifier, patches: Tensor, pos: Tensor, valid: Tensor) -> Tensor:
    """(N, P, p p 3) patches with positional rows pos (P,) and validity (N, P) -> (N,) scores."""
    x = verifier.embed(patches.to(verifier.embed.weight.dtype)) + verifier.pos_embed[pos]
    cls = (verifier.cls_token + verifier.pos_embed[:1]).expand(x.shape[0], -1, -1)
    x = verifier.dropout(verifier.norm(torch.cat([cls, x], dim=1)))
    ignore = torch.cat([valid.new_zeros(valid.shape[0], 1), ~valid], dim=1)
    return _out(verifier, verifier.head(verifier.encoder(x, src_key_padding_mask=ignore)[:, 0]).squeeze(-1))


def _f4_all_pairs(verifier: PatchTransformerVerifier, q, q_mask, d, d_mask) -> Tensor:
    b_q, b_d = q.shape[0], d.shape[0]
    patches = ops.sim_map(q, d, q_mask=q_mask, d_mask=d_mask, patch=verifier.patch, channels=SIM_CHANNELS,
                          all_pairs=True, backend=verifier.backend)
    valid = ops.sim_map_patch_mask(q_mask, d_mask, verifier.patch, all_pairs=True)
    pos, _ = verifier.patch_layout(q_mask[:1], d_mask[:1])
    return _transformer(verifier, patches.flatten(0, 1), pos, valid.flatten(0, 1)).view(b_q, b_d)


def _f3_all_pairs(verifier: CNNVerifier, q, q_mask, d, d_mask) -> Tensor:
    """(Bq, Bd) F3 scores of every query against every candidate: one CNN call (one set of BatchNorm statistics)."""
    grid = ops.sim_map(q, d, q_mask=q_mask, d_mask=d_mask, channels=SIM_CHANNELS, all_pairs=True,
                       backend=verifier.backend)
    raw = verifier.mlp(verifier.features(_cnn_input(grid.flatten(0, 1), d.shape[1]))).squeeze(-1)
    return _out(verifier, raw).view(q.shape[0], d.shape[0])


def _checkpointed(fn, *args) -> Tensor:
    """fn(*args), under activation checkpointing when gradients are on (recomputed in backward with the forward's
    random state; BatchNorm running statistics are updated by the forward only)."""
    if not torch.is_grad_enabled():
        return fn(*args)
    return checkpoint(fn, *args, use_reentrant=False, context_fn=lambda: (nullcontext(), running_stats_frozen()))


def _chunked_rows(verifier, q, q_mask, d, d_mask, chunk_rows: int) -> Tensor:
    """The (B, B) block chunk_rows query rows at a time, each chunk checkpointed: only one chunk's maps and
    activations are alive at once (F4: the same scores as the whole block; F3: BatchNorm statistics per chunk)."""
    block = _f4_all_pairs if isinstance(verifier, PatchTransformerVerifier) else _f3_all_pairs
    return torch.cat([_checkpointed(block, verifier, q[r:r + chunk_rows], q_mask[r:r + chunk_rows], d, d_mask)
                      for r in range(0, q.shape[0], chunk_rows)])


def map_verifier_grid(verifier, q: Tensor, q_mask: Tensor, pos: Tensor, pos_mask: Tensor, neg: Tensor | None,
                      neg_mask: Tensor | None, chunk_rows: int | None = None) -> Tensor:
    """(B, B + H) scores of an F3 / F4 verifier (validated bool masks; neg (B, H, n', h) or None); chunk_rows:
    score the in-batch block that many query rows at a time and each near-miss column on its own, each call
    checkpointed (see _chunked_rows; F3 with chunk_rows = 1 normalises as the released code's per-query calls)."""
    b = q.shape[0]
    h_cols = 0 if neg is None else neg.shape[1]
    for n in [pos.shape[1]] + ([neg.shape[2]] if h_cols else []):
        check_map_size(q.shape[1], n, verifier.map_size)
    if chunk_rows:
        cols = [_chunked_rows(verifier, q, q_mask, pos, pos_mask, chunk_rows)]
        cols += [_checkpointed(verifier._score, q, q_mask, neg[:, k], neg_mask[:, k])[:, None] for k in range(h_cols)]
        return torch.cat(cols, dim=1)
    if isinstance(verifier, PatchTransformerVerifier):
        cols = [_f4_all_pairs(verifier, q, q_mask, pos, pos_mask)]
        cols += [verifier._score(q, q_mask, neg[:, k], neg_mask[:, k])[:, None] for k in range(h_cols)]
        return torch.cat(cols, dim=1)
    width = max([pos.shape[1]] + ([neg.shape[2]] if h_cols else []))
    grid = ops.sim_map(q, pos, q_mask=q_mask, d_mask=pos_mask, channels=SIM_CHANNELS, all_pairs=True,
                       backend=verifier.backend)
    maps = [_cnn_input(grid.flatten(0, 1), width)]
    maps += [_cnn_input(ops.sim_map(q, neg[:, k], q_mask=q_mask, d_mask=neg_mask[:, k], channels=SIM_CHANNELS,
                                    backend=verifier.backend), width) for k in range(h_cols)]
    raw = verifier.mlp(verifier.features(torch.cat(maps))).squeeze(-1)
    scores = _out(verifier, raw)
    in_batch = scores[:b * b].view(b, b)
    near = scores[b * b:].view(h_cols, b).T
    return torch.cat([in_batch, near], dim=1)
