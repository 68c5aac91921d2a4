"""The "cpu" backend of info_nce: chunked torch, BLAS for the products, O(rows x N) peak memory.

Rows are processed `rows_per_chunk` at a time and all math is fp32 whatever the input dtype. Two
ways to get gradients:
  - info_nce_fwd + info_nce_bwd: the forward keeps only per-row statistics (loss, logsumexp) and the backward
    recomputes each chunk's logits (4 matrix products in all);
  - info_nce_fwd_bwd: for a scalar loss (mean / sum) the upstream gradient is one scalar times known
    row weights, so one pass computes the loss AND the gradients (3 products); the autograd backward
    only scales them.
Runs on any device torch supports (it is also the CUDA fallback when Triton is missing).
See spherekit.reference.info_nce for the math.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor

from ..reference.contrastive import IGNORE_INDEX

# Elements of one (rows x N) fp32 chunk buffer; a few such buffers are alive at once.
CHUNK_ELEMENTS = int(os.environ.get("SPHEREKIT_CPU_CHUNK_ELEMENTS", 1 << 23))


def rows_per_chunk(n_cols: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(1, n_cols))


def _fp32(q, c, h, label_bias):
    return q.float(), c.float(), None if h is None else h.float(), None if label_bias is None else label_bias.float()


def _chunk_logits(qr, c32, t, qlr, cl, lb, inv_tau):
    """-> (logits (rows, N) with bias on negatives and false negatives at -inf, target dots (rows,))."""
    x = qr @ c32.T
    rows = torch.arange(x.shape[0], device=x.device)
    target_dot = x[rows, t]
    x.mul_(inv_tau)
    if lb is not None:
        x.add_(lb[qlr][:, cl])
    if qlr is not None:
        x.masked_fill_(qlr[:, None] == cl[None, :], float("-inf"))
    x[rows, t] = target_dot * inv_tau  # the target: no bias, never masked
    return x, target_dot


def _hard_negative_dots(qr: Tensor, hr: Tensor | None) -> Tensor | None:
    return None if hr is None else torch.bmm(hr, qr[:, :, None]).squeeze(2)


def _row_lse_and_loss(s, target_dot, hd, inv_tau, hn_softmax, bce_weight, bce_scale, bce_bias):
    row_lse = torch.logsumexp(s, dim=1)
    if hd is not None and hn_softmax:
        row_lse = torch.logaddexp(row_lse, torch.logsumexp(hd * inv_tau, dim=1))
    row_loss = row_lse - target_dot * inv_tau
    if hd is not None and bce_weight != 0.0:
        z_pos = bce_scale * target_dot + bce_bias
        z_neg = bce_scale * hd + bce_bias
        bce = (F.softplus(-z_pos) + F.softplus(z_neg).sum(1)) / (hd.shape[1] + 1)
        row_loss = row_loss + bce_weight * bce
    return row_lse, row_loss


def _chunk_grads(s, row_lse, g, qr, c32, hr, t, target_dot, hd, inv_tau, hn_softmax, bce_weight, bce_scale,
                 bce_bias, dc, dh_rows, want_dtau):
    """Overwrites the logits buffer s with G = dL/dx (x the dots); accumulates dc, fills dh_rows.

        G_ij  = g_i / tau * (p_ij - [j = t_i]) + [j = t_i] * beta_i,   beta_i from the BCE positive pair
        dq_i  = sum_j G_ij c_j + sum_k Gh_ik h_ik,   dc_j = sum_i G_ij q_i,   dh_ik = Gh_ik q_i
        dtau  = -(1/tau) * sum_i <q_i, softmax part of dq_i>
    -> (dq_rows, dtau contribution or None)
    """
    rows = torch.arange(s.shape[0], device=s.device)
    G = s.sub_(row_lse[:, None]).exp_().mul_((g * inv_tau)[:, None])
    G[rows, t] -= g * inv_tau
    Gh = None
    if hd is not None and hn_softmax:
        Gh = torch.exp(hd * inv_tau - row_lse[:, None]) * (g * inv_tau)[:, None]
    dq_rows = G @ c32
    if Gh is not None:
        dq_rows += torch.bmm(Gh[:, None, :], hr).squeeze(1)
    dtau = -(qr * dq_rows).sum() * inv_tau if want_dtau else None
    if hd is not None and bce_weight != 0.0:  # d softplus(-z)/dz = -sigmoid(-z); d softplus(z)/dz = sigmoid(z)
        coef = g * (bce_weight * bce_scale / (hd.shape[1] + 1))
        beta = -torch.sigmoid(-(bce_scale * target_dot + bce_bias)) * coef
        Gh_bce = torch.sigmoid(bce_scale * hd + bce_bias) * coef[:, None]
        Gh = Gh_bce if Gh is None else Gh + Gh_bce
        G[rows, t] += beta
        dq_rows += beta[:, None] * c32[t] + torch.bmm(Gh_bce[:, None, :], hr).squeeze(1)
    if dc is not None:
        dc.addmm_(G.T, qr)
    if dh_rows is not None and Gh is not None:
        dh_rows.copy_(Gh[:, :, None] * qr[:, None, :])
    return dq_rows, dtau


def _targets(targets):
    valid = targets != IGNORE_INDEX
    return valid, torch.where(valid, targets, torch.zeros_like(targets))


def info_nce_fwd(q, c, targets, h, tau, ql, cl, label_bias, *, hn_softmax, bce_weight, bce_scale, bce_bias):
    """-> (loss per row (B,) fp32, logsumexp per row (B,) fp32); ignored rows get loss 0."""
    q32, c32, h32, lb = _fp32(q, c, h, label_bias)
    inv_tau = 1.0 / tau
    valid, t_all = _targets(targets)
    loss = torch.empty(q.shape[0], dtype=torch.float32, device=q.device)
    lse = torch.empty_like(loss)
    step = rows_per_chunk(c.shape[0])
    for r0 in range(0, q.shape[0], step):
        sl = slice(r0, r0 + step)
        s, target_dot = _chunk_logits(q32[sl], c32, t_all[sl], None if ql is None else ql[sl], cl, lb, inv_tau)
        hd = _hard_negative_dots(q32[sl], None if h32 is None else h32[sl])
        lse[sl], row_loss = _row_lse_and_loss(s, target_dot, hd, inv_tau, hn_softmax, bce_weight, bce_scale,
                                              bce_bias)
        loss[sl] = torch.where(valid[sl], row_loss, torch.zeros_like(row_loss))
    return loss, lse


def _grad_buffers(q32, c32, h32, need_dq, need_dc, need_dh):
    dq = torch.zeros_like(q32) if need_dq else None
    dc = torch.zeros_like(c32) if need_dc else None
    dh = torch.zeros_like(h32) if need_dh else None
    return dq, dc, dh


def info_nce_bwd(grad_rows, q, c, targets, h, tau, ql, cl, label_bias, lse, *, hn_softmax, bce_weight, bce_scale,
                 bce_bias, need_dq, need_dc, need_dh, need_dtau):
    """-> (dq, dc, dh, dtau) in fp32, recomputing each chunk's logits; entries not needed are None."""
    q32, c32, h32, lb = _fp32(q, c, h, label_bias)
    inv_tau = 1.0 / tau
    valid, t_all = _targets(targets)
    g_all = torch.where(valid, grad_rows.float(), torch.zeros_like(lse))
    dq, dc, dh = _grad_buffers(q32, c32, h32, need_dq, need_dc, need_dh)
    dtau = torch.zeros((), dtype=torch.float32, device=q.device)
    step = rows_per_chunk(c.shape[0])
    for r0 in range(0, q.shape[0], step):
        sl = slice(r0, r0 + step)
        qr, hr, t = q32[sl], None if h32 is None else h32[sl], t_all[sl]
        s, target_dot = _chunk_logits(qr, c32, t, None if ql is None else ql[sl], cl, lb, inv_tau)
        dq_rows, dtau_part = _chunk_grads(
            s, lse[sl], g_all[sl], qr, c32, hr, t, target_dot, _hard_negative_dots(qr, hr), inv_tau, hn_softmax,
            bce_weight, bce_scale, bce_bias, dc, None if dh is None else dh[sl], need_dtau)
        if dq is not None:
            dq[sl] = dq_rows
        if need_dtau:
            dtau += dtau_part
    return dq, dc, dh, dtau if need_dtau else None


