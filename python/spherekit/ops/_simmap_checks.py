"""Argument validation and small helpers shared by the token-similarity-map ops (maxsim, soft_align,
sim_map, global_avg_sim, maxsim_ragged). Every error names the argument, the expected and the actual value.

Masks are bool tensors, True = valid token (an int attention mask converts with ``mask.bool()``); None
means every token is valid. Every query and every document needs at least one valid token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from . import _checks as C

TOKEN_DTYPES = C.FLOAT_DTYPES + (torch.float64,)
NORM_EPS = 1e-6


def normalize_tokens(x: Tensor) -> Tensor:
    """Norm(x) = x / max(||x||_2, 1e-6) over the last dim, with autograd; the ONE place the simmap ops
    normalise: spherekit.ops.l2_normalize (fused, fp32 statistics), F.normalize for float64 tokens."""
    if x.dtype == torch.float64:
        return F.normalize(x, dim=-1, eps=NORM_EPS)
    from .ngpt import l2_normalize

    return l2_normalize(x, dim=-1, eps=NORM_EPS)


def check_tokens(name: str, x, ndims: tuple[int, ...], *, like: Tensor | None = None) -> None:
    """A float tensor with len(shape) in ndims, no zero-size dim; dtype and device of `like`."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() not in ndims:
        want = " or ".join(str(n) for n in ndims)
        raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(x.shape)}")
    if x.dtype not in TOKEN_DTYPES:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in TOKEN_DTYPES]}, got {x.dtype}")
    if 0 in x.shape:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")
    if like is not None:
        if x.device != like.device:
            raise ValueError(f"{name} must be on the device of q ({like.device}), got {x.device}")
        if x.dtype != like.dtype:
            raise TypeError(f"{name} must have the dtype of q ({like.dtype}), got {x.dtype}")
        if x.shape[-1] != like.shape[-1]:
            raise ValueError(f"{name}.shape[-1] must equal the hidden size h of q ({like.shape[-1]}), "
                             f"got shape {tuple(x.shape)}")


def check_mask(name: str, mask, shape: tuple[int, ...], device: torch.device, what: str) -> Tensor:
    """A bool mask of exactly `shape` (None -> all True) with at least one True per `what` (last dim)."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool, device=device)
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a bool torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must have dtype torch.bool (True = valid token; convert an attention mask "
                        f"with mask.bool()), got {mask.dtype}")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(mask.shape)}")
    if mask.device != device:
        raise ValueError(f"{name} must be on the device of q ({device}), got {mask.device}")
    empty = ~mask.any(-1)
    if mask.dim() == 1 and bool(empty):
        raise ValueError(f"{name}: the {what} has no valid token (it needs at least one)")
    if bool(empty.any()):
        where = tuple(int(i) for i in torch.nonzero(empty)[0])
        index = where[0] if len(where) == 1 else where
        raise ValueError(f"{name}: {what} {index} has no valid token (every {what} needs at least one)")
    return mask


def check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def as_scalar(name: str, value, device: torch.device, dtype: torch.dtype, *, temperature: bool) -> Tensor:
    """A finite float or 0-d floating tensor (grad kept) -> 0-d tensor of `dtype` on `device`; a temperature
    also obeys the ops' temperature rule (> 0 and >= spherekit.ops._checks.MIN_TEMPERATURE)."""
    if isinstance(value, Tensor):
        if value.dim() != 0 or not value.is_floating_point():
            raise ValueError(f"{name} must be a float or a 0-dim floating tensor, got shape {tuple(value.shape)} "
                             f"dtype {value.dtype}")
        if value.device != device:
            raise ValueError(f"{name} must be on the device of q ({device}), got {value.device}")
        x, x_dtype = float(value.detach()), value.dtype
        out = value.to(dtype)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float or a 0-dim tensor, got {type(value).__name__}")
    else:
        x, x_dtype = float(value), torch.float64
        out = torch.tensor(x, dtype=dtype, device=device)
    if x != x or abs(x) == float("inf") or (temperature and not x > 0):
        raise ValueError(f"{name} must be a finite float{' > 0' if temperature else ''}, got {x}")
    if temperature:
        C.check_temperature(name, x, x_dtype)
    return out


def score_dtype(x: Tensor) -> torch.dtype:
    """Scores are fp32 (fp64 for fp64 tokens, so the ops can be gradchecked)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def check_paired(q, q_mask, d, d_mask) -> tuple[Tensor, Tensor]:
    """Paired layout: q (B, m, h), d (B, n, h), masks (B, m), (B, n) -> the (completed) masks."""
    check_tokens("q", q, (3,))
    check_tokens("d", d, (3,), like=q)
    if d.shape[0] != q.shape[0]:
        raise ValueError(f"d.shape[0] must equal the batch size B of q ({q.shape[0]}) in this paired op, "
                         f"got shape {tuple(d.shape)}")
    q_mask = check_mask("q_mask", q_mask, q.shape[:2], q.device, "query")
    d_mask = check_mask("d_mask", d_mask, d.shape[:2], q.device, "document")
    C.check_finite(q=q, d=d)
    return q_mask, d_mask
