"""The "cpu" backend of sincere (SINCERE / SoftCSE): chunked torch, BLAS for the products.

Rows are processed `cpu_budget.rows_per_chunk(B)` at a time, so peak memory is O(rows x B), never B x B. The
forward keeps only per-anchor statistics (loss, L_i, U_i, |P_i|); the backward recomputes each chunk's
logits. sincere_fwd_bwd (the public scalar mean, with gradients) gets the loss and the gradients from one
pass over the chunks instead (3 matrix products per chunk instead of 4). All math is fp32 whatever the
input dtype (fp64 for fp64 inputs). The forward and backward math, and the symbols used here (s, L, U, P, N, G), are in
spherekit.reference.sincere's docstring.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._dispatch import stat_dtype
from .cpu_budget import row_chunks, rows_per_chunk

NEG_INF = float("-inf")


def _masks(y_r: Tensor, y: Tensor, r0: int) -> tuple[Tensor, Tensor]:
    """(same label, positive) masks of a row chunk starting at row r0: (R, B) bool each."""
    same = y_r[:, None] == y[None, :]
    pos = same.clone()
    rows = torch.arange(y_r.shape[0], device=y.device)
    pos[rows, rows + r0] = False
    return same, pos


def _bias_columns(label_bias: Tensor | None, labels: Tensor) -> Tensor | None:
    """label_bias[:, y] as (E, B) in the math dtype: a chunk's bias rows are then a cheap row gather, O(E x B)."""
    return None if label_bias is None else label_bias.index_select(1, labels).contiguous()


def _neg_logits(s: Tensor, same: Tensor, y_r: Tensor, bias_cols: Tensor | None, shift_r: Tensor | None) -> Tensor:
    """New (R, B) buffer: s + label_bias[y_i, y_k] + shift_i on negatives, -inf elsewhere."""
    z = s.clone() if bias_cols is None else s + bias_cols.index_select(0, y_r)
    if shift_r is not None:
        z.add_(shift_r[:, None])
    return z.masked_fill_(same, NEG_INF)


def _accumulate(G: Tensor, s: Tensor, e_r: Tensor, e32: Tensor, sl: slice, de: Tensor | None, inv_tau: Tensor,
                need_dtau: bool) -> Tensor | float:
    """Add a row chunk's share of dE * tau = (G + G^T) E: de[chunk] += G E, de += G^T E_chunk.
    -> the chunk's sum_ij G_ij s_ij / tau (dtau = -that, summed over chunks), or 0 when not needed."""
    if de is not None:
        de[sl].addmm_(G, e32)
        de.addmm_(G.T, e_r)
    return torch.vdot(G.view(-1), s.view(-1)) * inv_tau if need_dtau else 0.0


def sincere_fwd(e: Tensor, labels: Tensor, tau: Tensor, label_bias: Tensor | None, shift: Tensor | None):
    """-> (loss per anchor (B,), L (B,), U (B,), |P| (B,)), all fp32 (fp64 for fp64 inputs); anchors without
    positives get loss 0."""
    e32 = e.to(stat_dtype(e.dtype))
    lb = _bias_columns(None if label_bias is None else label_bias.to(e32.dtype), labels)
    inv_tau = 1.0 / tau.to(e32.dtype)
    B = e.shape[0]
    loss = torch.empty(B, dtype=e32.dtype, device=e.device)
    lse, usum, npos = torch.empty_like(loss), torch.empty_like(loss), torch.empty_like(loss)
    for sl in row_chunks(B, rows_per_chunk(B)):
        y_r = labels[sl]
        s = torch.mm(e32[sl], e32.T).mul_(inv_tau)
        same, pos = _masks(y_r, labels, sl.start)
        z = _neg_logits(s, same, y_r, lb, None if shift is None else shift[sl])
        L = torch.logsumexp(z, dim=1)
        del z
        t = s.neg_().add_(L[:, None]).masked_fill_(~pos, NEG_INF)  # L_i - s_ij on positives (reuses s)
        n = pos.sum(dim=1).to(e32.dtype)
        loss[sl] = F.softplus(t).sum(dim=1) / n.clamp_min(1.0)
        usum[sl] = torch.sigmoid(t).sum(dim=1)
        lse[sl], npos[sl] = L, n
    return loss, lse, usum, npos


