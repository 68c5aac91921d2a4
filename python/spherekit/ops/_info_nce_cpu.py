"""The "cpu" backend of info_nce: tiled torch, BLAS for the products, peak memory O(tile), never B x N; and the
torch row kernel of the chunked one-pass path (info_nce_rows, for spherekit.ops._info_nce_chunked).

The (B x N) logits exist one tile at a time (cpu_budget.tile_elements(): CHUNK_ELEMENTS elements, at least
cpu_budget.MIN_TILE_ELEMENTS, so that each pass over a tile outlasts a scheduler time slice on a busy machine;
fp32 math whatever the input dtype). A tile holds whole rows (all N candidates) when at least MIN_ROWS rows (or
all B) fit the budget. Otherwise (a large bank: DefSent+'s softmax over ~150k dictionary entries) a tile is a
column block of a row chunk and each row's logsumexp is accumulated over the blocks,

    lse_i <- logaddexp(lse_i, logsumexp_j in block s_ij),

so the bank is read once per chunk of up to ~sqrt(tile_elements()) rows instead of once per handful of rows.

The streaming path (reduction "none", or no gradient): info_nce_fwd keeps only per-row statistics (loss,
logsumexp) and info_nce_bwd recomputes each tile's logits (4 matrix products in all). A scalar loss with a
gradient takes the chunked one-pass path instead (3 products), whose CPU row kernel is info_nce_rows below.
Runs on any device torch supports (it is also the CUDA fallback when Triton is missing).
Math and symbols (s, lse, G, Gh, beta): spherekit.reference.contrastive.info_nce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..reference.contrastive import IGNORE_INDEX
from . import cpu_budget
from ._dispatch import stat_dtype
from .cpu_budget import row_chunks

MIN_ROWS = 64  # whole-row tiles of fewer rows make memory-bound products: block the columns instead


def tile_shape(B: int, N: int) -> tuple[int, int]:
    """(rows, columns) of one logits tile: whole rows when min(B, MIN_ROWS) rows of N fit tile_elements(), else
    column blocks of up to max(MIN_ROWS, sqrt(tile_elements())) rows, about tile_elements() elements each."""
    budget = cpu_budget.tile_elements()
    rows = budget // max(1, N)
    if rows >= min(B, MIN_ROWS):
        return max(1, min(B, rows)), N
    rows = max(1, min(B, max(MIN_ROWS, math.isqrt(budget))))
    return rows, max(1, min(N, budget // rows))


@dataclass
class _Problem:
    """The inputs in fp32 and the options, shared by every tile."""

    q: Tensor
    c: Tensor
    h: Tensor | None
    ql: Tensor | None
    cl: Tensor | None
    label_bias: Tensor | None
    inv_tau: Tensor  # 0-dim, on the device
    valid: Tensor  # rows that take part (target != IGNORE_INDEX)
    t: Tensor  # targets, 0 on ignored rows
    hn_softmax: bool
    bce_weight: float
    bce_scale: float
    bce_bias: float

    @classmethod
    def of(cls, q, c, targets, h, tau, ql, cl, label_bias, *, hn_softmax, bce_weight, bce_scale, bce_bias):
        valid = targets != IGNORE_INDEX
        dt = stat_dtype(q.dtype)
        return cls(q.to(dt), c.to(dt), None if h is None else h.to(dt), ql, cl,
                   None if label_bias is None else label_bias.to(dt), 1.0 / tau.to(dt), valid,
                   torch.where(valid, targets, torch.zeros_like(targets)), hn_softmax, bce_weight, bce_scale, bce_bias)

    @property
    def bce(self) -> bool:
        return self.h is not None and self.bce_weight != 0.0

    def rows(self, sl: slice) -> "_Rows":
        qr, t = self.q[sl], self.t[sl]
        hr = None if self.h is None else self.h[sl]
        return _Rows(sl, qr, t, None if self.ql is None else self.ql[sl], hr, (qr * self.c[t]).sum(1),
                     None if hr is None else torch.bmm(hr, qr[:, :, None]).squeeze(2))

    def blocks(self, width: int):
        """(c0, candidate block, its labels) over the candidates, width columns at a time."""
        for cs in row_chunks(self.c.shape[0], width):
            yield cs.start, self.c[cs], None if self.cl is None else self.cl[cs]


@dataclass
class _Rows:
    """One row chunk: its slice, queries, targets, query labels, hard negatives and the dots x_it and y_ik."""

    sl: slice
    q: Tensor
    t: Tensor
    ql: Tensor | None
    h: Tensor | None
    target_dot: Tensor
    hd: Tensor | None


def _target_cells(t: Tensor, c0: int, width: int) -> tuple[Tensor, Tensor]:
    """(rows, columns) of the tile cells that hold a row's target, for the block of columns c0 .. c0 + width."""
    rows = ((t >= c0) & (t < c0 + width)).nonzero().squeeze(1)
    return rows, t[rows] - c0


