"""global_avg_sim: F0, the mean of the token map ("Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization" (arXiv:2604.16351) eq. 5), computed without M.

    (1/(|Q| |D|)) sum_{i in Q} sum_{j in D} <qn_i, dn_j>  =  <sum_{i in Q} qn_i, sum_{j in D} dn_j> / (|Q| |D|)

so the cost is O(B (m + n) h) instead of O(B m n h). Plain torch (masked sums and a dot product: torch autograd
and torch.compile handle it directly); the materialising oracle is spherekit.reference.sim_map.global_avg_sim.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..reference import sim_map as ref
from . import checks as C
from . import tokens as T

SUPPORTED = ("cpu", "reference")


@T.autocast_tokens
def global_avg_sim(q: Tensor, d: Tensor, *positional_masks, q_mask: Tensor | None = None,
                   d_mask: Tensor | None = None, normalize: bool = True, backend: str = "auto") -> Tensor:
    r"""F0 of "Compositional Sensitivity", paired (query b with document b): the mean of M_ij = <qn_i, dn_j> over
    the valid (i, j), computed as <sum_{i in Q} qn_i, sum_{j in D} dn_j> / (|Q| |D|), never forming M.

    Args:
        q: (B, m, h), d: (B, n, h) tokens, float32 / float16 / bfloat16 / float64.
        q_mask, d_mask: keywords, (B, m) / (B, n) bool (or 0/1), True = valid token; None: all valid. (Positional
            before 0.1.0: global_avg_sim(q, q_mask, d, d_mask) raises a TypeError naming this form.)
        normalize: L2-normalise the tokens first (Norm(x) = x / max(||x||, 1e-6), gradient included; default True:
            F0 is the mean of the cosine map).
        backend: "auto" / "cpu" (torch, on any device) or "reference" (the materialising oracle).

    Returns (B,) fp32 (fp64 for fp64 tokens; under torch.autocast float32 / float16 / bfloat16 tokens are cast to
    its dtype first, the sums still run in fp32). Gradients flow to q and d. Without spherekit.checks("full") (which
    raises instead): a pair whose query or document has no valid token scores 0, and a NaN in a valid token gives
    NaN.
    """
    T.reject_positional_masks("global_avg_sim", positional_masks, d)
    q_mask, d_mask = C.check_pair(q, q_mask, d, d_mask)
    C.check_flag("normalize", normalize)
    dt = T.score_dtype(q)
    chosen = T.resolve_backend("global_avg_sim", backend, q, SUPPORTED)
    if chosen == "reference":
        return ref.global_avg_sim(q, q_mask, d, d_mask, normalize=normalize, compute_dtype=dt)
    if normalize:
        q, d = T.normalize_tokens(q), T.normalize_tokens(d)
    qm, dm = q_mask.to(dt), d_mask.to(dt)
    q_sum = torch.einsum("bih,bi->bh", q.to(dt), qm)
    d_sum = torch.einsum("bjh,bj->bh", d.to(dt), dm)
    count = qm.sum(-1) * dm.sum(-1)
    total = (q_sum * d_sum).sum(-1)
    return torch.where(count > 0, total / count.clamp_min(1.0), torch.zeros_like(total))
