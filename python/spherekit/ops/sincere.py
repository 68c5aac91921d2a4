"""sincere: SINCERE ("Mapping the Circumplex of Affect" (arXiv:2601.06575), eq. 5-6) and, with a label bias,
SoftCSE ("Mapping the Circumplex of Affect", eq. 7-8), without materialising the B x B logit matrix. The math is in
spherekit.reference.sincere.

The public function validates and normalises arguments, computes the SoftCSE per-anchor weight shift
from label counts (O(B + E^2)), then calls two torch.library custom ops (spherekit::sincere_fwd /
spherekit::sincere_bwd) so torch.compile traces through them. With gradients, a third op (spherekit::sincere_chunked,
on every backend) computes the scalar loss and its gradients in one chunked pass (spherekit.ops._gram_chunked).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from .. import _backend, reference
from . import _chunked_gemm, _dispatch, _gram_chunked
from . import checks as C
from . import _sincere_cpu

SUPPORTED = ("triton", "cpu", "reference")


def sincere_bias_shift(labels: Tensor, label_bias: Tensor) -> Tensor:
    r"""shift_i = -log( (1/|N_i|) sum_{k in N_i} exp(label_bias[y_i, y_k]) ), N_i = {k : y_k != y_i}: the
    per-anchor shift of SoftCSE's negative weights (math: spherekit.reference.contrastive.sincere_bias_shift),
    from label counts in O(B + E^2), never a B x B matrix. Anchors without negatives get 0. -> (B,) fp32."""
    n_labels = label_bias.shape[0]
    counts = torch.zeros(n_labels, dtype=torch.float64, device=labels.device).index_add_(  # exact counts; shapes
        0, labels, torch.ones_like(labels, dtype=torch.float64))  # that do not depend on the data (meta, compile)
    lb = label_bias.to(torch.float64)
    weights = torch.exp(lb).masked_fill(torch.eye(n_labels, dtype=torch.bool, device=lb.device), 0.0)
    per_label_sum = weights @ counts  # sum over negatives of w, per anchor label
    n_neg = (labels.numel() - counts).to(torch.float64)
    shift = torch.log(n_neg) - torch.log(per_label_sum)
    shift = torch.where((n_neg > 0) & (per_label_sum > 0), shift, torch.zeros_like(shift))
    return shift[labels].to(torch.float32)


def _impl(backend: str):
    if backend == "triton":
        return _backend.triton_kernels("sincere")
    return _sincere_cpu


@torch.library.custom_op("spherekit::sincere_fwd", mutates_args=())
def _sincere_fwd(
    embeddings: Tensor, labels: Tensor, temperature: Tensor, label_bias: Optional[Tensor], shift: Optional[Tensor],
    backend: str,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """-> (loss per anchor, L = logsumexp over negatives, U = sum of sigmoids over positives, |P|), (B,) fp32."""
    return _impl(backend).sincere_fwd(embeddings, labels, temperature, label_bias, shift)


@_sincere_fwd.register_fake
def _(embeddings, *args):
    rows = embeddings.new_empty(embeddings.shape[0], dtype=_dispatch.stat_dtype(embeddings.dtype))
    return rows, torch.empty_like(rows), torch.empty_like(rows), torch.empty_like(rows)


@torch.library.custom_op("spherekit::sincere_bwd", mutates_args=())
def _sincere_bwd(
    grad_rows: Tensor, embeddings: Tensor, labels: Tensor, temperature: Tensor, label_bias: Optional[Tensor],
    shift: Optional[Tensor], lse: Tensor, usum: Tensor, npos: Tensor, need_de: bool, need_dtau: bool, backend: str,
) -> tuple[Tensor, Tensor]:
    de, dtau = _impl(backend).sincere_bwd(grad_rows, embeddings, labels, temperature, label_bias, shift, lse, usum,
                                          npos, need_de=need_de, need_dtau=need_dtau)
    # custom ops return tensors, never None: a gradient that was not asked for is an empty tensor
    return (de.to(embeddings.dtype) if de is not None else embeddings.new_empty(0),
            dtau.to(temperature.dtype) if dtau is not None else embeddings.new_empty(0))


@_sincere_bwd.register_fake
def _(grad_rows, embeddings, labels, temperature, label_bias, shift, lse, usum, npos, need_de, need_dtau, backend):
    return (torch.empty_like(embeddings) if need_de else embeddings.new_empty(0),
            torch.empty_like(temperature) if need_dtau else embeddings.new_empty(0))


class _SincereStreaming(torch.autograd.Function):
    """Autograd of the forward + recomputing backward (a Function with setup_context over custom ops without
    autograd of their own: torch.func transforms and torch.compile both see through it)."""

    @staticmethod
    def forward(e, y, tau, lb, shift, backend):
        return torch.ops.spherekit.sincere_fwd(e, y, tau, lb, shift, backend)

    @staticmethod
    def setup_context(ctx, inputs, output):
        e, y, tau, lb, shift, backend = inputs
        _, lse, usum, npos = output
        ctx.save_for_backward(e, y, tau, lb, shift, lse, usum, npos)
        ctx.backend = backend
        ctx.mark_non_differentiable(lse, usum, npos)

    @staticmethod
    def backward(ctx, grad_rows, _grad_lse, _grad_usum, _grad_npos):
        e, y, tau, lb, shift, lse, usum, npos = ctx.saved_tensors
        need_de, need_dtau = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
        with torch.no_grad():  # no double backward; and under torch.func no second autograd layer
            de, dtau = torch.ops.spherekit.sincere_bwd(grad_rows.contiguous(), e, y, tau, lb, shift, lse, usum,
                                                       npos, need_de, need_dtau, ctx.backend)
        return de if need_de else None, None, dtau if need_dtau else None, None, None, None


@torch.library.custom_op("spherekit::sincere_chunked", mutates_args=())
def _sincere_chunked(
    embeddings: Tensor, labels: Tensor, temperature: Tensor, label_bias: Optional[Tensor], shift: Optional[Tensor],
    need_de: bool, need_dtau: bool, backend: str, workspace_bytes: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The scalar loss and its gradients from one chunked pass (spherekit.ops._gram_chunked): (loss, dE', dtau, a),
    the embeddings' gradient being a x dE' (empty tensors for what is not needed)."""
    compute = embeddings.dtype if backend == "triton" else _dispatch.stat_dtype(embeddings.dtype)
    stat = _dispatch.stat_dtype(compute)
    tau = temperature.to(stat)
    npos = _sincere_cpu.positive_counts(labels)
    w = 1.0 / (npos > 0).sum().clamp_min(1).to(stat)
    rows_impl = _rows_impl(backend)

    def rows(S, sl):
        return rows_impl.sincere_rows(S, sl, labels, tau, label_bias, shift, npos, need_stat=need_dtau)

    loss, de, r = _gram_chunked.gram_fwd_bwd(embeddings, rows, compute_dtype=compute, symmetric=False,
                                             need_de=need_de, workspace_bytes=workspace_bytes)
    a = w / tau
    empty = embeddings.new_empty(0)
    return (loss * w, de if de is not None else empty, -(a / tau) * r if need_dtau else empty, a)


