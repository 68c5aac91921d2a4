"""The "cpu" backend of info_nce: chunked torch, BLAS for the products, O(rows x N) peak memory.

Rows are processed `rows_per_chunk` at a time; the forward keeps only per-row statistics (loss,
logsumexp) and the backward recomputes each chunk's logits. All math is fp32 whatever the input
dtype. Runs on any device torch supports (it is also the CUDA fallback when Triton is missing).
See spherekit.reference.info_nce for the math.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor

# Elements of one (rows x N) fp32 chunk buffer; a few such buffers are alive at once.
CHUNK_ELEMENTS = int(os.environ.get("SPHEREKIT_CPU_CHUNK_ELEMENTS", 1 << 23))


def rows_per_chunk(n_cols: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(1, n_cols))


def _masked_logits(x: Tensor, inv_tau: Tensor, t: Tensor, ql, cl, label_bias) -> Tensor:
    """In place: x (rows, N) dots -> logits with bias on negatives and false negatives at -inf."""
    rows = torch.arange(x.shape[0], device=x.device)
    target_logit = x[rows, t] * inv_tau
    x.mul_(inv_tau)
    if label_bias is not None:
        x.add_(label_bias[ql][:, cl])
    if ql is not None:
        x.masked_fill_(ql[:, None] == cl[None, :], float("-inf"))
    x[rows, t] = target_logit  # the target: no bias, never masked
    return x


def _hard_negative_dots(q: Tensor, h: Tensor | None) -> Tensor | None:
    return None if h is None else torch.bmm(h, q[:, :, None]).squeeze(2)


def forward(q, c, targets, h, tau, ql, cl, label_bias, hn_softmax, bce_weight, bce_scale, bce_bias):
    """-> (loss per row (B,) fp32, logsumexp per row (B,) fp32); ignored rows get loss 0."""
    q32, c32 = q.float(), c.float()
    h32 = None if h is None else h.float()
    lb = None if label_bias is None else label_bias.float()
    inv_tau = 1.0 / tau
    valid = targets != -100
    t_all = torch.where(valid, targets, torch.zeros_like(targets))
    loss = torch.empty(q.shape[0], dtype=torch.float32, device=q.device)
    lse = torch.empty_like(loss)
    step = rows_per_chunk(c.shape[0])
    for r0 in range(0, q.shape[0], step):
        sl = slice(r0, r0 + step)
        qr, t = q32[sl], t_all[sl]
        x = qr @ c32.T
        target_dot = x[torch.arange(x.shape[0], device=x.device), t]
        s = _masked_logits(x, inv_tau, t, None if ql is None else ql[sl], cl, lb)
        row_lse = torch.logsumexp(s, dim=1)
        hd = _hard_negative_dots(qr, None if h32 is None else h32[sl])
        if hd is not None and hn_softmax:
            row_lse = torch.logaddexp(row_lse, torch.logsumexp(hd * inv_tau, dim=1))
        row_loss = row_lse - target_dot * inv_tau
        if hd is not None and bce_weight != 0.0:
            z_pos = bce_scale * target_dot + bce_bias
            z_neg = bce_scale * hd + bce_bias
            bce = (F.softplus(-z_pos) + F.softplus(z_neg).sum(1)) / (hd.shape[1] + 1)
            row_loss = row_loss + bce_weight * bce
        loss[sl] = torch.where(valid[sl], row_loss, torch.zeros_like(row_loss))
        lse[sl] = row_lse
    return loss, lse


def backward(grad_rows, q, c, targets, h, tau, ql, cl, label_bias, lse, hn_softmax, bce_weight, bce_scale,
             bce_bias, need_dq, need_dc, need_dh, need_dtau):
    """-> (dq, dc, dh, dtau) in fp32; entries not needed are None.

    Per chunk, with G the gradient w.r.t. the dots x_ij (= dL/ds_ij / tau):
        G_ij  = g_i / tau * (p_ij - [j = t_i]) + [j = t_i] * beta_i,   beta_i from the BCE positive pair
        dq_i  = sum_j G_ij c_j + sum_k Gh_ik h_ik,   dc_j = sum_i G_ij q_i,   dh_ik = Gh_ik q_i
        dtau  = -(1/tau) * sum_i <q_i, dq_i restricted to the softmax part>
    """
    q32, c32 = q.float(), c.float()
    h32 = None if h is None else h.float()
    lb = None if label_bias is None else label_bias.float()
    inv_tau = 1.0 / tau
    valid = targets != -100
    t_all = torch.where(valid, targets, torch.zeros_like(targets))
    g_all = torch.where(valid, grad_rows.float(), torch.zeros_like(lse))
    dq = torch.zeros_like(q32) if need_dq or need_dtau else None
    dc = torch.zeros_like(c32) if need_dc else None
    dh = torch.zeros_like(h32) if need_dh else None
    dtau_acc = torch.zeros((), dtype=torch.float32, device=q.device)
    step = rows_per_chunk(c.shape[0])
    for r0 in range(0, q.shape[0], step):
        sl = slice(r0, r0 + step)
        qr, t, g = q32[sl], t_all[sl], g_all[sl]
        rows = torch.arange(qr.shape[0], device=q.device)
        x = qr @ c32.T
        target_dot = x[rows, t]
        p = _masked_logits(x, inv_tau, t, None if ql is None else ql[sl], cl, lb)
        p.sub_(lse[sl, None]).exp_()
        G = p.mul_((g * inv_tau)[:, None])  # softmax part of dL/dx, without the -1 at the target
        G[rows, t] -= g * inv_tau
        hd = _hard_negative_dots(qr, None if h32 is None else h32[sl])
        Gh = None
        if hd is not None and hn_softmax:
            Gh = torch.exp(hd * inv_tau - lse[sl, None]) * (g * inv_tau)[:, None]
        dq_sm = G @ c32
        if Gh is not None:
            dq_sm += torch.bmm(Gh[:, None, :], h32[sl]).squeeze(1)
        if need_dtau:
            dtau_acc -= (qr * dq_sm).sum() * inv_tau
        if hd is not None and bce_weight != 0.0:  # BCE: d softplus(-z)/dz = -sigmoid(-z); d softplus(z)/dz = sigmoid(z)
            coef = g * (bce_weight * bce_scale / (hd.shape[1] + 1))
            beta = -torch.sigmoid(-(bce_scale * target_dot + bce_bias)) * coef
            Gh_bce = torch.sigmoid(bce_scale * hd + bce_bias) * coef[:, None]
            Gh = Gh_bce if Gh is None else Gh + Gh_bce
            G[rows, t] += beta
            dq_sm += beta[:, None] * c32[t] + torch.bmm(Gh_bce[:, None, :], h32[sl]).squeeze(1)
        if dq is not None:
            dq[sl] = dq_sm
        if dc is not None:
            dc.addmm_(G.T, qr)
        if dh is not None and Gh is not None:
            dh[sl] = Gh[:, :, None] * qr[:, None, :]
    return dq if need_dq else None, dc, dh, dtau_acc if need_dtau else None
