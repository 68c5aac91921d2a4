"""sim_map: the token-similarity map phi(M) that the learned verifiers F3 (CNN) and F4 (Transformer over
patches) of "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" (arXiv:2604.16351)
consume, optionally with the row-max / column-max channels of the paper's code and cut into a patch sequence,
written in one pass (no (B, m, n) intermediate beyond a chunk on cpu). The math is in
spherekit.reference.sim_map.sim_map.

The public function validates, normalises the tokens (autograd through the token ops' Norm), then calls
two torch.library custom ops (spherekit::sim_map_fwd / spherekit::sim_map_bwd; an autograd.Function with
setup_context around them when a gradient is needed, for torch.func); the backward recomputes
M from the tokens, so only the inputs are saved (plus, on triton, the row/column maxima and their argmax
when those channels are asked for: (B, m) and (B, n) each).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend
from ..reference import sim_map as ref
from . import _sim_map_cpu
from . import checks as C
from . import tokens as T

SUPPORTED = ("triton", "cpu", "reference")
CHANNELS = ref.CHANNELS


def _out_shape(q: Tensor, d: Tensor, patch: int, n_channels: int, all_pairs: bool) -> tuple[int, ...]:
    lead = (q.shape[0], d.shape[0]) if all_pairs else (q.shape[0],)
    m, n = q.shape[1], d.shape[1]
    if patch == 0:
        return (*lead, m, n, n_channels)
    gm, gn = _sim_map_cpu.grid(m, n, patch)
    return (*lead, gm * gn, patch * patch * n_channels)


def _impl(backend: str):
    if backend == "triton":
        return _backend.triton_kernels("sim_map")
    return _sim_map_cpu


@torch.library.custom_op("spherekit::sim_map_fwd", mutates_args=())
def _sim_map_fwd(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, patch: int, channels: str, clip: bool,
                 out_dtype: torch.dtype, all_pairs: bool, backend: str
                 ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """-> (out, rowmax, rowarg, colmax, colarg). patch = 0: out is the (B, m, n, C) map, patch = p the patches
    (B, ceil(m/p) ceil(n/p), p p C), with (Bq, Bd) leading instead of B for all_pairs; channels comma-joined.
    The statistics are what the triton backward reuses, per pair (P = B, or Bq Bd for all_pairs): rowmax /
    rowarg (P, m) fp32 / int32 when "rowmax" is asked, colmax / colarg (P, n) for "colmax", else empty (the cpu
    backend returns them empty and recomputes)."""
    names, p = tuple(channels.split(",")), (patch or None)
    out, *stats = _impl(backend).sim_map_fwd(q, q_mask, d, d_mask, patch=p, channels=names, clip=clip,
                                             out_dtype=out_dtype, all_pairs=all_pairs)
    out = out.view(_out_shape(q, d, patch, len(names), all_pairs))
    # fresh empties: the launcher may hand back one shared empty tensor, and custom-op outputs must not alias
    return (out.to(out_dtype), *(x if x.numel() else q.new_empty(0, dtype=x.dtype) for x in stats))


@_sim_map_fwd.register_fake
def _(q, q_mask, d, d_mask, patch, channels, clip, out_dtype, all_pairs, backend):
    names = channels.split(",")
    out = q.new_empty(_out_shape(q, d, patch, len(names), all_pairs), dtype=out_dtype)
    pairs = q.shape[0] * d.shape[0] if all_pairs else q.shape[0]
    stats = []
    for name, length in (("rowmax", q.shape[1]), ("colmax", d.shape[1])):
        shape = (pairs, length) if backend == "triton" and name in names else (0,)
        stats += [q.new_empty(shape, dtype=torch.float32), q.new_empty(shape, dtype=torch.int32)]
    return (out, *stats)


@torch.library.custom_op("spherekit::sim_map_bwd", mutates_args=())
def _sim_map_bwd(grad_out: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, rowmax: Tensor,
                 rowarg: Tensor, colmax: Tensor, colarg: Tensor, patch: int, channels: str, clip: bool, need_dq: bool,
                 need_dd: bool, all_pairs: bool, backend: str) -> tuple[Tensor, Tensor]:
    names, p = tuple(channels.split(",")), (patch or None)
    if all_pairs:  # the backends read the (Bq, Bd, ...) gradient as (Bq Bd, ...) pairs
        grad_out = grad_out.reshape(-1, *grad_out.shape[2:])
    gq, gd = _impl(backend).sim_map_bwd(grad_out, q, q_mask, d, d_mask, patch=p, channels=names, clip=clip,
                                        stats=(rowmax, rowarg, colmax, colarg), need_dq=need_dq, need_dd=need_dd,
                                        all_pairs=all_pairs)
    return (gq.to(q.dtype) if need_dq else q.new_empty(0), gd.to(d.dtype) if need_dd else q.new_empty(0))


@_sim_map_bwd.register_fake
def _(grad_out, q, q_mask, d, d_mask, rowmax, rowarg, colmax, colarg, patch, channels, clip, need_dq, need_dd,
      all_pairs, backend):
    return (torch.empty_like(q) if need_dq else q.new_empty(0), torch.empty_like(d) if need_dd else q.new_empty(0))


def _setup_context(ctx, inputs, output):
    q, q_mask, d, d_mask, patch, channels, clip, out_dtype, all_pairs, backend = inputs
    ctx.save_for_backward(q, q_mask, d, d_mask, *output[1:])
    ctx.mark_non_differentiable(*output[1:])
    ctx.options = (patch, channels, clip)
    ctx.all_pairs = all_pairs
    ctx.backend = backend


def _backward(ctx, grad_out, *_grad_stats):
    q, q_mask, d, d_mask, *stats = ctx.saved_tensors
    need_dq, need_dd = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
    with torch.no_grad():  # a first-order backward (the custom op has no autograd of its own)
        gq, gd = torch.ops.spherekit.sim_map_bwd(grad_out.contiguous(), q, q_mask, d, d_mask, *stats, *ctx.options,
                                                 need_dq, need_dd, ctx.all_pairs, ctx.backend)
    return (gq if need_dq else None, None, gd if need_dd else None) + (None,) * 7


torch.library.register_autograd("spherekit::sim_map_fwd", _backward, setup_context=_setup_context)
_SimMap = T.differentiable(torch.ops.spherekit.sim_map_fwd, _setup_context, _backward, "_SimMap")


def _check_options(patch, channels, clip, out_dtype) -> tuple[str, ...]:
    if patch is not None:
        if isinstance(patch, bool) or not isinstance(patch, int):
            raise TypeError(f"patch must be None or an int >= 1, got {type(patch).__name__}")
        if patch <= 0:
            raise ValueError(f"patch must be None or an int >= 1, got {patch}")
    if isinstance(channels, str):
        channels = (channels,)
    if not isinstance(channels, (tuple, list)) or not channels:
        raise ValueError(f"channels must be a non-empty tuple of names from {CHANNELS}, got {channels!r}")
    for name in channels:
        if name not in CHANNELS:
            raise ValueError(f"channels: unknown channel {name!r}; choose from {CHANNELS}")
    if len(set(channels)) != len(channels):
        raise ValueError(f"channels must not repeat a name, got {tuple(channels)}")
    C.check_flag("clip", clip)
    if out_dtype is not None and out_dtype not in C.FLOAT_DTYPES:
        raise TypeError(f"out_dtype must be None or one of {[str(t) for t in C.FLOAT_DTYPES]}, got {out_dtype}")
    return tuple(channels)


@T.autocast_tokens
def sim_map(q: Tensor, d: Tensor, *positional_masks, q_mask: Tensor | None = None, d_mask: Tensor | None = None,
            patch: int | None = None, channels: tuple[str, ...] = ("sim",), clip: bool = True, normalize: bool = True,
            all_pairs: bool = False, out_dtype: torch.dtype | None = None, backend: str = "auto") -> Tensor:
    r"""The token-similarity map of "Compositional Sensitivity" (eq. 4, with the phi / psi of eqs. 8-9), paired
    (pair b is query b with document b) or, with all_pairs=True, for every (query a, document b) pair.

        M_ij = <qn_i, dn_j>,   M' = clamp(M, -1, 1) if clip
        channels: "sim" = M'_ij;  "rowmax" = max_{j' in D} M'_ij' (broadcast along j);
                  "colmax" = max_{i' in Q} M'_i'j (broadcast along i)   -- the paper code's [M, row_max, col_max]
        every channel is 0 where token i or token j is padding.

    Args:
        q: (B, m, h), d: (B, n, h) tokens, float32 / float16 / bfloat16 (float64 on the cpu/reference
            backends: "auto" picks cpu for it).
        q_mask, d_mask: keywords, (B, m) / (B, n) bool (or 0/1), True = valid token; None: all valid. (Positional
            before 0.1.0: sim_map(q, q_mask, d, d_mask) raises a TypeError naming this form.)
        all_pairs: q (Bq, m, h) against every d (Bd, n, h): every result below gets (Bq, Bd) in place of B, pair
            (a, b) holding the map of query a with document b (the B x B grid of a verifier MNRL loss). The grid is
            written from the Bq + Bd token sequences: no sequence is copied once per pair.
        patch: None -> the map; p >= 1 -> the patch sequence for a Transformer (see below).
        channels: names from ("sim", "rowmax", "colmax"), in the order wanted (a single str is one channel).
        clip: clamp M to [-1, 1] (the paper's phi, "elementwise normalization/clipping"). With normalize=True M
            is a cosine, so the clamp only removes rounding excursions past +-1 (the paper's code has no clamp,
            an exact no-op there); with normalize=False it bounds raw inner products. Gradient as torch.clamp:
            passed where -1 <= M <= 1, zero where the clamp cut.
        normalize: L2-normalise the tokens first (Norm(x) = x / max(||x||, 1e-6), gradient included; default True:
            the paper's map is the cosine map).
        out_dtype: dtype of the result (default: the dtype of q, ready for a model in that precision; under
            torch.autocast, autocast's dtype, to which float32 / float16 / bfloat16 tokens are cast first).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns:
        patch None, one channel:      (B, m, n)
        patch None, C > 1 channels:   (B, m, n, C), channels last in the order given
        patch p:                      (B, ceil(m/p) * ceil(n/p), p * p * C): the map zero-padded to multiples of
            p and cut into p x p patches, row-major over the patch grid; feature (pi * p + pj) * C + c of patch
            (gi, gj) is channel c at (gi p + pi, gj p + pj). A Linear over the features equals the paper code's
            Conv2d(C, D, kernel_size=p, stride=p) patch embedding. sim_map_patch_mask gives the patches that
            hold a valid entry (the paper masks the others out of attention).
    Gradients flow to q and d (the max channels send theirs to the maximal entry of the row / column).
    Without spherekit.checks("full") (which raises instead): a query or document without valid tokens gives a map
    of zeros, and a NaN in a valid token gives NaN entries (the clamp and the maxima propagate it).
    """
    T.reject_positional_masks("sim_map", positional_masks, d)
    C.check_flag("all_pairs", all_pairs)
    q_mask, d_mask = C.check_pair(q, q_mask, d, d_mask, same_batch=not all_pairs)
    names = _check_options(patch, channels, clip, out_dtype)
    C.check_flag("normalize", normalize)
    out_dtype = q.dtype if out_dtype is None else out_dtype
    chosen = T.resolve_backend("sim_map", backend, q, SUPPORTED)
    C.check_triton_dtype(chosen, q=q)
    if chosen == "reference":
        out = ref.sim_map(q, q_mask, d, d_mask, patch=patch, channels=names, clip=clip, normalize=normalize,
                          all_pairs=all_pairs, compute_dtype=T.score_dtype(q)).to(out_dtype)
    else:
        if normalize:
            q, d = T.normalize_tokens(q), T.normalize_tokens(d)
        args = (q.contiguous(), q_mask.contiguous(), d.contiguous(), d_mask.contiguous(), patch or 0, ",".join(names),
                clip, out_dtype, all_pairs, chosen)
        out = (_SimMap.apply if T.needs_grad(q, d) else torch.ops.spherekit.sim_map_fwd)(*args)[0]
    return out.squeeze(-1) if patch is None and len(names) == 1 else out


def sim_map_patch_mask(q_mask: Tensor, d_mask: Tensor, patch: int, *, all_pairs: bool = False) -> Tensor:
    """(B, ceil(m/p) * ceil(n/p)) bool ((Bq, Bd, ...) with all_pairs), True where patch (gi, gj) of
    sim_map(..., patch=p) holds at least one valid (i, j) entry; pass ~mask as a Transformer's
    src_key_padding_mask, as the paper's code does."""
    if patch is None:
        raise TypeError("patch must be an int >= 1, got None")
    _check_options(patch, ("sim",), True, None)
    C.check_flag("all_pairs", all_pairs)
    for name, mask in (("q_mask", q_mask), ("d_mask", d_mask)):
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.dim() != 2:
            raise TypeError(f"{name} must be a 2-D bool tensor (B, len), got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)} {tuple(getattr(mask, 'shape', ()))}")
    if not all_pairs and q_mask.shape[0] != d_mask.shape[0]:
        raise ValueError(f"q_mask and d_mask must have the same batch size, got {q_mask.shape[0]} and "
                         f"{d_mask.shape[0]}")
    (bq, m), (bd, n) = q_mask.shape, d_mask.shape
    gm, gn = _sim_map_cpu.grid(m, n, patch)
    rows = torch.nn.functional.pad(q_mask, (0, gm * patch - m)).view(bq, gm, patch).any(-1)
    cols = torch.nn.functional.pad(d_mask, (0, gn * patch - n)).view(bd, gn, patch).any(-1)
    if all_pairs:
        return (rows[:, None, :, None] & cols[None, :, None, :]).reshape(bq, bd, gm * gn)
    return (rows[:, :, None] & cols[:, None, :]).reshape(bq, gm * gn)
