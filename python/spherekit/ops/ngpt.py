"""nGPT ops (Loshchilov et al. 2025; "Mapping the Circumplex of Affect" (arXiv:2601.06575) eq. 2): the geodesic
residual update, fused L2 normalisation with backward, and in-place multi-tensor weight renormalisation. Math:
spherekit.reference.ngpt.

Each op is a torch.library custom op (register_fake + register_autograd) that the public functions apply through an
autograd.Function with setup_context, so torch.compile(fullgraph=True) traces them, torch.func.grad differentiates
them and meta / fake tensors propagate shapes; a second derivative raises. The implementation is picked per
backend:
    "cuda"       spherekit._cuda kernels through spherekit.ops._ngpt_cuda (CUDA tensors)
    "triton"     spherekit.kernels.ngpt launchers
    "cpu"        spherekit._C C++ loops (OpenMP, one pass over memory) on CPU tensors; otherwise (no _C, or
                 tensors on another device) a torch composition with fp32 math
    "reference"  the pure-torch oracle with torch autograd
    "auto"       on CUDA tensors: triton (rows of at most kernels.ngpt.MAX_D features), else cuda when
                 spherekit._cuda has the nGPT kernels, else cpu; on CPU tensors: cpu. Triton comes first because it
                 measured faster on the one GPU these ran on (H200, 65,536 x 4,096 bf16 fwd + bwd: Triton 2.86 ms,
                 the CUDA kernels 4.69 ms; 8,192 x 16,384: 2.09 vs 2.16 ms; benches/results/gpu/h200_bench.csv),
                 and the Triton kernels since got the one-round rows and the pipelined persistent grid that the
                 CUDA kernels lack (two rounds per row, no prefetch): the CUDA path stays for explicit
                 backend="cuda" and for rows past MAX_D.
Statistics and math are fp32 for fp16/bf16 storage; outputs keep the input dtype. float64 runs in float64 on
"reference" and "cpu" (the torch composition; auto picks it for float64 on CUDA too); the Triton and CUDA
kernels are fp32 and refuse it with a TypeError naming the argument and the backend. Norms are robust: a row
whose fp32 sum of squares overflows (|x| >= ~1.8e19) is scaled down before squaring and still normalises to its
unit vector (math in spherekit.reference.ngpt); the backward reads the saved norms (fp32 unless the input is
float64), so its gradients need ||x|| <= 3.4e38.

Autocast: under torch.autocast (CPU or CUDA, any dtype) geodesic_residual promotes h and f to their common dtype
(torch.promote_types: an fp32 residual stream and a bf16 block output give fp32) and returns that dtype;
l2_normalize returns x's dtype; renormalize_ works in place in each weight's dtype. The math is fp32 either way
(float64 for float64), so autocast never lowers an op's precision and never makes it raise for mixed dtypes.

Check modes (spherekit.checks): by default ("fast") the ops validate only metadata (types, shapes, dtypes,
devices, strides, eps, dims), read no tensor data and never synchronise with the device; NaN or Inf in an input
then gives NaN or Inf in every output row it reaches (a row of h or f: that row of the output and of the
gradients; alpha: every row), never a finite wrong number, and renormalize_ writes NaN into a weight that held
one. In spherekit.checks("full") / SPHEREKIT_CHECKS=full a NaN or Inf raises ValueError naming the tensor (one
reduction per tensor, one host sync): inside the custom ops (so compiled graphs check too), before the
reference, and for renormalize_ before anything is written.
"""

from __future__ import annotations

import functools
from typing import Sequence

import torch
from torch import Tensor

from .. import _backend
from ..reference import ngpt as _ref
from . import checks as C
from . import _ngpt_cuda, _ngpt_cpu
from ._ngpt_cpp import CppNgpt, has_ngpt

SUPPORTED = ("cuda", "triton", "cpu", "reference")


def cuda_kernels_available() -> bool:
    """True when spherekit._cuda is built with the nGPT kernels (the "cuda" backend can run)."""
    return _ngpt_cuda.available()