def _tile_logits(p: _Problem, r: _Rows, c0: int, cb: Tensor, clb: Tensor | None) -> Tensor:
    """s of the rows against the candidate block cb = c[c0:]: bias on negatives, false negatives at -inf, the
    target cell x_it / tau (no bias, never masked)."""
    x = torch.mm(r.q, cb.T).mul_(p.inv_tau)  # inv_tau: a 0-dim tensor (as addmm's alpha it would sync the host)
    if p.label_bias is not None:
        x.add_(p.label_bias[r.ql][:, clb])
    if r.ql is not None:
        x.masked_fill_(r.ql[:, None] == clb[None, :], float("-inf"))
    rows, cols = _target_cells(r.t, c0, x.shape[1])
    x[rows, cols] = r.target_dot[rows] * p.inv_tau
    return x


def _candidate_lse(p: _Problem, r: _Rows, width: int) -> Tensor:
    """logsumexp_j s_ij over every candidate, one column block at a time."""
    lse = None
    for c0, cb, clb in p.blocks(width):
        block = torch.logsumexp(_tile_logits(p, r, c0, cb, clb), dim=1)
        lse = block if lse is None else torch.logaddexp(lse, block)
    return lse


def _row_lse_and_loss(p: _Problem, r: _Rows, cand_lse: Tensor) -> tuple[Tensor, Tensor]:
    """(lse_i, loss_i) from the candidates' logsumexp, adding the hard negatives (softmax modes) and BCE."""
    row_lse = cand_lse
    if r.hd is not None and p.hn_softmax:
        row_lse = torch.logaddexp(row_lse, torch.logsumexp(r.hd * p.inv_tau, dim=1))
    row_loss = row_lse - r.target_dot * p.inv_tau
    if p.bce:
        z_pos = p.bce_scale * r.target_dot + p.bce_bias
        z_neg = p.bce_scale * r.hd + p.bce_bias
        bce = (F.softplus(-z_pos) + F.softplus(z_neg).sum(1)) / (r.hd.shape[1] + 1)
        row_loss = row_loss + p.bce_weight * bce
    return row_lse, row_loss


def _row_terms(p: _Problem, r: _Rows, row_lse: Tensor, g: Tensor):
    """The per-row factors of the gradient: (gs = g / tau, beta, Gh softmax part, Gh BCE part), None where absent."""
    gs = g * p.inv_tau
    beta = gh_bce = gh_soft = None
    if r.hd is not None and p.hn_softmax:
        gh_soft = torch.exp(r.hd * p.inv_tau - row_lse[:, None]) * gs[:, None]
    if p.bce:  # d softplus(-z)/dz = -sigmoid(-z); d softplus(z)/dz = sigmoid(z)
        coef = g * (p.bce_weight * p.bce_scale / (r.hd.shape[1] + 1))
        beta = -torch.sigmoid(-(p.bce_scale * r.target_dot + p.bce_bias)) * coef
        gh_bce = torch.sigmoid(p.bce_scale * r.hd + p.bce_bias) * coef[:, None]
    return gs, beta, gh_soft, gh_bce


def _finish_row_grads(p: _Problem, r: _Rows, dq_rows: Tensor, terms, dh_rows: Tensor | None, want_dtau: bool):
    """dq_rows holds sum_j G_ij c_j without beta; adds the hard-negative and BCE terms, fills dh_rows.
    -> (dq_rows, dtau part or None)."""
    _, beta, gh_soft, gh_bce = terms
    if gh_soft is not None:
        dq_rows += torch.bmm(gh_soft[:, None, :], r.h).squeeze(1)
    dtau = -(r.q * dq_rows).sum() * p.inv_tau if want_dtau else None
    if beta is not None:
        dq_rows += beta[:, None] * p.c[r.t] + torch.bmm(gh_bce[:, None, :], r.h).squeeze(1)
    gh = gh_bce if gh_soft is None else (gh_soft if gh_bce is None else gh_soft + gh_bce)
    if dh_rows is not None and gh is not None:
        dh_rows.copy_(gh[:, :, None] * r.q[:, None, :])
    return dq_rows, dtau