def info_nce_fwd_bwd(q, c, targets, h, tau, ql, cl, label_bias, *, hn_softmax, bce_weight, bce_scale, bce_bias,
                     reduction, need_dq, need_dc, need_dh, need_dtau):
    """Scalar loss (reduction "mean" or "sum") and its gradients in one pass over the chunks.

    Row weights w_i: 1/(number of valid rows) for "mean" (0 if none), 1 for "sum", 0 for ignored rows;
    loss = sum_i w_i loss_i and the gradients are those of that sum (upstream g_i = w_i).
    -> (loss 0-dim fp32, dq, dc, dh, dtau) with None for the gradients not needed.
    """
    q32, c32, h32, lb = _fp32(q, c, h, label_bias)
    inv_tau = 1.0 / tau
    valid, t_all = _targets(targets)
    weights = valid.float()
    if reduction == "mean":
        weights /= valid.sum().clamp_min(1)
    dq, dc, dh = _grad_buffers(q32, c32, h32, need_dq, need_dc, need_dh)
    loss = torch.zeros((), dtype=torch.float32, device=q.device)
    dtau = torch.zeros_like(loss)
    step = rows_per_chunk(c.shape[0])
    for r0 in range(0, q.shape[0], step):
        sl = slice(r0, r0 + step)
        qr, hr, t = q32[sl], None if h32 is None else h32[sl], t_all[sl]
        s, target_dot = _chunk_logits(qr, c32, t, None if ql is None else ql[sl], cl, lb, inv_tau)
        hd = _hard_negative_dots(qr, hr)
        row_lse, row_loss = _row_lse_and_loss(s, target_dot, hd, inv_tau, hn_softmax, bce_weight, bce_scale,
                                              bce_bias)
        loss += (weights[sl] * torch.where(valid[sl], row_loss, torch.zeros_like(row_loss))).sum()
        dq_rows, dtau_part = _chunk_grads(
            s, row_lse, weights[sl], qr, c32, hr, t, target_dot, hd, inv_tau, hn_softmax, bce_weight, bce_scale,
            bce_bias, dc, None if dh is None else dh[sl], need_dtau)
        if dq is not None:
            dq[sl] = dq_rows
        if need_dtau:
            dtau += dtau_part
    return loss, dq, dc, dh, dtau if need_dtau else None
