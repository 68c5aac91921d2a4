"""maxsim: late-interaction MaxSim over token embeddings with padding masks (ColBERT / PyLate's score by default,
and F1 of "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" (arXiv:2604.16351) eq. 6
with reduction="mean", normalize=True), without storing the token map M: with a gradient the forward keeps per-token
argmax indices and the backward gathers / scatters through them. The math is in spherekit.reference.sim_map.maxsim.

The public function validates host metadata only (the value scans run in spherekit.checks("full")), casts the
tokens under autocast, normalises them when asked (spherekit.ops.tokens.normalize_tokens), brings the three
candidate layouts to one (d4, d_mask4, shared) layout, then calls two torch.library custom ops
(spherekit::maxsim_fwd / spherekit::maxsim_bwd), through an autograd.Function with setup_context when a gradient is
needed, so torch.compile, torch.func and fake tensors trace through them. Without a gradient (no_grad, inference_mode,
or inputs that do not require one) and outside torch.compile, it calls the backend directly (no custom-op dispatch,
no argmax computed); absent masks reach the kernels as None (nothing allocated or read).
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
REDUCTIONS = ("sum", "mean")


def _impl(backend: str):
    if backend == "triton":
        return _backend.triton_kernels("maxsim")
    return _maxsim_cpu


@torch.library.custom_op("spherekit::maxsim_fwd", mutates_args=())
def _maxsim_fwd(q: Tensor, q_mask: Tensor | None, d4: Tensor, d_mask4: Tensor | None, shared: bool, mean: bool,
                store_argmax: bool, backend: str) -> tuple[Tensor, Tensor]:
    """-> scores (Bq, K) fp32 (fp64 for fp64 tokens), argmax (Bq, K, m) int32 (-1 at padding query tokens and empty
    documents), or an empty (0,) argmax when not store_argmax."""
    scores, argmax = _impl(backend).maxsim_fwd(q, q_mask, d4, d_mask4, shared=shared, mean=mean,
                                               store_argmax=store_argmax)
    argmax = argmax.to(torch.int32) if store_argmax else q.new_empty(0, dtype=torch.int32)
    return scores.to(T.score_dtype(q)), argmax


@_maxsim_fwd.register_fake
def _(q, q_mask, d4, d_mask4, shared, mean, store_argmax, backend):
    Bq, m = q.shape[:2]
    K = d4.shape[1]
    argmax = q.new_empty((Bq, K, m) if store_argmax else (0,), dtype=torch.int32)
    return q.new_empty(Bq, K, dtype=T.score_dtype(q)), argmax


@torch.library.custom_op("spherekit::maxsim_bwd", mutates_args=())
def _maxsim_bwd(grad: Tensor, q: Tensor, q_mask: Tensor | None, d4: Tensor, d_mask4: Tensor | None, argmax: Tensor,
                shared: bool, mean: bool, need_dq: bool, need_dd: bool, backend: str) -> tuple[Tensor, Tensor]:
    gq, gd = _impl(backend).maxsim_bwd(grad, q, q_mask, d4, d_mask4, argmax, shared=shared, mean=mean,
                                       need_dq=need_dq, need_dd=need_dd)
    # custom ops return tensors, never None: a gradient that was not asked for is an empty tensor
    return (gq.to(q.dtype) if need_dq else q.new_empty(0),
            gd.to(d4.dtype) if need_dd else q.new_empty(0))


@_maxsim_bwd.register_fake
def _(grad, q, q_mask, d4, d_mask4, argmax, shared, mean, need_dq, need_dd, backend):
    return (torch.empty_like(q) if need_dq else q.new_empty(0),
            torch.empty_like(d4) if need_dd else q.new_empty(0))


def _setup_context(ctx, inputs, output):
    q, q_mask, d4, d_mask4, shared, mean, store_argmax, backend = inputs
    ctx.save_for_backward(q, q_mask, d4, d_mask4, output[1])
    ctx.mark_non_differentiable(output[1])
    ctx.options = (shared, mean, store_argmax, backend)


def _backward(ctx, grad, _grad_argmax):
    q, q_mask, d4, d_mask4, argmax = ctx.saved_tensors
    shared, mean, store_argmax, backend = ctx.options
    if not store_argmax:
        raise RuntimeError("maxsim: the forward ran without a gradient (no argmax stored), so it cannot be "
                           "differentiated; call it with inputs that require grad, outside no_grad")
    need_dq, need_dd = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
    with torch.no_grad():  # a first-order backward (the custom op has no autograd of its own)
        gq, gd = torch.ops.spherekit.maxsim_bwd(grad.contiguous(), q, q_mask, d4, d_mask4, argmax, shared, mean,
                                                need_dq, need_dd, backend)
    return gq if need_dq else None, None, gd if need_dd else None, None, None, None, None, None


torch.library.register_autograd("spherekit::maxsim_fwd", _backward, setup_context=_setup_context)
_MaxSim = T.differentiable(torch.ops.spherekit.maxsim_fwd, _setup_context, _backward, "_MaxSim")


def _validate(q, d, q_mask, d_mask, pairwise):
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
    q_mask = T.check_token_mask("q_mask", q_mask, tuple(q.shape[:2]), q.device, "query")
    d_mask = T.check_token_mask("d_mask", d_mask, tuple(d.shape[:-1]), q.device, "document")
    C.check_finite(q=q, d=d)
    return q_mask, d_mask


def to_layout(d: Tensor, d_mask: Tensor | None, pairwise: bool) -> tuple[Tensor, Tensor | None, bool]:
    """The unified candidate layout (d4 (G, K, n, h), d_mask4 (G, K, n) or None, shared)."""
    def lift(x, index):
        return None if x is None else x[index]

    if d.dim() == 4:
        return d, d_mask, False
    if pairwise:
        return d[:, None], lift(d_mask, (slice(None), None)), False
    return d[None], lift(d_mask, None), True


def _contiguous(x: Tensor | None) -> Tensor | None:
    return None if x is None else x.contiguous()


@T.autocast_tokens
def maxsim(q: Tensor, d: Tensor, *positional_masks, q_mask: Tensor | None = None, d_mask: Tensor | None = None,
           pairwise: bool = False, normalize: bool = False, reduction: str = "sum", backend: str = "auto") -> Tensor:
    r"""MaxSim (late interaction): for a query q and a document d, with Q, D their valid (mask True) tokens,

        reduction="sum" (default):  score = sum_{i in Q} max_{j in D} <q_i, d_j>
                                    (ColBERT, PyLate: their defaults, raw token similarities)
        reduction="mean":           score = (1/|Q|) sum_{i in Q} max_{j in D} <q_i, d_j>

    and with normalize=True the tokens are Norm(x) = x / max(||x||, 1e-6) first (gradient included), so <.,.> is a
    cosine: F1 of "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" is
    maxsim(q, d, q_mask=..., d_mask=..., normalize=True, reduction="mean"). Padding tokens never contribute (PyLate
    multiplies padded document entries by 0 instead: the same scores wherever a query token's best valid similarity
    is >= 0, e.g. for unit-norm tokens of a ColBERT model).

    Args:
        q: (Bq, m, h) query tokens, float32 / float16 / bfloat16 (float64 on the cpu/reference backends: "auto"
            picks cpu for it).
        d: documents, one of
            (Bd, n, h)      all pairs -> scores (Bq, Bd);  with pairwise=True (Bq == Bd) -> (B,)
            (Bq, K, n, h)   each query against its own K candidates -> (Bq, K)
        q_mask: keyword, (Bq, m) bool (or a 0/1 attention mask), True = valid token; None: all valid.
        d_mask: keyword, bool of d.shape[:-1]; None: all valid. (The masks were positional before 0.1.0:
            maxsim(q, q_mask, d, d_mask) raises a TypeError naming this form.)
        normalize: L2-normalise the tokens first (default False, as ColBERT / PyLate score their model's output).
        reduction: "sum" over the valid query tokens (default) or "mean".
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns fp32 scores (fp64 for fp64 tokens), also under torch.autocast, which casts float32 / float16 / bfloat16
    tokens to its dtype first (as it does for matmuls). Gradients flow to q and d; the backward uses the stored
    argmax indices (Bq, K, m), never M: it reaches exactly one maximal document token per valid query token.

    Edge cases (no value is read to check them unless spherekit.checks("full"), which raises instead): a query
    without valid tokens scores 0; a document without valid tokens contributes 0 per query token (the max over an
    empty set is taken as 0, as PyLate's zeroed padding gives), so it scores 0, and neither gets a gradient. A NaN
    (or an Inf that makes a similarity NaN) in a valid token gives a NaN score, never a finite wrong one.
    """
    T.reject_positional_masks("maxsim", positional_masks, d)
    q_mask, d_mask = _validate(q, d, q_mask, d_mask, pairwise)
    C.check_flag("normalize", normalize)
    C.check_choice("reduction", reduction, REDUCTIONS)
    chosen = T.resolve_backend("maxsim", backend, q, SUPPORTED)
    C.check_triton_dtype(chosen, q=q)
    mean = reduction == "mean"
    if chosen == "reference":
        return ref.maxsim(q, T.all_valid(q_mask, q), d, T.all_valid(d_mask, d), pairwise=pairwise,
                          normalize=normalize, reduction=reduction, compute_dtype=T.score_dtype(q))
    if normalize:
        q, d = T.normalize_tokens(q), T.normalize_tokens(d)
    d4, d_mask4, shared = to_layout(d, d_mask, pairwise)
    args = (q.contiguous(), _contiguous(q_mask), d4.contiguous(), _contiguous(d_mask4))
    if T.needs_grad(q, d):
        scores = _MaxSim.apply(*args, shared, mean, True, chosen)[0]
    elif T.direct_call(q, d):  # inference: no custom-op dispatch, no argmax
        scores = _impl(chosen).maxsim_fwd(*args, shared=shared, mean=mean, store_argmax=False)[0]
        scores = scores.to(T.score_dtype(q))
    else:
        scores = torch.ops.spherekit.maxsim_fwd(*args, shared, mean, False, chosen)[0]
    return scores.view(-1) if pairwise else scores
