"""Oracles for the contrastive family: InfoNCE (+ hard-negative BCE), SINCERE / SoftCSE, CircularCSE.

Every function materialises the full logit matrix, computes in ``compute_dtype`` (fp32 by default;
the tests also run it in fp16/fp64 to measure what a same-precision torch computation achieves) and
relies on torch autograd for gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

IGNORE_INDEX = -100


def _reduce(rows: Tensor, valid: Tensor, reduction: str) -> Tensor:
    """mean over valid rows (0 when no row is valid), sum, or the per-row vector."""
    rows = torch.where(valid, rows, torch.zeros_like(rows))
    if reduction == "none":
        return rows
    if reduction == "sum":
        return rows.sum()
    return rows.sum() / valid.sum().clamp_min(1).to(rows.dtype)


def info_nce(
    queries: Tensor,
    candidates: Tensor,
    targets: Tensor | None = None,
    hard_negatives: Tensor | None = None,
    *,
    temperature: float | Tensor = 0.05,
    hard_negative_mode: str = "softmax",
    bce_weight: float = 0.5,
    bce_scale: float = 20.0,
    bce_bias: float = 0.0,
    query_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    label_bias: Tensor | None = None,
    reduction: str = "mean",
    compute_dtype: torch.dtype = torch.float32,
) -> Tensor:
    r"""InfoNCE over in-batch candidates with optional hard negatives, fused with a BCE term.

    Forward, for query i with target t_i (rows with t_i = -100 are ignored):

        x_ij  = <q_i, c_j>,   y_ik = <q_i, h_ik>
        s_ij  = x_ij / tau + [j != t_i] * label_bias[ql_i, cl_j]
        A_i   = { j : cl_j != ql_i or j == t_i }          (all j without labels)
        lse_i = logsumexp( {s_ij : j in A_i}  U  {y_ik / tau : k}  if mode in {softmax, both} )
        loss_i = lse_i - x_it / tau
               + bce_weight / (k+1) * [ softplus(-z_i) + sum_k softplus(z_ik) ]   if mode in {bce, both}
        with z_i = bce_scale * x_it + bce_bias,  z_ik = bce_scale * y_ik + bce_bias.

    The bias applies to negatives only: the target term stays exp(x_it / tau), as in SoftCSE ("Mapping the
    Circumplex of Affect", eq. 7) where weights multiply negative terms. The BCE term exists only when hard
    negatives are given.

    Backward, for upstream g_i on loss_i (g_i = 0 for ignored rows; 1/#valid rows each for "mean"). With
    p_ij = exp(s_ij - lse_i) for j in A_i (0 elsewhere) and ph_ik = exp(y_ik / tau - lse_i) (softmax, both modes;
    0 in bce mode), the gradient with respect to the dots is

        G_ij  = dL/dx_ij  = g_i / tau * (p_ij - [j == t_i])  +  [j == t_i] * beta_i
        Gh_ik = dL/dy_ik  = g_i / tau * ph_ik  +  g_i * bce_weight * bce_scale / (k+1) * sigmoid(z_ik)
        beta_i            = -g_i * bce_weight * bce_scale / (k+1) * sigmoid(-z_i)        (0 without BCE)

    and the inputs' gradients follow from x = q c^T and y_ik = <q_i, h_ik>:

        dq_i  = sum_j G_ij c_j + sum_k Gh_ik h_ik,     dc_j = sum_i G_ij q_i,     dh_ik = Gh_ik q_i
        dtau  = -(1/tau^2) sum_i g_i [ sum_{j in A_i} p_ij x_ij + sum_k ph_ik y_ik - x_it ]

    (label_bias does not depend on tau and receives no gradient). Autograd computes all of it here; the fast
    paths (spherekit.ops.info_nce: kernels/info_nce.py, ops/_info_nce_cpu.py) implement these formulas with these
    symbols, and the op tests hold them to this function.
    """
    q = queries.to(compute_dtype)
    c = candidates.to(compute_dtype)
    batch, n_cand = q.shape[0], c.shape[0]
    if targets is None:
        targets = torch.arange(batch, device=q.device)
    valid = targets != IGNORE_INDEX
    t = torch.where(valid, targets, torch.zeros_like(targets))
    tau = temperature.to(compute_dtype) if isinstance(temperature, Tensor) else temperature

    dots = q @ c.T
    logits = dots / tau
    is_target = F.one_hot(t, n_cand).bool()
    if label_bias is not None:
        bias = label_bias.to(compute_dtype)[query_labels][:, candidate_labels]
        logits = logits + torch.where(is_target, torch.zeros_like(bias), bias)
    if query_labels is not None:
        false_negative = (query_labels[:, None] == candidate_labels[None, :]) & ~is_target
        logits = logits.masked_fill(false_negative, float("-inf"))
    target_dot = dots.gather(1, t[:, None]).squeeze(1)

    parts = [logits]
    hn_dots = None
    if hard_negatives is not None:
        hn_dots = torch.einsum("bd,bkd->bk", q, hard_negatives.to(compute_dtype))
        if hard_negative_mode in ("softmax", "both"):
            parts.append(hn_dots / tau)
    rows = torch.logsumexp(torch.cat(parts, dim=1), dim=1) - target_dot / tau

    if hn_dots is not None and hard_negative_mode in ("bce", "both"):
        z_pos = bce_scale * target_dot + bce_bias
        z_neg = bce_scale * hn_dots + bce_bias
        bce = (F.softplus(-z_pos) + F.softplus(z_neg).sum(dim=1)) / (hn_dots.shape[1] + 1)
        rows = rows + bce_weight * bce
    return _reduce(rows, valid, reduction)


def sincere_bias_shift(labels: Tensor, label_bias: Tensor) -> Tensor:
    r"""Per-anchor shift that renormalises negative weights to mean 1 ("Mapping the Circumplex of Affect"
    (arXiv:2601.06575), eq. 8).

    With w_ik = exp(label_bias[y_i, y_k]) and N_i = {k : y_k != y_i}:
        shift_i = -log( (1/|N_i|) sum_{k in N_i} w_ik ),
    so that exp(label_bias[y_i, y_k] + shift_i) averages to 1 over the anchor's in-batch negatives.
    Anchors without negatives get shift 0. This oracle forms the B x B weights in float64; the op
    (spherekit.ops.sincere.sincere_bias_shift) gets the same from label counts in O(B + E^2).
    """
    lb = label_bias.to(torch.float64)
    negative = labels[:, None] != labels[None, :]
    weights = torch.where(negative, torch.exp(lb[labels][:, labels]), torch.zeros((), dtype=torch.float64))
    n_neg = negative.sum(dim=1).to(torch.float64)
    total = weights.sum(dim=1)
    shift = torch.log(n_neg) - torch.log(total)
    return torch.where((n_neg > 0) & (total > 0), shift, torch.zeros_like(shift)).to(torch.float32)


def sincere(
    embeddings: Tensor,
    labels: Tensor,
    *,
    temperature: float | Tensor = 0.05,
    label_bias: Tensor | None = None,
    compute_dtype: torch.dtype = torch.float32,
) -> Tensor:
    r"""SINCERE ("Mapping the Circumplex of Affect", eq. 5-6); with ``label_bias`` it is SoftCSE ("Mapping the
    Circumplex of Affect", eq. 7-8).

        s_ij = <e_i, e_j> / tau,    P_i = {j != i : y_j = y_i},    N_i = {k : y_k != y_i}
        b_ik = label_bias[y_i, y_k] + shift_i    (shift_i: see sincere_bias_shift; 0 without bias)
        L_i  = logsumexp_{k in N_i} (s_ik + b_ik)
        loss = mean over anchors with |P_i| > 0 of  (1/|P_i|) sum_{j in P_i} softplus(L_i - s_ij)

    since -log( e^{s_ij} / (e^{s_ij} + sum_k w_ik e^{s_ik}) ) = softplus(L_i - s_ij).
    SoftCSE uses label_bias[a, b] = log(1 - cos(theta_a - theta_b)).

    Backward, for upstream g_i on anchor i's loss and c_i = g_i / |P_i| (0 when |P_i| = 0):

        U_i   = sum_{j in P_i} sigmoid(L_i - s_ij)                       (= d(|P_i| loss_i) / dL_i)
        G_ij  = dL/ds_ij = c_i ( [j in N_i] U_i exp(s_ij + b_ij - L_i) - [j in P_i] sigmoid(L_i - s_ij) )
        dE    = (G + G^T) E / tau,        dtau = -(1/tau) sum_ij G_ij s_ij

    An anchor with L_i = -inf (every negative has weight 0) has U_i = 0 and contributes nothing. Autograd
    computes all of it here; the fast paths (kernels/sincere.py, ops/_sincere_cpu.py) implement these formulas
    with these symbols and save (loss_i, L_i, U_i, |P_i|) from the forward for the backward.
    """
    e = embeddings.to(compute_dtype)
    tau = temperature.to(compute_dtype) if isinstance(temperature, Tensor) else temperature
    logits = (e @ e.T) / tau
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(e.shape[0], dtype=torch.bool, device=e.device)
    positive = same & ~eye
    neg_logits = logits
    if label_bias is not None:
        shift = sincere_bias_shift(labels, label_bias).to(compute_dtype)
        neg_logits = logits + label_bias.to(compute_dtype)[labels][:, labels] + shift[:, None]
    neg_logits = neg_logits.masked_fill(same, float("-inf"))
    # An anchor whose negatives all have weight 0 has L_i = -inf (its loss is 0); logsumexp's gradient
    # there is exp(-inf - -inf) = NaN, so such rows go through logsumexp as zeros and are put back to -inf.
    dead = torch.isneginf(neg_logits).all(dim=1)
    neg_lse = torch.logsumexp(neg_logits.masked_fill(dead[:, None], 0.0), dim=1)
    neg_lse = torch.where(dead, torch.full_like(neg_lse, float("-inf")), neg_lse)
    terms = F.softplus(neg_lse[:, None] - logits)
    terms = torch.where(positive, terms, torch.zeros_like(terms))
    n_pos = positive.sum(dim=1)
    has_pos = n_pos > 0
    per_anchor = terms.sum(dim=1) / n_pos.clamp_min(1).to(terms.dtype)
    return per_anchor[has_pos].mean()


def circular_cse(
    embeddings: Tensor,
    labels: Tensor,
    label_angles: Tensor,
    *,
    margin: float = 0.0,
    compute_dtype: torch.dtype = torch.float32,
) -> Tensor:
    r"""CircularCSE ("Mapping the Circumplex of Affect", eq. 9): regress pairwise dot products to the cosine of
    label-angle gaps.

        x_ij = <e_i, e_j>,   c_ij = cos(theta_{y_i} - theta_{y_j})
        l_ij = max(0, |x_ij - c_ij| - m)^2   if y_i = y_j   (then c_ij = 1)
             = (x_ij - c_ij)^2               otherwise
        loss = 1 / (B (B - 1)) * sum_{i != j} l_ij

    Backward: dl_ij/dx_ij = 2 r_ij with the residual r_ij = sign(x_ij - c_ij) max(0, |x_ij - c_ij| - m) (same
    label) or x_ij - c_ij (r_ii = 0). With the per-row sums rows_i = sum_{j != i} l_ij and upstream w_i on them
    (w_i = 1 / (B (B - 1)) for the mean), x and r being symmetric:

        dE_i = sum_{j != i} 2 r_ij (w_i + w_j) e_j

    The fast paths (kernels/circular_cse.py, ops/_circular_cse_cpu.py) compute c_ij = cos_i cos_j + sin_i sin_j
    from per-row cos / sin and use these symbols.
    """
    e = embeddings.to(compute_dtype)
    theta = label_angles.to(compute_dtype)[labels]
    target = torch.cos(theta[:, None] - theta[None, :])
    diff = e @ e.T - target
    same = labels[:, None] == labels[None, :]
    loss = torch.where(same, torch.clamp(diff.abs() - margin, min=0.0) ** 2, diff**2)
    eye = torch.eye(e.shape[0], dtype=torch.bool, device=e.device)
    batch = e.shape[0]
    return loss.masked_fill(eye, 0.0).sum() / (batch * (batch - 1))
