"""The token conventions shared by the token-similarity ops (maxsim, soft_align, sim_map, global_avg_sim,
maxsim_ragged) and the spherekit.nn verifiers: the one Norm they apply, the dtype of their scores, right-padding."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from . import checks as C

NORM_EPS = 1e-6


def normalize_tokens(x: Tensor) -> Tensor:
    """Norm(x) = x / max(||x||_2, 1e-6) over the last dim, with autograd; the ONE place the token ops
    normalise: spherekit.ops.l2_normalize (fused, fp32 statistics), F.normalize for float64 tokens."""
    if x.dtype == torch.float64:
        return F.normalize(x, dim=-1, eps=NORM_EPS)
    from .ngpt import l2_normalize

    return l2_normalize(x, dim=-1, eps=NORM_EPS)


def score_dtype(x: Tensor) -> torch.dtype:
    """Scores are fp32 (fp64 for fp64 tokens, so the ops can be gradchecked)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def pad_tokens(x: Tensor, mask: Tensor, length: int) -> tuple[Tensor, Tensor]:
    """Right-pad the token axis (dim -2 of x, -1 of mask) with zeros / False up to `length`."""
    extra = length - x.shape[-2]
    if extra == 0:
        return x, mask
    return F.pad(x, (0, 0, 0, extra)), F.pad(mask, (0, extra), value=False)


def check_token_mask(name: str, mask, shape: tuple[int, ...], device: torch.device, what: str) -> Tensor | None:
    """A token mask of the ops: None stays None (every token valid: the kernels then read no mask); else
    spherekit.ops.checks.check_mask (bool or a 0/1 attention mask -> bool; the all-padding scan in "full" mode)."""
    if mask is None:
        return None
    return C.check_mask(name, mask, shape, device, what=what, like_name="q", zero_one=True)


def all_valid(mask: Tensor | None, x: Tensor) -> Tensor:
    """mask, or an all-True mask over the token axes of x (x.shape[:-1]) when it is None."""
    return torch.ones(x.shape[:-1], dtype=torch.bool, device=x.device) if mask is None else mask


def autocast_tokens(*xs):
    """Under torch.autocast for the tokens' device, float32 / float16 / bfloat16 tokens cast to autocast's dtype, as
    autocast casts the inputs of a matmul (float64 and anything else unchanged); outside it, xs as given."""
    first = xs[0]
    if not isinstance(first, Tensor) or first.device.type not in ("cpu", "cuda") \
            or not torch.is_autocast_enabled(first.device.type):
        return xs
    dtype = torch.get_autocast_dtype(first.device.type)
    return tuple(x.to(dtype) if isinstance(x, Tensor) and x.dtype in C.KERNEL_DTYPES else x for x in xs)


def needs_grad(*xs: Tensor) -> bool:
    """Whether autograd will want a gradient of any of xs (grad mode on and one of them requires grad)."""
    return torch.is_grad_enabled() and any(x.requires_grad for x in xs)


def direct_call(*xs: Tensor) -> bool:
    """Whether an inference call may skip the custom op and call its backend directly: eager mode on plain tensors
    with storage (not inside torch.compile, a torch.func transform, or on fake / meta tensors)."""
    if torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active():
        return False
    return all(type(x) is Tensor and x.device.type != "meta" for x in xs)


def reject_positional_masks(op: str, positional: tuple, d) -> None:
    """The token ops take their masks as keywords (as PyLate does): a TypeError naming the new form for the
    positional form op(q, q_mask, d, d_mask) of spherekit before 0.1.0 (extra positionals, or a mask or None where d
    goes)."""
    if positional or d is None or (isinstance(d, Tensor) and d.dtype == torch.bool):
        raise TypeError(f"{op} takes the masks as keywords: {op}(q, d, q_mask=q_mask, d_mask=d_mask); the "
                        f"positional form {op}(q, q_mask, d, d_mask) was removed in spherekit 0.1.0")