def _stat_dtype(dtype: torch.dtype) -> torch.dtype:
    """dtype of alpha, the norms and grad_alpha: float64 for float64 inputs, else float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _triton_max_d() -> int:
    mod = _backend.try_triton_kernels("ngpt")[0]
    return getattr(mod, "MAX_D", 1 << 62) if mod is not None else 1 << 62


@torch.compiler.assume_constant_result
def _resolve_choice(op: str, backend: str, device: torch.device, float64_arg: str | None) -> tuple[str, int, str]:
    """(the concrete backend, the widest row it takes, the backend for wider rows): auto on CUDA picks triton
    (module docstring) and, for rows wider than Triton's MAX_D, cuda or cpu; an explicit backend is its own answer
    at every width. float64_arg names a float64 input: auto then picks cpu, and cuda/triton raise naming it
    (checks.refuse_float64). torch.compile runs this once while tracing and keeps the answer (it imports the
    extensions and reads SPHEREKIT_BACKEND, which a graph cannot trace), so it takes no tensor size."""
    if _backend.requested(backend) == "auto" and device.type == "cuda":
        if float64_arg is not None:
            return "cpu", 0, "cpu"
        chosen = _backend.resolve(op, "auto", device, SUPPORTED)  # triton, else cuda, else cpu
        if chosen == "cuda" and not _ngpt_cuda.available():
            return "cpu", 0, "cpu"
        if chosen == "triton":
            wide = "cuda" if _backend.usable("cuda", device)[0] and _ngpt_cuda.available() else "cpu"
            return chosen, _triton_max_d(), wide
        return chosen, 0, chosen
    chosen = _backend.resolve(op, backend, device, SUPPORTED)
    if float64_arg is not None:
        C.refuse_float64(chosen, float64_arg, "inputs")
    if chosen == "cuda" and not _ngpt_cuda.available():
        raise RuntimeError(f"{op}: backend 'cuda' cannot run here: spherekit._cuda has no nGPT kernels")
    return chosen, 0, chosen


def _resolve(op: str, backend: str, device: torch.device, d: int | None = None, float64_arg: str | None = None) -> str:
    """The concrete backend for rows of d features (_resolve_choice; d may be symbolic under torch.compile)."""
    chosen, max_d, wide = _resolve_choice(op, backend, device, float64_arg)
    return wide if chosen != wide and d is not None and d > max_d else chosen


def _impl(backend: str, device: torch.device, float64: bool = False):
    """The implementation (spherekit.ops.contracts.NGPTBackend) for a concrete backend (float64: some input is
    float64)."""
    if backend == "triton":
        return _backend.triton_kernels("ngpt")
    if backend == "cuda":
        return _ngpt_cuda
    ext = _backend.cpp_extension()
    if device.type == "cpu" and has_ngpt(ext) and not float64:
        return CppNgpt(ext)
    return _ngpt_cpu  # the cpu backend without spherekit._C, on non-CPU tensors, or for float64


# ---- geodesic residual ------------------------------------------------------------------------------------

@torch.library.custom_op("spherekit::geodesic_residual_fwd", mutates_args=())
def _gr_fwd(h: Tensor, f: Tensor, alpha: Tensor, eps: float, backend: str) -> tuple[Tensor, Tensor]:
    """h, f (R, d) contiguous, alpha (d,) in _stat_dtype(h.dtype) -> out (R, d) in h.dtype, norms (R, 3) in
    alpha.dtype (||h||, ||f||, ||y||)."""
    C.check_finite(h=h, f=f, alpha=alpha)
    if h.shape[0] == 0:
        return torch.empty_like(h), h.new_empty((0, 3), dtype=alpha.dtype)
    return _impl(backend, h.device, h.dtype == torch.float64).geodesic_residual_fwd(h, f, alpha, eps=eps)


@_gr_fwd.register_fake
def _(h, f, alpha, eps, backend):
    return torch.empty_like(h), h.new_empty((h.shape[0], 3), dtype=alpha.dtype)


@torch.library.custom_op("spherekit::geodesic_residual_bwd", mutates_args=())
def _gr_bwd(grad_out: Tensor, h: Tensor, f: Tensor, alpha: Tensor, norms: Tensor, eps: float,
            backend: str) -> tuple[Tensor, Tensor, Tensor]:
    """-> grad_h (R, d) h.dtype, grad_f (R, d) f.dtype, grad_alpha (d,) alpha.dtype."""
    if h.shape[0] == 0:
        return torch.empty_like(h), torch.empty_like(f), torch.zeros_like(alpha)
    impl = _impl(backend, h.device, h.dtype == torch.float64)
    return impl.geodesic_residual_bwd(grad_out, h, f, alpha, norms, eps=eps)


@_gr_bwd.register_fake
def _(grad_out, h, f, alpha, norms, eps, backend):
    return torch.empty_like(h), torch.empty_like(f), torch.empty_like(alpha)


def _gr_setup(ctx, inputs, output):
    h, f, alpha, eps, backend = inputs
    ctx.save_for_backward(h, f, alpha, output[1])
    ctx.eps, ctx.backend = eps, backend
    ctx.mark_non_differentiable(output[1])


class _NoSecondDerivative(torch.autograd.Function):
    """Identity on gradients (views, no copy) whose backward raises: what a first-order-only backward hands out
    when a graph of the gradients is being built. `anchor`, a saved input that requires grad, makes the outputs
    part of that graph."""

    @staticmethod
    def forward(anchor, *grads):
        return tuple(g.view_as(g) for g in grads)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, *_):
        raise RuntimeError("spherekit's nGPT ops have no second derivative: their backward is not differentiable "
                           "(a gradient of a gradient, e.g. a gradient penalty, cannot pass through them)")


def _first_order_only(backward):
    """backward run without autograd (the backward ops have no derivative of their own). Where a graph of the
    gradients is being built (create_graph=True, or torch.func, which always builds one) and an incoming gradient
    or a saved input requires grad, the gradients come out through _NoSecondDerivative, so differentiating them
    raises. (torch.autograd.function.once_differentiable looks at the incoming gradients only: a gradient penalty
    through the saved h, f, alpha would silently lose its second-order terms.)"""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with torch.no_grad():
            outputs = backward(ctx, *grads)
        if not torch.is_grad_enabled():
            return outputs
        anchor = next((t for t in (*grads, *ctx.saved_tensors) if isinstance(t, Tensor) and t.requires_grad), None)
        if anchor is None:
            return outputs
        present = [i for i, g in enumerate(outputs) if g is not None]
        raising = iter(_NoSecondDerivative.apply(anchor, *(outputs[i] for i in present)))
        return tuple(next(raising) if g is not None else None for g in outputs)
    return wrapper


@_first_order_only
def _gr_backward(ctx, grad_out, _grad_norms):
    h, f, alpha, norms = ctx.saved_tensors
    grad_out = torch.zeros_like(h) if grad_out is None else grad_out.to(h.dtype).contiguous()
    gh, gf, ga = torch.ops.spherekit.geodesic_residual_bwd(grad_out, h, f, alpha, norms, ctx.eps, ctx.backend)
    need = ctx.needs_input_grad
    return gh if need[0] else None, gf if need[1] else None, ga.to(alpha.dtype) if need[2] else None, None, None


torch.library.register_autograd("spherekit::geodesic_residual_fwd", _gr_backward, setup_context=_gr_setup)


class _GeodesicResidual(torch.autograd.Function):
    """The public path: geodesic_residual_fwd with the same setup_context and backward as its register_autograd.
    torch.func transforms (grad, vjp, jacrev) need an autograd.Function with setup_context, and the one
    register_autograd builds for a custom op has none (torch 2.13), so the public functions apply this one;
    torch.compile traces it, and direct callers of torch.ops.spherekit.* still get the op's own autograd."""

    @staticmethod
    def forward(h, f, alpha, eps, backend):
        return torch.ops.spherekit.geodesic_residual_fwd(h, f, alpha, eps, backend)

    setup_context = staticmethod(_gr_setup)
    backward = staticmethod(_gr_backward)


