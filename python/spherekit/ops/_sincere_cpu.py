"""The "cpu" backend of sincere (SINCERE / SoftCSE): chunked torch, BLAS for the products.

Rows are processed `cpu_budget.rows_per_chunk(B)` at a time, so peak memory is O(rows x B), never B x B. The
forward keeps only per-anchor statistics (loss, L_i, U_i, |P_i|); the backward recomputes each chunk's logits.
A scalar loss with gradients takes the chunked one-pass path instead (spherekit.ops._gram_chunked), whose torch
row kernel is sincere_rows here. All math is fp32 whatever the input dtype (fp64 for fp64 inputs). The forward
and backward math, and the symbols used here (s, L, U, P, N, G), are in spherekit.reference.sincere's docstring.
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


def positive_counts(labels: Tensor) -> Tensor:
    """|P_i| (B,) int64, the other embeddings sharing anchor i's label, by sorting: O(B log B), shapes fixed by B
    (no host sync, traceable), never a B x B mask."""
    ordered, _ = torch.sort(labels)
    return (torch.searchsorted(ordered, labels, right=True) - torch.searchsorted(ordered, labels)) - 1


def sincere_rows(S: Tensor, sl: slice, labels: Tensor, tau: Tensor, label_bias: Tensor | None,
                 shift: Tensor | None, npos: Tensor, *, need_stat: bool) -> tuple[Tensor, Tensor | None]:
    """The row kernel of the chunked one-pass path (spherekit.ops._gram_chunked), in torch: S (R, B) holds the dots
    x_ij of the rows sl with every embedding and is overwritten with

        G'_ij = (1/|P_i|) (U_i p_ij [j in N_i] - sigmoid(L_i - s_ij) [j in P_i]),   p_ij = exp(s_ij + b_ij - L_i)

    (0 on anchors without a positive), the gradient with respect to the logits s = x / tau of the loss
    sum_i (1/|P_i|) sum_{j in P_i} softplus(L_i - s_ij), whose sum over the rows it returns with r = sum G'_ij x_ij
    (need_stat). label_bias (E, E), shift (B,), npos = |P| (B,). Symbols: spherekit.reference.sincere.
    -> (the rows' loss sum, their r sum or None)."""
    dt = S.dtype
    y_r = labels[sl]
    x = S.clone() if need_stat else None
    s = S.mul_(1.0 / tau.to(dt))
    same, pos = _masks(y_r, labels, sl.start)
    G = _neg_logits(s, same, y_r, _bias_columns(None if label_bias is None else label_bias.to(dt), labels),
                    None if shift is None else shift[sl])
    L = torch.logsumexp(G, dim=1)
    t = torch.sub(L[:, None], s).masked_fill_(~pos, NEG_INF)  # L_i - s_ij on positives, -inf elsewhere
    n = npos[sl].to(dt)
    c = torch.where(n > 0, 1.0 / n.clamp_min(1.0), torch.zeros_like(n))
    loss = (F.softplus(t).sum(dim=1) * c).sum()
    sig = t.sigmoid_()  # 0 off the positives (and everywhere when L_i = -inf)
    U = sig.sum(dim=1)
    L_safe = torch.where(torch.isneginf(L), torch.zeros_like(L), L)  # exp(-inf - 0) = 0, no NaN
    G.sub_(L_safe[:, None]).exp_().mul_((c * U)[:, None])  # softmax part: U_i p_ij / |P_i| on negatives
    G.sub_(sig.mul_(c[:, None]))
    del sig, t
    S.copy_(G)
    stat = torch.vdot(G.view(-1), x.view(-1)) if need_stat else None
    return loss, stat