@_sincere_chunked.register_fake
def _(embeddings, labels, temperature, label_bias, shift, need_de, need_dtau, backend, workspace_bytes):
    compute = embeddings.dtype if backend == "triton" else _dispatch.stat_dtype(embeddings.dtype)
    scalar = embeddings.new_empty((), dtype=_dispatch.stat_dtype(compute))
    return (scalar, torch.empty_like(embeddings, dtype=compute) if need_de else embeddings.new_empty(0),
            scalar.clone() if need_dtau else embeddings.new_empty(0), scalar.clone())


# (loss, dE', dtau, a) -> the gradients of the embeddings (x a) and the temperature
_SincereChunked = _chunked_gemm.one_pass_function("_SincereChunked", torch.ops.spherekit.sincere_chunked,
                                                  grad_inputs=(0, 2), scaled=(True, False))


def _rows_impl(backend: str):
    """The row kernel of the chunked path on a backend."""
    if backend == "triton":
        return _backend.triton_kernels("gram_rows")
    return _sincere_cpu


def _validate(embeddings, labels, label_bias):
    C.check_tensor("embeddings", embeddings, ndim=2, dtypes=C.FLOAT_DTYPES)
    device = embeddings.device
    C.check_nonempty("embeddings", embeddings)
    batch = embeddings.shape[0]
    if batch < 2:
        raise ValueError(f"embeddings must hold B >= 2 rows (an anchor needs a positive), got shape "
                         f"{tuple(embeddings.shape)}")
    C.check_tensor("labels", labels, ndim=1, dtypes=(torch.int64,), device=device)
    C.check_dim("labels", labels, 0, batch, "the number of embeddings B")
    if label_bias is not None:
        C.check_tensor("label_bias", label_bias, ndim=2, dtypes=C.FLOAT_DTYPES, device=device)
        if label_bias.shape[0] != label_bias.shape[1] or label_bias.shape[0] == 0:
            raise ValueError(f"label_bias must be square and non-empty (E, E), got shape {tuple(label_bias.shape)}")
        if label_bias.requires_grad:
            raise ValueError("label_bias receives no gradient; pass label_bias.detach()")
        C.check_index_range("labels", labels, 0, label_bias.shape[0])
        C.check_log_weights("label_bias", label_bias)
    if not C.full_checks():  # the label scans below read the labels on the host
        return
    # positives and negatives from label counts, O(B log B): never a B x B mask
    _, counts = torch.unique(labels, return_counts=True)
    if counts.numel() == 1:
        raise ValueError(f"labels: all {batch} embeddings share one label, so no anchor has a negative")
    if int(counts.max()) < 2:
        raise ValueError("labels: no anchor has a positive; SINCERE needs two embeddings sharing a label")