def _row_grads(p: _Problem, r: _Rows, row_lse: Tensor, g: Tensor, width: int, dc: Tensor | None,
               dh_rows: Tensor | None, want_dtau: bool) -> tuple[Tensor, Tensor | None]:
    """dq of the row chunk (and its dtau part), recomputing every tile's logits; accumulates dc, fills dh_rows.
    With gs_i = g_i / tau:

        G_ij  = gs_i (p_ij - [j = t_i]) + [j = t_i] beta_i,    p_ij = exp(s_ij - lse_i)
        dq_i  = sum_j G_ij c_j + sum_k Gh_ik h_ik,   dc_j = sum_i G_ij q_i,   dh_ik = Gh_ik q_i
        dtau  = -(1/tau) sum_i <q_i, dq_i without the BCE terms>
    -> (dq_rows, dtau part or None)
    """
    terms = _row_terms(p, r, row_lse, g)
    gs, beta = terms[0], terms[1]
    dq_rows = torch.zeros_like(r.q)
    for c0, cb, clb in p.blocks(width):
        G = _tile_logits(p, r, c0, cb, clb).sub_(row_lse[:, None]).exp_().mul_(gs[:, None])
        rows, cols = _target_cells(r.t, c0, G.shape[1])
        G[rows, cols] -= gs[rows]
        dq_rows.addmm_(G, cb)
        if dc is not None:
            if beta is not None:
                G[rows, cols] += beta[rows]
            dc[c0:c0 + cb.shape[0]].addmm_(G.T, r.q)
    return _finish_row_grads(p, r, dq_rows, terms, dh_rows, want_dtau)


def _grad_buffers(p: _Problem, need_dq, need_dc, need_dh):
    dq = torch.zeros_like(p.q) if need_dq else None
    dc = torch.zeros_like(p.c) if need_dc else None
    dh = torch.zeros_like(p.h) if need_dh else None
    return dq, dc, dh


def _row_chunks(p: _Problem):
    """(row chunk, tile width) over every query row."""
    rows, width = tile_shape(p.q.shape[0], p.c.shape[0])
    for sl in row_chunks(p.q.shape[0], rows):
        yield p.rows(sl), width


def info_nce_fwd(q, c, targets, h, tau, ql, cl, label_bias, *, hn_softmax, bce_weight, bce_scale, bce_bias):
    """-> (loss per row (B,) fp32, logsumexp per row (B,) fp32); ignored rows get loss 0."""
    p = _Problem.of(q, c, targets, h, tau, ql, cl, label_bias, hn_softmax=hn_softmax, bce_weight=bce_weight,
                    bce_scale=bce_scale, bce_bias=bce_bias)
    loss = torch.empty(q.shape[0], dtype=stat_dtype(q.dtype), device=q.device)
    lse = torch.empty_like(loss)
    for r, width in _row_chunks(p):
        lse[r.sl], row_loss = _row_lse_and_loss(p, r, _candidate_lse(p, r, width))
        loss[r.sl] = torch.where(p.valid[r.sl], row_loss, torch.zeros_like(row_loss))
    return loss, lse


def info_nce_bwd(grad_rows, q, c, targets, h, tau, ql, cl, label_bias, lse, *, hn_softmax, bce_weight, bce_scale,
                 bce_bias, need_dq, need_dc, need_dh, need_dtau, grad_dtype=None):
    """-> (dq, dc, dh, dtau) in fp32 (dq, dc, dh in grad_dtype when given), recomputing each tile's logits; entries
    not needed are None."""
    p = _Problem.of(q, c, targets, h, tau, ql, cl, label_bias, hn_softmax=hn_softmax, bce_weight=bce_weight,
                    bce_scale=bce_scale, bce_bias=bce_bias)
    g_all = torch.where(p.valid, grad_rows.to(lse.dtype), torch.zeros_like(lse))
    dq, dc, dh = _grad_buffers(p, need_dq, need_dc, need_dh)
    dtau = torch.zeros((), dtype=lse.dtype, device=q.device)
    for r, width in _row_chunks(p):
        dq_rows, dtau_part = _row_grads(p, r, lse[r.sl], g_all[r.sl], width, dc, None if dh is None else dh[r.sl],
                                        need_dtau)
        if dq is not None:
            dq[r.sl] = dq_rows
        if need_dtau:
            dtau += dtau_part
    if grad_dtype is not None:
        dq, dc, dh = (None if x is None else x.to(grad_dtype) for x in (dq, dc, dh))
    return dq, dc, dh, dtau if need_dtau else None


