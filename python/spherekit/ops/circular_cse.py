"""circular_cse: CircularCSE ("Mapping the Circumplex of Affect" (arXiv:2601.06575), eq. 9), regression of pairwise
dot products to the cosine of the label-angle gaps, without materialising the B x B matrix. The math is in
spherekit.reference.circular_cse.

The public function validates arguments, turns label angles into per-row cos/sin (O(B)), then calls two
torch.library custom ops (spherekit::circular_cse_fwd / spherekit::circular_cse_bwd) so torch.compile
traces through them. With the gradient, a third op (spherekit::circular_cse_chunked, on every backend) computes
the scalar loss and its gradient in one chunked pass (spherekit.ops._gram_chunked).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend, reference
from . import _chunked_gemm, _dispatch, _gram_chunked
from . import checks as C
from .sincere import poison_bad_labels
from . import _circular_cse_cpu

SUPPORTED = ("triton", "cpu", "reference")


def _impl(backend: str):
    if backend == "triton":
        return _backend.triton_kernels("circular_cse")
    return _circular_cse_cpu


@torch.library.custom_op("spherekit::circular_cse_fwd", mutates_args=())
def _circular_cse_fwd(embeddings: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, margin: float,
                      backend: str) -> Tensor:
    """-> rows (B,) fp32: sum over j != i of l_ij."""
    return _impl(backend).circular_cse_fwd(embeddings, labels, row_cos, row_sin, margin=margin)


@_circular_cse_fwd.register_fake
def _(embeddings, *args):
    return embeddings.new_empty(embeddings.shape[0], dtype=_dispatch.stat_dtype(embeddings.dtype))


@torch.library.custom_op("spherekit::circular_cse_bwd", mutates_args=())
def _circular_cse_bwd(grad_rows: Tensor, embeddings: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor,
                      margin: float, backend: str) -> Tensor:
    de = _impl(backend).circular_cse_bwd(grad_rows, embeddings, labels, row_cos, row_sin, margin=margin)
    return de.to(embeddings.dtype)


@_circular_cse_bwd.register_fake
def _(grad_rows, embeddings, *args):
    return torch.empty_like(embeddings)


class _CircularCSEStreaming(torch.autograd.Function):
    """Autograd of the forward + recomputing backward (a Function with setup_context over custom ops without
    autograd of their own: torch.func transforms and torch.compile both see through it)."""

    @staticmethod
    def forward(e, y, row_cos, row_sin, margin, backend):
        return torch.ops.spherekit.circular_cse_fwd(e, y, row_cos, row_sin, margin, backend)

    @staticmethod
    def setup_context(ctx, inputs, output):
        e, y, row_cos, row_sin, margin, backend = inputs
        ctx.save_for_backward(e, y, row_cos, row_sin)
        ctx.margin, ctx.backend = margin, backend

    @staticmethod
    def backward(ctx, grad_rows):
        e, y, row_cos, row_sin = ctx.saved_tensors
        de = None
        if ctx.needs_input_grad[0]:
            with torch.no_grad():  # no double backward; and under torch.func no second autograd layer
                de = torch.ops.spherekit.circular_cse_bwd(grad_rows.contiguous(), e, y, row_cos, row_sin,
                                                          ctx.margin, ctx.backend)
        return de, None, None, None, None, None


@torch.library.custom_op("spherekit::circular_cse_chunked", mutates_args=())
def _circular_cse_chunked(embeddings: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, margin: float,
                          backend: str, workspace_bytes: int) -> tuple[Tensor, Tensor, Tensor]:
    """The scalar loss and its gradient from one chunked pass (spherekit.ops._gram_chunked): (loss, dE', a), the
    embeddings' gradient being a x dE'. With w = 1/(B(B-1)): loss = w sum r_ij^2, G' = r (symmetric), a = 2 w."""
    compute = embeddings.dtype if backend == "triton" else _dispatch.stat_dtype(embeddings.dtype)
    rows_impl = _rows_impl(backend)

    def rows(S, sl):
        return rows_impl.circular_cse_rows(S, sl, labels, row_cos, row_sin, margin=margin)

    total, de, _ = _gram_chunked.gram_fwd_bwd(embeddings, rows, compute_dtype=compute, symmetric=True, need_de=True,
                                              workspace_bytes=workspace_bytes)
    B = embeddings.shape[0]
    w = 1.0 / (B * (B - 1))
    return total * w, de, torch.full((), 2.0 * w, dtype=total.dtype, device=embeddings.device)


@_circular_cse_chunked.register_fake
def _(embeddings, labels, row_cos, row_sin, margin, backend, workspace_bytes):
    compute = embeddings.dtype if backend == "triton" else _dispatch.stat_dtype(embeddings.dtype)
    scalar = embeddings.new_empty((), dtype=_dispatch.stat_dtype(compute))
    return scalar, torch.empty_like(embeddings, dtype=compute), scalar.clone()


# (loss, dE', a) -> the gradient of the embeddings (x a)
_CircularCSEChunked = _chunked_gemm.one_pass_function(
    "_CircularCSEChunked", torch.ops.spherekit.circular_cse_chunked, grad_inputs=(0,), scaled=(True,))


def _rows_impl(backend: str):
    """The row kernel of the chunked path on a backend."""
    if backend == "triton":
        return _backend.triton_kernels("gram_rows")
    return _circular_cse_cpu


def _validate(embeddings, labels, label_angles, margin):
    C.check_tensor("embeddings", embeddings, ndim=2, dtypes=C.FLOAT_DTYPES)
    device = embeddings.device
    C.check_nonempty("embeddings", embeddings)
    batch = embeddings.shape[0]
    if batch < 2:
        raise ValueError(f"embeddings must hold B >= 2 rows (the loss averages over pairs i != j), got shape "
                         f"{tuple(embeddings.shape)}")
    C.check_tensor("labels", labels, ndim=1, dtypes=(torch.int64,), device=device)
    C.check_dim("labels", labels, 0, batch, "the number of embeddings B")
    C.check_tensor("label_angles", label_angles, ndim=1, dtypes=C.FLOAT_DTYPES, device=device)
    C.check_nonempty("label_angles", label_angles)
    if label_angles.requires_grad:
        raise ValueError("label_angles receives no gradient; pass label_angles.detach()")
    C.check_index_range("labels", labels, 0, label_angles.shape[0])
    if isinstance(margin, bool) or not isinstance(margin, (int, float)):
        raise TypeError(f"margin must be a float, got {type(margin).__name__}")
    if not 0.0 <= margin < float("inf"):
        raise ValueError(f"margin must be a finite float >= 0, got {margin}")


def circular_cse(
    embeddings: Tensor,
    labels: Tensor,
    label_angles: Tensor,
    *,
    margin: float = 0.0,
    workspace_bytes: int | None = None,
    backend: str = "auto",
) -> Tensor:
    r"""CircularCSE ("Mapping the Circumplex of Affect", eq. 9): pairwise dot products regress to cos of the
    label-angle gap.

    Args:
        embeddings: (B, d) float32/float16/bfloat16 (float64 on "cpu" / "reference"), used as given (normalise
            first), B >= 2.
        labels: (B,) int64 in [0, E) (outside it: spherekit.checks("full") raises; by default the loss is NaN).
        label_angles: (E,) floating angles in radians (e.g. positions on an emotion circle). Receives
            no gradient.
        margin: m >= 0, the tolerance for pairs sharing a label.
        workspace_bytes: byte budget of the one-pass path's chunk of the B x B residuals (as info_nce's; None: 64
            MiB on the CPU, 32 MiB on a GPU).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns:
        0-dim fp32 tensor (fp64 for fp64 inputs; fp32 under torch.autocast), 1/(B(B-1)) sum_{i != j} l_ij with
        x_ij = <e_i, e_j>,
        l_ij = max(0, |x_ij - 1| - m)^2 if y_i = y_j, else (x_ij - cos(theta_{y_i} - theta_{y_j}))^2.
    """
    _validate(embeddings, labels, label_angles, margin)
    C.check_workspace_bytes(workspace_bytes)
    C.check_finite(embeddings=embeddings, label_angles=label_angles)
    device = embeddings.device
    chosen = _dispatch.resolve("circular_cse", backend, device, embeddings.dtype, SUPPORTED, "embeddings",
                               "embeddings")
    C.check_triton_dtype(chosen, embeddings=embeddings)
    embeddings, labels = poison_bad_labels(embeddings, labels, label_angles.shape[0])
    with _dispatch.autocast_off(device) as autocast_dtype:
        if autocast_dtype is not None and chosen == "triton" and device.type == "cuda":  # products in it
            embeddings = embeddings.to(autocast_dtype)
        if chosen == "reference":
            return reference.circular_cse(embeddings, labels, label_angles, margin=float(margin),
                                          compute_dtype=_dispatch.stat_dtype(embeddings.dtype))
        theta = label_angles.detach().to(_dispatch.stat_dtype(embeddings.dtype))
        row_cos = torch.cos(theta)[labels].contiguous()
        row_sin = torch.sin(theta)[labels].contiguous()
        batch = embeddings.shape[0]
        args = (embeddings.contiguous(), labels.contiguous(), row_cos, row_sin, float(margin))
        if torch.is_grad_enabled() and embeddings.requires_grad:  # the residual tile gives the gradient too
            budget = workspace_bytes or _chunked_gemm.default_workspace_bytes(device)
            return _CircularCSEChunked.apply(*args, chosen, budget)[0]
        rows = _CircularCSEStreaming.apply(*args, chosen)
        return rows.sum() / (batch * (batch - 1))
