"""The token conventions shared by the token-similarity ops (maxsim, soft_align, sim_map, global_avg_sim,
maxsim_ragged) and the spherekit.nn verifiers: the one Norm they apply, the dtype of their scores, right-padding."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor

from . import checks as C
from ._dispatch import autocast_off, resolve

NORM_EPS = 1e-6


def normalize_tokens(x: Tensor) -> Tensor:
    """Norm(x) = x / max(||x||_2, 1e-6) over the last dim, with autograd; the ONE place the token ops
    normalise: spherekit.ops.l2_normalize (fused, fp32 statistics; torch.func, torch.compile and fake tensors see
    through it), F.normalize for float64 tokens."""
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


def autocast_tokens(fn):
    """Decorator of the token ops' public functions fn(q, d, ...): under torch.autocast for q's device, float32 /
    float16 / bfloat16 q and d are cast to autocast's dtype (as autocast casts a matmul's inputs; float64 and anything
    else unchanged) and fn runs with autocast off, so that its own matmuls keep their fp32 (fp64) math and the output
    dtypes are the documented ones (fp32 scores); outside autocast fn runs as called."""
    @functools.wraps(fn)
    def wrapper(q, d, *args, **kwargs):
        if not isinstance(q, Tensor):
            return fn(q, d, *args, **kwargs)
        with autocast_off(q.device) as dtype:
            if dtype is not None:
                q, d = (x.to(dtype) if isinstance(x, Tensor) and x.dtype in C.KERNEL_DTYPES else x for x in (q, d))
            return fn(q, d, *args, **kwargs)

    return wrapper


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


def differentiable(op, setup_context, backward, name: str) -> type[torch.autograd.Function]:
    """A torch.autograd.Function that runs the custom op `op` forward, with (setup_context, backward) as its autograd:
    the formula also registered for the custom op with torch.library.register_autograd (for callers of the op
    itself), in the form torch.func's transforms need (torch.library's own autograd wrapper has no setup_context, so
    torch.func.grad refuses it). The public functions call this Function when a gradient is needed; torch.compile
    traces it, and the custom ops inside stay opaque, with their register_fake. The backward custom ops are called
    under no_grad: first-order only."""
    def forward(*inputs):
        return op(*inputs)

    body = dict(forward=staticmethod(forward), setup_context=staticmethod(setup_context),
                backward=staticmethod(backward), __doc__=f"The differentiable {name} (see {__name__}.differentiable).")
    return type(name, (torch.autograd.Function,), body)


def resolve_backend(op: str, backend: str, q: Tensor, supported: tuple[str, ...]) -> str:
    """The backend of a token op for tokens q (spherekit.ops._dispatch.resolve: "auto" picks cpu for float64 tokens,
    an explicit kernel backend refuses them, naming q; a constant of the graph under torch.compile)."""
    return resolve(op, backend, q.device, q.dtype, supported, "q", "tokens")