# ---- l2 normalisation -------------------------------------------------------------------------------------

@torch.library.custom_op("spherekit::l2_normalize_fwd", mutates_args=())
def _l2_fwd(x: Tensor, eps: float, backend: str) -> tuple[Tensor, Tensor]:
    """x (R, d) contiguous -> out (R, d) in x.dtype, norms (R,) in _stat_dtype(x.dtype), unclamped."""
    C.check_finite(x=x)
    if x.shape[0] == 0:
        return torch.empty_like(x), x.new_empty(0, dtype=_stat_dtype(x.dtype))
    return _impl(backend, x.device, x.dtype == torch.float64).l2_normalize_fwd(x, eps=eps)


@_l2_fwd.register_fake
def _(x, eps, backend):
    return torch.empty_like(x), x.new_empty(x.shape[0], dtype=_stat_dtype(x.dtype))


@torch.library.custom_op("spherekit::l2_normalize_bwd", mutates_args=())
def _l2_bwd(grad_out: Tensor, x: Tensor, norms: Tensor, eps: float, backend: str) -> Tensor:
    if x.shape[0] == 0:
        return torch.empty_like(x)
    return _impl(backend, x.device, x.dtype == torch.float64).l2_normalize_bwd(grad_out, x, norms, eps=eps)


@_l2_bwd.register_fake
def _(grad_out, x, norms, eps, backend):
    return torch.empty_like(x)


