"""Oracles for the token-similarity-map family ("Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization" (arXiv:2604.16351), appendix C): F0 global average, F1 MaxSim, F2 soft alignment, the
(multi-channel, optionally patched) map M that F3/F4 consume, ragged MaxSim.

Every function materialises M, computes in ``compute_dtype`` (fp32 by default; the tests also run them in
fp16/fp64 to measure what a same-precision torch computation achieves) and relies on torch autograd for
gradients. Notation, for a query q (m tokens) and a document d (n tokens), hidden size h:

    qn_i = Norm(q_i), dn_j = Norm(d_j)  with Norm(x) = x / max(||x||_2, eps), eps = 1e-6
                                         (identity when normalize=False)
    M_ij = <qn_i, dn_j>                  (the cosine map of "Compositional Sensitivity", eq. 4)
    Q = {i : q_mask_i},  D = {j : d_mask_j}   valid (non-padding) tokens; padding never contributes.

Masks are bool, True = valid token. Positions i, j are the indices in the (padded) tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

EPS = 1e-6
NEG_INF = float("-inf")
CHANNELS = ("sim", "rowmax", "colmax")


def _prep(x: Tensor, normalize: bool, compute_dtype: torch.dtype) -> Tensor:
    x = x.to(compute_dtype)
    return F.normalize(x, dim=-1, eps=EPS) if normalize else x


def _masked_row_mean(rows: Tensor, q_mask: Tensor) -> Tensor:
    """mean over valid query tokens of rows (..., m); q_mask broadcasts against rows. A row without valid tokens
    gives 0 (the ops' convention for an all-padding query)."""
    q_mask = q_mask.expand_as(rows)
    total = torch.where(q_mask, rows, torch.zeros_like(rows)).sum(-1)
    count = q_mask.sum(-1).to(rows.dtype)
    return torch.where(count > 0, total / count.clamp_min(1), torch.zeros_like(total))


def _masked_row_reduce(rows: Tensor, q_mask: Tensor, reduction: str) -> Tensor:
    """reduction "mean" (_masked_row_mean) or "sum" over the valid query tokens of rows (..., m)."""
    if reduction == "mean":
        return _masked_row_mean(rows, q_mask)
    if reduction != "sum":
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    return torch.where(q_mask.expand_as(rows), rows, torch.zeros_like(rows)).sum(-1)


def _best_valid(sims: Tensor, d_valid: Tensor) -> Tensor:
    """max over the last axis of sims where d_valid (broadcasting against sims); 0 where no entry is valid (the max
    over an empty set, the ops' convention for an all-padding document). torch.max propagates NaN."""
    best = sims.masked_fill(~d_valid, NEG_INF).max(dim=-1).values
    return torch.where(d_valid.any(-1).expand_as(best), best, torch.zeros_like(best))


def maxsim(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, pairwise: bool = False,
           normalize: bool = True, reduction: str = "mean", compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""MaxSim / late interaction (F1 of "Compositional Sensitivity" eq. 6 with the defaults here; ColBERT / PyLate's
    score with normalize=False, reduction="sum", the defaults of spherekit.ops.maxsim):

        score(q, d) = c sum_{i in Q} max_{j in D} M_ij,     c = 1/|Q| ("mean") or 1 ("sum")

    Layouts: q (Bq, m, h) with d (Bd, n, h) -> (Bq, Bd) all pairs; pairwise=True (Bq == Bd) -> (B,);
    d (Bq, K, n, h), d_mask (Bq, K, n) -> (Bq, K), each query against its own K candidates.
    A query without valid tokens scores 0; a document without valid tokens contributes 0 per query token.

    Gradient: d score / d M_ij = c [i in Q] [j = argmax_{j' in D} M_ij'], then through M = qn dn^T
    (and Norm). Autograd computes it here (torch.max sends the gradient to one maximal index).
    """
    qn, dn = _prep(q, normalize, compute_dtype), _prep(d, normalize, compute_dtype)
    if d.dim() == 4:  # (Bq, K, m, n)
        sims = torch.einsum("bih,bknh->bkin", qn, dn)
        dm, qm = d_mask[:, :, None, :], q_mask[:, None, :]
    elif pairwise:  # (B, m, n)
        sims = torch.einsum("bih,bjh->bij", qn, dn)
        dm, qm = d_mask[:, None, :], q_mask
    else:  # (Bq, Bd, m, n)
        sims = torch.einsum("aih,bjh->abij", qn, dn)
        dm, qm = d_mask[None, :, None, :], q_mask[:, None, :]
    return _masked_row_reduce(_best_valid(sims, dm), qm, reduction)


def soft_align(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, lam: float | Tensor = 0.1,
               tau: float | Tensor = 0.1, normalize: bool = True,
               compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""F2 (soft alignment with a positional bias, "Compositional Sensitivity" eqs. 7 and 10), paired q (B, m, h),
    d (B, n, h) -> (B,):

        z_ij  = (M_ij - lam |i - j|) / tau                      for j in D
        A_ij  = softmax_{j in D} z_ij                            (row-stochastic over valid j)
        s_i   = sum_{j in D} A_ij M_ij          (0 when D is empty)
        score = (1/|Q|) sum_{i in Q} s_i        (0 when Q is empty)

    Gradient (per valid i, before the 1/|Q| mean):
        d s_i / d M_ij = A_ij (1 + (M_ij - s_i) / tau)
        d s_i / d lam  = -(1/tau) sum_j A_ij |i - j| (M_ij - s_i)
        d s_i / d tau  = -(1/tau) sum_j A_ij z_ij (M_ij - s_i)
    lam and tau may be 0-d tensors with requires_grad; autograd computes everything here.
    """
    qn, dn = _prep(q, normalize, compute_dtype), _prep(d, normalize, compute_dtype)
    sims = torch.einsum("bih,bjh->bij", qn, dn)
    m, n = sims.shape[-2:]
    pos = (torch.arange(m, device=sims.device)[:, None] - torch.arange(n, device=sims.device)[None, :]).abs()
    lam = lam.to(compute_dtype) if isinstance(lam, Tensor) else lam
    tau = tau.to(compute_dtype) if isinstance(tau, Tensor) else tau
    z = (sims - lam * pos.to(compute_dtype)) / tau
    empty = ~d_mask.any(-1)[:, None, None]  # a document without valid tokens: A = 0 (s_i = 0, no gradient)
    z = z.masked_fill(~d_mask[:, None, :], NEG_INF).masked_fill(empty, 0.0)
    attn = torch.softmax(z, dim=-1).masked_fill(empty, 0.0)
    rows = (attn * sims).sum(-1)
    return _masked_row_mean(rows, q_mask)


def _channel_maps(sims: Tensor, valid: Tensor, channels: tuple[str, ...]) -> Tensor:
    """(B, m, n, C): the requested channels of a (clipped) map, 0 at padding entries."""
    out = []
    for name in channels:
        if name == "sim":
            ch = sims
        elif name == "rowmax":  # max over valid j of row i, broadcast along j
            ch = sims.masked_fill(~valid, NEG_INF).max(dim=-1, keepdim=True).values.expand_as(sims)
        elif name == "colmax":  # max over valid i of column j, broadcast along i
            ch = sims.masked_fill(~valid, NEG_INF).max(dim=-2, keepdim=True).values.expand_as(sims)
        else:
            raise ValueError(f"channels: unknown channel {name!r}; choose from {CHANNELS}")
        out.append(torch.where(valid, ch, torch.zeros_like(ch)))
    return torch.stack(out, dim=-1)


def patchify(x: Tensor, patch: int) -> Tensor:
    """(B, m, n, C) -> (B, ceil(m/p) * ceil(n/p), p * p * C): zero-pad to multiples of p, cut p x p patches.

    Patches are ordered row-major over the patch grid (patch row gi, then patch column gj); inside a
    patch the features are ordered (pi, pj, c), i.e. feature (pi * p + pj) * C + c holds x[gi*p + pi,
    gj*p + pj, c]. A Linear layer over these features equals a Conv2d(C, D, kernel_size=p, stride=p) over
    the (B, C, m, n) map (the paper code's patch embedding) with weight[o, c, pi, pj] at that feature.
    """
    B, m, n, C = x.shape
    gm, gn = -(-m // patch), -(-n // patch)
    x = F.pad(x, (0, 0, 0, gn * patch - n, 0, gm * patch - m))
    return x.view(B, gm, patch, gn, patch, C).permute(0, 1, 3, 2, 4, 5).reshape(B, gm * gn, patch * patch * C)


def sim_map(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, patch: int | None = None,
            channels: tuple[str, ...] = ("sim",), clip: bool = True, normalize: bool = True, all_pairs: bool = False,
            compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""The map phi(M) that F3 / F4 consume ("Compositional Sensitivity" eqs. 8-9), paired q (B, m, h), d (B, n, h):

        M'_ij      = clamp(M_ij, -1, 1) if clip else M_ij
        sim_ij     = M'_ij
        rowmax_ij  = max_{j' in D} M'_ij'      (broadcast along j)
        colmax_ij  = max_{i' in Q} M'_i'j      (broadcast along i)
        every channel is 0 where i not in Q or j not in D.

    -> (B, m, n, C) with the channels in the order given, or with patch=p the patch sequence
    patchify(map, p) of shape (B, ceil(m/p) * ceil(n/p), p * p * C).

    all_pairs=True: q (Bq, m, h) against every d (Bd, n, h), the map of pair (a, b) being that of query a with
    document b -> (Bq, Bd, m, n, C) or (Bq, Bd, P, p * p * C) (the in-batch grid of a verifier MNRL loss).

    Gradient: through the sim channel d/dM'_ij = grad_ij on valid entries; the max channels send the
    summed gradient of their row / column to its maximal entry; the clamp passes the gradient where
    -1 <= M_ij <= 1 and stops it elsewhere (torch.clamp). Autograd computes it here.
    """
    qn, dn = _prep(q, normalize, compute_dtype), _prep(d, normalize, compute_dtype)
    if all_pairs:
        bq, bd = q.shape[0], d.shape[0]
        sims = torch.einsum("aih,bjh->abij", qn, dn).flatten(0, 1)
        valid = (q_mask[:, None, :, None] & d_mask[None, :, None, :]).flatten(0, 1)
    else:
        sims = torch.einsum("bih,bjh->bij", qn, dn)
        valid = q_mask[:, :, None] & d_mask[:, None, :]
    if clip:
        sims = sims.clamp(-1.0, 1.0)
    out = _channel_maps(sims, valid, tuple(channels))
    out = out if patch is None else patchify(out, patch)
    return out.unflatten(0, (bq, bd)) if all_pairs else out


def sim_map_patch_mask(q_mask: Tensor, d_mask: Tensor, patch: int, all_pairs: bool = False) -> Tensor:
    """(B, ceil(m/p) * ceil(n/p)) bool (all_pairs: (Bq, Bd, ...)): True where a patch holds at least one valid
    (i, j) entry (the paper code masks the other patches out of the Transformer's attention)."""
    if all_pairs:
        valid = (q_mask[:, None, :, None] & d_mask[None, :, None, :]).flatten(0, 1)[..., None].float()
        return (patchify(valid, patch).amax(-1) > 0).unflatten(0, (q_mask.shape[0], d_mask.shape[0]))
    valid = (q_mask[:, :, None] & d_mask[:, None, :])[..., None].float()
    return patchify(valid, patch).amax(-1) > 0


def global_avg_sim(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, normalize: bool = True,
                   compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""F0 (global average, "Compositional Sensitivity" eq. 5), paired -> (B,):

        score = (1/(|Q| |D|)) sum_{i in Q} sum_{j in D} M_ij      (0 when Q or D is empty)

    This oracle materialises M; the op uses the identity score = <sum_Q qn_i, sum_D dn_j> / (|Q| |D|).
    """
    qn, dn = _prep(q, normalize, compute_dtype), _prep(d, normalize, compute_dtype)
    sims = torch.einsum("bih,bjh->bij", qn, dn)
    valid = q_mask[:, :, None] & d_mask[:, None, :]
    total = torch.where(valid, sims, torch.zeros_like(sims)).sum((-1, -2))
    count = valid.sum((-1, -2)).to(sims.dtype)
    return torch.where(count > 0, total / count.clamp_min(1), torch.zeros_like(total))


def maxsim_ragged(q: Tensor, q_mask: Tensor | None, docs: Tensor, offsets: Tensor, *, normalize: bool = True,
                  reduction: str = "mean", compute_dtype: torch.dtype = torch.float32) -> Tensor:
    r"""MaxSim of one query q (m, h) against N documents packed without padding: document k is
    docs[offsets[k]:offsets[k+1]] (T, h) in total; -> (N,):

        score_k = c sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <qn_i, dn_t>,   c = 1/|Q| or 1 (as maxsim)

    An empty document (offsets[k] == offsets[k+1]) scores 0, like an all-padding document of maxsim.
    """
    qn, dn = _prep(q, normalize, compute_dtype), _prep(docs, normalize, compute_dtype)
    q_mask = torch.ones(q.shape[0], dtype=torch.bool, device=q.device) if q_mask is None else q_mask
    bounds = offsets.tolist()
    scores = [(qn @ dn[a:b].T).max(dim=-1).values if b > a else qn.new_zeros(q.shape[0])
              for a, b in zip(bounds[:-1], bounds[1:])]
    return _masked_row_reduce(torch.stack(scores), q_mask[None, :], reduction)
