"""soft_align: F2, soft alignment with a positional bias ("Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351) eqs. 7 and 10), paired, with learnable lam and tau. The math is in
spherekit.reference.sim_map.soft_align.

The public function validates, normalises the tokens (autograd through the token ops' Norm), then calls two
torch.library custom ops (spherekit::soft_align_fwd / spherekit::soft_align_bwd; an autograd.Function with
setup_context around them when a gradient is needed, for torch.func); the forward keeps only
per-token statistics (lse_i, s_i), the backward recomputes M chunk by chunk (cpu) or tile by tile (triton).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend
from ..reference import sim_map as ref
from . import checks as C
from . import tokens as T
from . import _soft_align_cpu

SUPPORTED = ("triton", "cpu", "reference")


@torch.library.custom_op("spherekit::soft_align_fwd", mutates_args=())
def _soft_align_fwd(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam: Tensor, tau: Tensor, backend: str
                    ) -> tuple[Tensor, Tensor, Tensor]:
    """-> score (B,), lse (B, m), s (B, m): fp32 (fp64 for fp64 tokens)."""
    if backend == "triton":
        out = _backend.triton_kernels("soft_align").soft_align_fwd(q, q_mask, d, d_mask, lam, tau)
    else:
        out = _soft_align_cpu.soft_align_fwd(q, q_mask, d, d_mask, lam, tau)
    return tuple(x.to(T.score_dtype(q)) for x in out)


@_soft_align_fwd.register_fake
def _(q, q_mask, d, d_mask, lam, tau, backend):
    B, m = q.shape[:2]
    dt = T.score_dtype(q)
    return q.new_empty(B, dtype=dt), q.new_empty(B, m, dtype=dt), q.new_empty(B, m, dtype=dt)


@torch.library.custom_op("spherekit::soft_align_bwd", mutates_args=())
def _soft_align_bwd(grad: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam: Tensor, tau: Tensor,
                    lse: Tensor, rows: Tensor, need_dq: bool, need_dd: bool, backend: str
                    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """-> grad_q, grad_d (empty where not needed), grad_lam and grad_tau (0-d, dtypes of lam / tau)."""
    if backend == "triton":
        gq, gd, glam, gtau = _backend.triton_kernels("soft_align").soft_align_bwd(
            grad.float(), q, q_mask, d, d_mask, lam, tau, lse, rows, need_dq=need_dq, need_dd=need_dd)
    else:
        gq, gd, glam, gtau = _soft_align_cpu.soft_align_bwd(grad, q, q_mask, d, d_mask, lam, tau, lse, rows,
                                                            need_dq=need_dq, need_dd=need_dd)
    return (gq.to(q.dtype) if need_dq else q.new_empty(0), gd.to(d.dtype) if need_dd else q.new_empty(0),
            glam.sum().to(lam.dtype), gtau.sum().to(tau.dtype))


@_soft_align_bwd.register_fake
def _(grad, q, q_mask, d, d_mask, lam, tau, lse, rows, need_dq, need_dd, backend):
    return (torch.empty_like(q) if need_dq else q.new_empty(0), torch.empty_like(d) if need_dd else q.new_empty(0),
            torch.empty_like(lam), torch.empty_like(tau))


def _setup_context(ctx, inputs, output):
    q, q_mask, d, d_mask, lam, tau, backend = inputs
    _, lse, rows = output
    ctx.save_for_backward(q, q_mask, d, d_mask, lam, tau, lse, rows)
    ctx.mark_non_differentiable(lse, rows)
    ctx.backend = backend


def _backward(ctx, grad, _grad_lse, _grad_rows):
    q, q_mask, d, d_mask, lam, tau, lse, rows = ctx.saved_tensors
    need = ctx.needs_input_grad
    with torch.no_grad():  # a first-order backward (the custom op has no autograd of its own)
        gq, gd, glam, gtau = torch.ops.spherekit.soft_align_bwd(grad.contiguous(), q, q_mask, d, d_mask, lam, tau,
                                                                lse, rows, need[0], need[2], ctx.backend)
    return (gq if need[0] else None, None, gd if need[2] else None, None, glam if need[4] else None,
            gtau if need[5] else None, None)


torch.library.register_autograd("spherekit::soft_align_fwd", _backward, setup_context=_setup_context)
_SoftAlign = T.differentiable(torch.ops.spherekit.soft_align_fwd, _setup_context, _backward, "_SoftAlign")


@T.autocast_tokens
def soft_align(q: Tensor, d: Tensor, *positional_masks, q_mask: Tensor | None = None, d_mask: Tensor | None = None,
               lam: float | Tensor = 0.1, tau: float | Tensor = 0.1, normalize: bool = True, backend: str = "auto"
               ) -> Tensor:
    r"""Soft alignment with a positional bias (F2 of "Compositional Sensitivity"), paired: query b against document b.

        M_ij  = <qn_i, dn_j>,   z_ij = (M_ij - lam |i - j|) / tau,   A_ij = softmax over valid j of z_ij
        score = (1/|Q|) sum_{i in Q} sum_{j in D} A_ij M_ij

    Args:
        q: (B, m, h) query tokens, float32 / float16 / bfloat16 (float64 on the cpu/reference backends: "auto"
            picks cpu for it).
        d: (B, n, h) document tokens, same dtype. Positions i, j are the indices in the padded tensors (right
            padding keeps them the token positions).
        q_mask, d_mask: keywords, (B, m) / (B, n) bool (or 0/1), True = valid token; None: all valid. (Positional
            before 0.1.0, like maxsim's: soft_align(q, q_mask, d, d_mask) raises a TypeError naming this form.)
        lam: positional penalty per unit of |i - j| (the paper code's default 0.1): a finite float or a
            0-d tensor; with requires_grad it receives its gradient (F2 can learn it).
        tau: softmax temperature (default 0.1), finite and >= 1e-4 like every temperature of spherekit.ops;
            float or 0-d tensor, learnable likewise (a tensor's value is checked on the device: NaN scores for a
            bad one, unless spherekit.checks("full"), which raises).
        normalize: L2-normalise the tokens first (Norm(x) = x / max(||x||, 1e-6), gradient included; default True:
            F2 is defined on the cosine map, and unlike maxsim it has no ecosystem default to follow).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns (B,) fp32 (fp64 for fp64 tokens), also under torch.autocast (which casts float32 / float16 / bfloat16
    tokens to its dtype first). Gradients flow to q, d, lam and tau. Without spherekit.checks("full") (which raises
    instead): a query without valid tokens scores 0, a query token whose document has no valid token contributes 0
    (and no gradient), and a NaN in a valid token gives a NaN score.
    """
    T.reject_positional_masks("soft_align", positional_masks, d)
    q_mask, d_mask = C.check_pair(q, q_mask, d, d_mask)
    C.check_flag("normalize", normalize)
    dt = T.score_dtype(q)
    lam_t = C.as_scalar("lam", lam, q.device, dt, temperature=False)
    tau_t = C.as_scalar("tau", tau, q.device, dt, temperature=True)
    chosen = T.resolve_backend("soft_align", backend, q, SUPPORTED)
    C.check_triton_dtype(chosen, q=q)
    if chosen == "reference":
        return ref.soft_align(q, q_mask, d, d_mask, lam=lam_t, tau=tau_t, normalize=normalize, compute_dtype=dt)
    if normalize:
        q, d = T.normalize_tokens(q), T.normalize_tokens(d)
    args = (q.contiguous(), q_mask.contiguous(), d.contiguous(), d_mask.contiguous(), lam_t, tau_t, chosen)
    if T.needs_grad(q, d, lam_t, tau_t):
        return _SoftAlign.apply(*args)[0]
    return torch.ops.spherekit.soft_align_fwd(*args)[0]