def _l2_setup(ctx, inputs, output):
    x, eps, backend = inputs
    ctx.save_for_backward(x, output[1])
    ctx.eps, ctx.backend = eps, backend
    ctx.mark_non_differentiable(output[1])


@_first_order_only
def _l2_backward(ctx, grad_out, _grad_norms):
    x, norms = ctx.saved_tensors
    grad_out = torch.zeros_like(x) if grad_out is None else grad_out.to(x.dtype).contiguous()
    return torch.ops.spherekit.l2_normalize_bwd(grad_out, x, norms, ctx.eps, ctx.backend), None, None


torch.library.register_autograd("spherekit::l2_normalize_fwd", _l2_backward, setup_context=_l2_setup)


class _L2Normalize(torch.autograd.Function):
    """l2_normalize_fwd for the public path, as _GeodesicResidual."""

    @staticmethod
    def forward(x, eps, backend):
        return torch.ops.spherekit.l2_normalize_fwd(x, eps, backend)

    setup_context = staticmethod(_l2_setup)
    backward = staticmethod(_l2_backward)


# ---- in-place renormalisation -----------------------------------------------------------------------------

def _view3(w: Tensor, dim: int) -> Tensor:
    """w as a (outer, n, inner) view normalised over the middle axis (w is contiguous)."""
    outer = 1
    for s in w.shape[:dim]:
        outer *= s
    inner = 1
    for s in w.shape[dim + 1:]:
        inner *= s
    return w.view(outer, w.shape[dim], inner)


@torch.library.custom_op("spherekit::renormalize_", mutates_args=("weights",))
def _renorm(weights: list[Tensor], dims: list[int], eps: float, backend: str) -> None:
    _check_finite_weights(weights)
    views = [_view3(w, d) for w, d in zip(weights, dims) if w.numel() > 0]
    if views:
        float64 = any(v.dtype == torch.float64 for v in views)
        _impl(backend, views[0].device, float64).renormalize_(views, eps=eps)


@_renorm.register_fake
def _(weights, dims, eps, backend):
    return None


# ---- validation and the public API --------------------------------------------------------------------------

def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0 or eps == float("inf"):
        raise ValueError(f"eps must be a finite float > 0, got {eps!r}")
    return float(eps)