def sincere(
    embeddings: Tensor,
    labels: Tensor,
    *,
    temperature: float | Tensor = 0.05,
    label_bias: Tensor | None = None,
    workspace_bytes: int | None = None,
    backend: str = "auto",
) -> Tensor:
    r"""SINCERE supervised contrastive loss; with ``label_bias`` it is SoftCSE ("Mapping the Circumplex of Affect",
    eq. 5-8).

    Args:
        embeddings: (B, d) float32/float16/bfloat16 (float64 on "cpu" / "reference"), used as given (normalise
            first for cosine), B >= 2.
        labels: (B,) int64 class ids. Positives of anchor i: the other rows with its label; negatives:
            the rows with another label. At least one pair should share a label and not all labels be equal:
            spherekit.checks("full") raises otherwise; by default (no label scan) such a batch's loss is 0.
        temperature: finite and >= 1e-4 (ops.checks.MIN_TEMPERATURE: logits are dot products / temperature
            and must stay in fp32 range); a float or a 0-dim tensor (with requires_grad it receives its gradient).
        label_bias: (E, E) log-weights of negatives, label_bias[y_anchor, y_negative]; -inf means weight
            0 (e.g. SoftCSE's log(1 - cos(theta_a - theta_b))), NaN/+inf are errors; labels must lie in
            [0, E). The weights are renormalised per anchor to mean 1 over its in-batch negatives (eq. 8).
            Receives no gradient.
        workspace_bytes: byte budget of the one-pass path's chunk of the B x B logits (as info_nce's; None: 64 MiB
            on the CPU, 32 MiB on a GPU).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns:
        0-dim fp32 tensor (fp64 for fp64 inputs; fp32 under torch.autocast, whose dtype the GPU products then
        run in): the mean over anchors with at least one positive of
        (1/|P_i|) sum_{j in P_i} softplus(L_i - s_ij), with s = e e^T / tau and
        L_i = logsumexp_{k: y_k != y_i} (s_ik + label_bias[y_i, y_k] + shift_i).
    """
    _validate(embeddings, labels, label_bias)
    C.check_workspace_bytes(workspace_bytes)
    device = embeddings.device
    chosen = _dispatch.resolve("sincere", backend, device, embeddings.dtype, SUPPORTED, "embeddings", "embeddings")
    C.check_triton_dtype(chosen, embeddings=embeddings)
    tau = C.as_temperature(temperature, device)
    C.check_finite(embeddings=embeddings)
    if label_bias is not None:
        embeddings, labels = poison_bad_labels(embeddings, labels, label_bias.shape[0])
    with _dispatch.autocast_off(device) as autocast_dtype:
        if autocast_dtype is not None and chosen == "triton" and device.type == "cuda":  # products in it
            embeddings = embeddings.to(autocast_dtype)
        if chosen == "reference":
            return reference.sincere(embeddings, labels, temperature=tau, label_bias=label_bias,
                                     compute_dtype=_dispatch.stat_dtype(embeddings.dtype))
        lb = shift = None
        if label_bias is not None:
            lb = label_bias.detach().float().contiguous()
            shift = sincere_bias_shift(labels, lb).contiguous()
        args = (embeddings.contiguous(), labels.contiguous(), tau, lb, shift)
        need = (embeddings.requires_grad, tau.requires_grad)
        if torch.is_grad_enabled() and any(need):  # the gradients come out of the forward's chunked pass
            budget = workspace_bytes or _chunked_gemm.default_workspace_bytes(device)
            return _SincereChunked.apply(*args, *need, chosen, budget)[0]
        rows, _, _, npos = _SincereStreaming.apply(*args, chosen)
        return rows.sum() / (npos > 0).sum().clamp_min(1).to(rows.dtype)


def poison_bad_labels(embeddings: Tensor, labels: Tensor, n_labels: int) -> tuple[Tensor, Tensor]:
    """The default check mode's answer to labels outside [0, n_labels), without reading them on the host: those
    rows' embeddings become NaN and their labels are clamped into range, so the loss and its gradients are NaN,
    never finite and wrong (spherekit.checks("full") raises naming `labels` instead)."""
    bad = (labels < 0) | (labels >= n_labels)
    poisoned = embeddings + torch.where(bad, float("nan"), 0.0).to(embeddings.dtype)[:, None]
    return poisoned, labels.clamp(0, n_labels - 1)