def sincere_bwd(grad_rows, e, labels, tau, label_bias, shift, lse, usum, npos, *, need_de, need_dtau):
    """-> (dE (B, d) or None, dtau 0-dim or None), fp32 (fp64 for fp64 inputs)."""
    e32 = e.to(stat_dtype(e.dtype))
    lb = _bias_columns(None if label_bias is None else label_bias.to(e32.dtype), labels)
    inv_tau = 1.0 / tau.to(e32.dtype)
    B = e.shape[0]
    c = torch.where(npos > 0, grad_rows.to(e32.dtype) / npos.clamp_min(1.0), torch.zeros_like(npos))
    cu = c * usum
    lse_safe = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)  # exp(-inf - 0) = 0, no NaN
    de = torch.zeros_like(e32) if need_de else None
    dtau = torch.zeros((), dtype=e32.dtype, device=e.device)
    for sl in row_chunks(B, rows_per_chunk(B)):
        y_r, e_r = labels[sl], e32[sl]
        s = torch.mm(e_r, e32.T).mul_(inv_tau)
        same, pos = _masks(y_r, labels, sl.start)
        G = _neg_logits(s, same, y_r, lb, None if shift is None else shift[sl])
        G.sub_(lse_safe[sl, None]).exp_().mul_(cu[sl, None])  # softmax part: c_i U_i p_ij on negatives
        sig = torch.sigmoid(lse[sl, None] - s).masked_fill_(~pos, 0.0).mul_(c[sl, None])
        G.sub_(sig)
        del sig
        dtau -= _accumulate(G, s, e_r, e32, sl, de, inv_tau, need_dtau)
    if de is not None:
        de.mul_(inv_tau)
    return de, dtau if need_dtau else None


def _positive_counts(labels: Tensor, dtype: torch.dtype) -> Tensor:
    """|P_i| (B,) from label counts, O(B log B): never a B x B mask (and no host sync)."""
    _, inverse, counts = torch.unique(labels, return_inverse=True, return_counts=True)
    return (counts[inverse] - 1).to(dtype)


def sincere_fwd_bwd(e, labels, tau, label_bias, shift, *, need_de, need_dtau):
    """The public scalar loss (mean over anchors with >= 1 positive) and its gradients in one pass.

    A row chunk holds full rows, so L_i, U_i and |P_i| are complete within it: the chunk's loss rows and
    G rows come from one logit tile. Upstream weight w_i = 1/(number of anchors with a positive) for those
    anchors, 0 otherwise (an anchor with L_i = -inf counts in the mean with loss 0 and zero gradient);
    c_i = w_i / |P_i|. dE = (G + G^T) E / tau is accumulated as dE[chunk] += G_c E and dE += G_c^T E_c:
    3 matrix products per chunk (S, G E, G^T E_c) instead of 4 for forward + recomputing backward.
    -> (loss 0-dim, dE (B, d) or None, dtau 0-dim or None), fp32 (fp64 for fp64 inputs).
    """
    e32 = e.to(stat_dtype(e.dtype))
    lb = _bias_columns(None if label_bias is None else label_bias.to(e32.dtype), labels)
    inv_tau = 1.0 / tau.to(e32.dtype)
    B = e.shape[0]
    npos = _positive_counts(labels, e32.dtype).to(e.device)
    has_pos = npos > 0
    weight = 1.0 / has_pos.sum().clamp_min(1).to(e32.dtype)
    c_all = torch.where(has_pos, weight / npos.clamp_min(1.0), torch.zeros_like(npos))
    loss = torch.zeros((), dtype=e32.dtype, device=e.device)
    de = torch.zeros_like(e32) if need_de else None
    dtau = torch.zeros_like(loss)
    for sl in row_chunks(B, rows_per_chunk(B)):
        y_r, e_r, c = labels[sl], e32[sl], c_all[sl]
        s = torch.mm(e_r, e32.T).mul_(inv_tau)
        same, pos = _masks(y_r, labels, sl.start)
        G = _neg_logits(s, same, y_r, lb, None if shift is None else shift[sl])
        L = torch.logsumexp(G, dim=1)
        t = torch.sub(L[:, None], s).masked_fill_(~pos, NEG_INF)  # L_i - s_ij on positives, -inf elsewhere
        rows = F.softplus(t).sum(dim=1) / npos[sl].clamp_min(1.0)
        loss += (torch.where(has_pos[sl], rows, torch.zeros_like(rows)) * weight).sum()
        sig = t.sigmoid_()  # 0 off the positives (and everywhere when L_i = -inf)
        U = sig.sum(dim=1)
        L_safe = torch.where(torch.isneginf(L), torch.zeros_like(L), L)  # exp(-inf - 0) = 0, no NaN
        G.sub_(L_safe[:, None]).exp_().mul_((c * U)[:, None])  # softmax part: c_i U_i p_ij on negatives
        G.sub_(sig.mul_(c[:, None]))
        del sig, t
        dtau -= _accumulate(G, s, e_r, e32, sl, de, inv_tau, need_dtau)
    if de is not None:
        de.mul_(inv_tau)
    return loss, de, dtau if need_dtau else None