def _norm_dim(name: str, dim, ndim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{name} must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise ValueError(f"{name} must lie in [{-ndim}, {ndim}) for a tensor with {ndim} dimensions, got {dim}")
    return dim % ndim


def _check_finite_weights(weights: Sequence[Tensor]) -> None:
    C.check_finite(**{f"weights[{i}]": w for i, w in enumerate(weights)})


def _autocast_promote(h: Tensor, f: Tensor) -> tuple[Tensor, Tensor]:
    """Under torch.autocast on h's device: h and f of two float dtypes in their common one (module docstring)."""
    if (h.dtype != f.dtype and h.is_floating_point() and f.is_floating_point()
            and torch.is_autocast_enabled(h.device.type)):
        common = torch.promote_types(h.dtype, f.dtype)
        return h.to(common), f.to(common)
    return h, f


def _check_rows(name: str, x: Tensor) -> None:
    C.check_tensor(name, x, dtypes=C.FLOAT_DTYPES)
    if x.dim() == 0:
        raise ValueError(f"{name} must have at least 1 dimension (..., d), got a 0-dim tensor")
    if x.shape[-1] == 0:
        raise ValueError(f"{name} must have a last dimension d >= 1, got shape {tuple(x.shape)}")
    C.check_nonempty(name, x)


def geodesic_residual(h: Tensor, f: Tensor, alpha: Tensor | float, *, eps: float = 1e-6,
                      backend: str = "auto") -> Tensor:
    r"""nGPT geodesic residual update: Norm(Norm(h) + |alpha| * (Norm(f) - Norm(h))) over the last dimension.

    Args:
        h: (..., d) float32/float16/bfloat16 (or float64: reference and cpu) hidden states.
        f: (..., d) the block output (attention or MLP), same shape, dtype and device as h.
        alpha: per-feature step sizes: a Python number, or a tensor of shape (), (1,) or (d,), any float dtype, on
            h's device; the step is a = |alpha| (gradient sign(alpha) * ...). A tensor receives its gradient in
            alpha.dtype; used in fp32 (float64 for float64 h).
        eps: Norm(x) = x / max(||x||, eps): a zero row maps to 0 and gets gradient g / eps, never NaN.
        backend: "auto" | "cuda" | "triton" | "cpu" | "reference" (see the module docstring).

    Returns:
        (..., d) in h.dtype (under torch.autocast: the common dtype of h and f). Gradients flow to h, f and alpha
        (math in spherekit.reference.ngpt). NaN / Inf in: NaN / Inf out, or a ValueError in spherekit.checks("full")
        (module docstring).
    """
    _check_rows("h", h)
    C.check_tensor("f", f)
    h, f = _autocast_promote(h, f)
    C.check_same("f", f, "h", h)
    if f.shape != h.shape:
        raise ValueError(f"f must have the shape of h {tuple(h.shape)}, got {tuple(f.shape)}")
    d = h.shape[-1]
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):  # a fill on the device, no host copy
        alpha = torch.full((), float(alpha), dtype=_stat_dtype(h.dtype), device=h.device)
    if not isinstance(alpha, Tensor):
        raise TypeError(f"alpha must be a torch.Tensor or a Python number, got {type(alpha).__name__}")
    C.check_tensor("alpha", alpha, device=h.device)
    if not alpha.is_floating_point() or alpha.dim() > 1 or alpha.numel() not in (1, d):
        raise ValueError(f"alpha must be a floating tensor of shape (), (1,) or (d,) = ({d},), got shape "
                         f"{tuple(alpha.shape)} dtype {alpha.dtype}")
    eps = _check_eps(eps)
    stat = _stat_dtype(h.dtype)
    chosen = _resolve("geodesic_residual", backend, h.device, d, "h" if stat == torch.float64 else None)
    if chosen == "reference":
        C.check_finite(h=h, f=f, alpha=alpha)
        return _ref.geodesic_residual(h, f, alpha, eps, compute_dtype=stat)
    a = alpha.to(stat).reshape(-1).expand(d).contiguous()  # autograd sums the expanded gradient back
    out, _ = _GeodesicResidual.apply(h.reshape(-1, d).contiguous(), f.reshape(-1, d).contiguous(), a, eps, chosen)
    return out.view(h.shape)


