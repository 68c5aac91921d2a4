"""maxsim: F1 / late-interaction MaxSim ("Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization" (arXiv:2604.16351) eq. 6) over token embeddings with padding masks, without storing the token map
M: the forward keeps per-token argmax indices, the backward gathers / scatters through them. The math is in
spherekit.reference.sim_map.maxsim.

The public function validates, normalises the tokens (autograd through spherekit's Norm), brings the
three candidate layouts to one (d4, d_mask4, shared) layout, then calls two torch.library custom ops
(spherekit::maxsim_fwd / spherekit::maxsim_bwd) so torch.compile traces through them.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend
from ..reference import sim_map as ref
from . import _maxsim_cpu
from . import checks as C
from . import tokens as T

SUPPORTED = ("triton", "cpu", "reference")


def _impl(backend: str):
    if backend == "triton":
        return _backend.triton_kernels("maxsim")
    return _maxsim_cpu


@torch.library.custom_op("spherekit::maxsim_fwd", mutates_args=())
def _maxsim_fwd(q: Tensor, q_mask: Tensor, d4: Tensor, d_mask4: Tensor, shared: bool, backend: str
                ) -> tuple[Tensor, Tensor]:
    """-> scores (Bq, K) fp32 (fp64 for fp64 tokens), argmax (Bq, K, m) int32 (-1 at padding query tokens)."""
    scores, argmax = _impl(backend).maxsim_fwd(q, q_mask, d4, d_mask4, shared=shared)
    return scores.to(T.score_dtype(q)), argmax.to(torch.int32)


@_maxsim_fwd.register_fake
def _(q, q_mask, d4, d_mask4, shared, backend):
    Bq, m = q.shape[:2]
    K = d4.shape[1]
    return q.new_empty(Bq, K, dtype=T.score_dtype(q)), q.new_empty(Bq, K, m, dtype=torch.int32)


@torch.library.custom_op("spherekit::maxsim_bwd", mutates_args=())
def _maxsim_bwd(grad: Tensor, q: Tensor, q_mask: Tensor, d4: Tensor, d_mask4: Tensor, argmax: Tensor, shared: bool,
                need_dq: bool, need_dd: bool, backend: str) -> tuple[Tensor, Tensor]:
    gq, gd = _impl(backend).maxsim_bwd(grad, q, q_mask, d4, d_mask4, argmax, shared=shared, need_dq=need_dq,
                                       need_dd=need_dd)
    # custom ops return tensors, never None: a gradient that was not asked for is an empty tensor
    return (gq.to(q.dtype) if need_dq else q.new_empty(0),
            gd.to(d4.dtype) if need_dd else q.new_empty(0))


@_maxsim_bwd.register_fake
def _(grad, q, q_mask, d4, d_mask4, argmax, shared, need_dq, need_dd, backend):
    return (torch.empty_like(q) if need_dq else q.new_empty(0),
            torch.empty_like(d4) if need_dd else q.new_empty(0))


def _setup_context(ctx, inputs, output):
    q, q_mask, d4, d_mask4, shared, backend = inputs
    ctx.save_for_backward(q, q_mask, d4, d_mask4, output[1])
    ctx.shared, ctx.backend = shared, backend


def _backward(ctx, grad, _grad_argmax):
    q, q_mask, d4, d_mask4, argmax = ctx.saved_tensors
    need_dq, need_dd = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
    gq, gd = torch.ops.spherekit.maxsim_bwd(grad.contiguous(), q, q_mask, d4, d_mask4, argmax, ctx.shared,
                                            need_dq, need_dd, ctx.backend)
    return gq if need_dq else None, None, gd if need_dd else None, None, None, None


torch.library.register_autograd("spherekit::maxsim_fwd", _backward, setup_context=_setup_context)


def _validate(q, q_mask, d, d_mask, pairwise):
    C.check_tokens("q", q, (3,))
    C.check_tokens("d", d, (3, 4), like=q)
    C.check_flag("pairwise", pairwise)
    Bq = q.shape[0]
    if d.dim() == 4:
        if pairwise:
            raise ValueError("pairwise=True needs d of shape (B, n, h); a 4-D d (Bq, K, n, h) already pairs each "
                             "query with its own K candidates")
        if d.shape[0] != Bq:
            raise ValueError(f"d.shape[0] must equal the number of queries Bq ({Bq}) for d of shape (Bq, K, n, h), "
                             f"got shape {tuple(d.shape)}")
    elif pairwise and d.shape[0] != Bq:
        raise ValueError(f"pairwise=True needs as many documents as queries: Bq={Bq}, Bd={d.shape[0]}")
    q_mask = C.check_mask("q_mask", q_mask, tuple(q.shape[:2]), q.device, what="query", like_name="q", zero_one=True)
    d_mask = C.check_mask("d_mask", d_mask, tuple(d.shape[:-1]), q.device, what="document", like_name="q", zero_one=True)
    C.check_finite(q=q, d=d)
    return q_mask, d_mask


def to_layout(d: Tensor, d_mask: Tensor, pairwise: bool) -> tuple[Tensor, Tensor, bool]:
    """The unified candidate layout (d4 (G, K, n, h), d_mask4 (G, K, n), shared)."""
    if d.dim() == 4:
        return d, d_mask, False
    if pairwise:
        return d[:, None], d_mask[:, None], False
    return d[None], d_mask[None], True


REDUCTIONS = ("mean", "sum")


def maxsim(q: Tensor, q_mask: Tensor | None, d: Tensor, d_mask: Tensor | None, *, pairwise: bool = False,
           normalize: bool = True, reduction: str = "mean", backend: str = "auto") -> Tensor:
    r"""MaxSim (late interaction): for a query q and a document d,

        reduction="mean":  score = (1/|Q|) sum_{i in Q} max_{j in D} <qn_i, dn_j>   (F1 of "Training for
                           Compositional Sensitivity Reduces Dense Retrieval Generalization", eq. 6: its verifiers)
        reduction="sum":   score = sum_{i in Q} max_{j in D} <qn_i, dn_j>            (ColBERT, PyLate: scores and
                           temperatures ported from them expect the sum)

    qn = Norm(q), dn = Norm(d) if normalize; Q, D the valid (mask True) tokens; padding tokens never contribute
    (PyLate multiplies padded document entries by 0 instead: the same scores wherever a query token's best valid
    similarity is >= 0).

    Args:
        q: (Bq, m, h) query tokens, float32 / float16 / bfloat16 (float64 on the cpu/reference backends).
        q_mask: (Bq, m) bool, True = valid token (None: all valid). Every query needs a valid token.
        d: documents, one of
            (Bd, n, h)      all pairs -> scores (Bq, Bd);  with pairwise=True (Bq == Bd) -> (B,)
            (Bq, K, n, h)   each query against its own K candidates -> (Bq, K)
        d_mask: bool, d.shape[:-1] (None: all valid). Every document needs a valid token.
        normalize: L2-normalise the tokens first (Norm(x) = x / max(||x||, 1e-6), gradient included).
        reduction: "mean" over the valid query tokens (the default) or "sum" (ColBERT / PyLate).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns fp32 scores (fp64 for fp64 tokens). Gradients flow to q and d; the backward uses the stored
    argmax indices (Bq, K, m), never M: it reaches exactly one maximal document token per valid query token.
    """
    q_mask, d_mask = _validate(q, q_mask, d, d_mask, pairwise)
    C.check_flag("normalize", normalize)
    C.check_choice("reduction", reduction, REDUCTIONS)
    chosen = _backend.resolve("maxsim", backend, q.device, SUPPORTED)
    C.check_triton_dtype(chosen, q=q)
    if chosen == "reference":
        scores = ref.maxsim(q, q_mask, d, d_mask, pairwise=pairwise, normalize=normalize,
                            compute_dtype=T.score_dtype(q))
    else:
        if q.dtype == torch.float64:
            C.refuse_float64(chosen, "q", "tokens")
        if normalize:
            q, d = T.normalize_tokens(q), T.normalize_tokens(d)
        d4, d_mask4, shared = to_layout(d, d_mask, pairwise)
        scores, _ = torch.ops.spherekit.maxsim_fwd(q.contiguous(), q_mask.contiguous(), d4.contiguous(),
                                                   d_mask4.contiguous(), shared, chosen)
        scores = scores.view(-1) if pairwise else scores
    return to_sum(scores, q_mask) if reduction == "sum" else scores


def to_sum(mean_scores: Tensor, q_mask: Tensor) -> Tensor:
    """Mean-reduced MaxSim scores (Bq, ...) times each query's number of valid tokens: the sum reduction."""
    counts = q_mask.sum(-1).to(mean_scores.dtype)
    return mean_scores * counts.view(-1, *([1] * (mean_scores.dim() - 1)))