def info_nce_rows(S: Tensor, targets: Tensor, ql: Tensor | None, cl: Tensor | None, label_bias: Tensor | None,
                  tau: Tensor, y: Tensor | None, *, hn_softmax: bool, bce_weight: float, bce_scale: float,
                  bce_bias: float, need_stat: bool) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """The row kernel of the chunked orchestrator (spherekit.ops._info_nce_chunked), in torch: fp32 (or fp64) math
    in place over S, five passes over it (1/tau, max, shift, exp and sum, scale; the label mask and bias add one
    each, the temperature's statistic one more and a copy of S).

    S (R, N): the dots x_ij of R query rows with every candidate, overwritten with
        G'_ij = valid_i (p_ij - [j = t_i] + [j = t_i] beta'_i),
    targets (R,) (IGNORE_INDEX: an ignored row), ql (R,) / cl (N,) labels, label_bias (E, E), tau 0-dim,
    y (R, k) the hard-negative dots or None. Symbols: the orchestrator's docstring.
    -> (loss_i (R,): 0 on ignored rows, NaN on a row whose target or label is out of range; r_i (R,) when
    need_stat; Gh' (R, k) when hard negatives take part, else None).
    """
    R, N = S.shape
    nan = float("nan")
    inv_tau = tau.reciprocal()
    valid = targets != IGNORE_INDEX
    bad = valid & ((targets < 0) | (targets >= N))
    t = torch.where(valid & ~bad, targets, torch.zeros_like(targets))[:, None]
    x_t = S.gather(1, t).squeeze(1)
    x = S.clone() if need_stat else None
    S.mul_(inv_tau)
    if label_bias is not None:
        E = label_bias.shape[0]
        bad = bad | (ql < 0) | (ql >= E)
        bias = label_bias.to(S.dtype)[ql.clamp(0, E - 1)][:, cl.clamp(0, E - 1)]
        S.add_(bias.masked_fill_(((cl < 0) | (cl >= E))[None, :], nan))
        del bias
    if ql is not None:
        S.masked_fill_(ql[:, None] == cl[None, :], float("-inf"))
    S.scatter_(1, t, (x_t * inv_tau)[:, None])  # the target cell: x_it / tau, no bias, never masked
    m = S.amax(1)  # finite: the target cell is (for finite inputs)
    total = S.sub_(m[:, None]).exp_().sum(1)
    s_h = None if y is None else y.to(S.dtype) * inv_tau
    if s_h is not None and hn_softmax:
        total = total + torch.exp(s_h - m[:, None]).sum(1)
    lse = m + torch.log(total)
    loss = lse - x_t * inv_tau
    gh_soft = torch.exp(s_h - lse[:, None]) if s_h is not None and hn_softmax else None
    gh, beta = gh_soft, None
    if y is not None and bce_weight != 0.0:
        k = y.shape[1]
        z_pos, z_neg = bce_scale * x_t + bce_bias, bce_scale * y.to(S.dtype) + bce_bias
        loss = loss + bce_weight * (F.softplus(-z_pos) + F.softplus(z_neg).sum(1)) / (k + 1)
        coef = tau * (bce_weight * bce_scale / (k + 1))
        beta = -torch.sigmoid(-z_pos) * coef
        gh_bce = torch.sigmoid(z_neg) * coef
        gh = gh_bce if gh is None else gh + gh_bce
    row_scale = (torch.exp(m - lse) * valid).masked_fill_(bad, nan)  # p_ij on valid rows, 0 ignored, NaN bad
    S.mul_(row_scale[:, None])
    stat = None
    if need_stat:
        stat = torch.bmm(S[:, None, :], x[:, :, None]).view(R) - x_t
        if gh_soft is not None:
            stat = stat + (gh_soft * y.to(S.dtype)).sum(1)
        stat = stat * valid
    at_target = -1.0 if beta is None else beta - 1.0
    S.scatter_add_(1, t, (at_target * valid)[:, None].to(S.dtype))
    loss = torch.where(valid, loss, torch.zeros_like(loss)).masked_fill(bad, nan)
    if gh is not None:
        gh = (gh * valid[:, None]).masked_fill(bad[:, None], nan)
    return loss, stat, gh