def l2_normalize(x: Tensor, dim: int = -1, *, eps: float = 1e-6, backend: str = "auto") -> Tensor:
    r"""Norm(x) = x / max(||x||_2, eps) along ``dim`` (torch.nn.functional.normalize semantics), fused, with backward.

    Args:
        x: float32/float16/bfloat16 (or float64: reference and cpu) tensor with at least one dimension.
        dim: the dimension to normalise over.
        eps: the clamp of the norm: a zero slice maps to 0 (gradient g / eps), never NaN.
        backend: "auto" | "cuda" | "triton" | "cpu" | "reference".

    Returns:
        a tensor like x (same dtype); norms are fp32 internally (float64 for float64).
        Gradient: r (g - out <g, out>), r = 1/max(||x||, eps).
    """
    C.check_tensor("x", x, dtypes=C.FLOAT_DTYPES)
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension, got a 0-dim tensor")
    dim = _norm_dim("dim", dim, x.dim())
    if x.shape[dim] == 0:
        raise ValueError(f"x must have size >= 1 along dim {dim}, got shape {tuple(x.shape)}")
    C.check_nonempty("x", x)
    eps = _check_eps(eps)
    stat = _stat_dtype(x.dtype)
    chosen = _resolve("l2_normalize", backend, x.device, x.shape[dim], "x" if stat == torch.float64 else None)
    if chosen == "reference":
        C.check_finite(x=x)
        return _ref.l2_normalize(x, dim, eps, compute_dtype=stat)
    moved = x.movedim(dim, -1)
    out, _ = _L2Normalize.apply(moved.reshape(-1, moved.shape[-1]).contiguous(), eps, chosen)
    return out.view(moved.shape).movedim(-1, dim)


def renormalize_(weights: Sequence[Tensor], dims: Sequence[int], *, eps: float = 1e-6, backend: str = "auto") -> None:
    r"""In place, without gradient: weights[i] <- Norm(weights[i]) along dims[i], for many tensors in one launch.

    nGPT keeps every embedding/projection matrix on the unit sphere along its embedding dimension by calling
    this after each optimiser step. Parameters are accepted (the update runs under torch.no_grad()). NaN or Inf
    in a tensor makes its slices NaN (or, in spherekit.checks("full"), raises ValueError naming it before anything
    is written). torch.compile(fullgraph=True) traces it (a custom op that mutates its list of tensors).

    Args:
        weights: list/tuple of contiguous float32/float16/bfloat16 (or float64: reference and cpu) tensors on one
            device (at least 1-D).
        dims: one int per tensor (dim=-1: every row gets unit norm; dim=0 of a matrix: every column).
        eps: Norm(x) = x / max(||x||, eps); zero slices stay 0.
        backend: "auto" | "cuda" | "triton" | "cpu" | "reference".
    """
    if not isinstance(weights, (list, tuple)):
        raise TypeError(f"weights must be a list or tuple of tensors, got {type(weights).__name__}")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"dims must be a list or tuple of ints, got {type(dims).__name__}")
    if len(weights) != len(dims):
        raise ValueError(f"weights and dims must have the same length, got {len(weights)} and {len(dims)}")
    eps = _check_eps(eps)
    if not weights:
        return
    device = weights[0].device if isinstance(weights[0], Tensor) else None
    norm_dims = []
    for i, (w, dim) in enumerate(zip(weights, dims)):
        C.check_tensor(f"weights[{i}]", w, dtypes=C.FLOAT_DTYPES, device=device)
        if not w.is_contiguous():
            raise ValueError(f"weights[{i}] must be contiguous, got shape {tuple(w.shape)} strides {w.stride()}")
        if w.dim() == 0:
            raise ValueError(f"weights[{i}] must have at least 1 dimension, got a 0-dim tensor")
        norm_dims.append(_norm_dim(f"dims[{i}]", dim, w.dim()))
    float64 = next((f"weights[{i}]" for i, w in enumerate(weights) if w.dtype == torch.float64), None)
    chosen = _resolve("renormalize_", backend, device, float64_arg=float64)
    with torch.no_grad():
        if chosen == "reference":
            _check_finite_weights(weights)
            for w, dim in zip(weights, norm_dims):
                w.copy_(_ref.renormalize(w, dim, eps, compute_dtype=_stat_dtype(w.dtype)))
            return
        torch.ops.spherekit.renormalize_(list(weights), norm_dims, eps, chosen)
