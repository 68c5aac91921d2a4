"""info_nce: InfoNCE / MNRL over in-batch candidates and hard negatives, fused with a BCE hard-negative
term, without materialising the B x N logit matrix. The math is in spherekit.reference.info_nce.

The public function validates and normalises arguments, then calls two torch.library custom ops
(spherekit::info_nce_fwd / spherekit::info_nce_bwd) so torch.compile traces through them.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from .. import _backend, reference
from ..reference.contrastive import IGNORE_INDEX
from . import _chunked_gemm, _dispatch
from . import checks as C
from . import _info_nce_chunked as _info_nce_chunked_impl
from . import _info_nce_cpu

HARD_NEGATIVE_MODES = ("bce", "softmax", "both")
REDUCTIONS = ("mean", "sum", "none")
SUPPORTED = ("triton", "cpu", "reference")


def _impl(backend: str):
    """The forward / backward launchers (recompute in the backward) of a backend."""
    if backend == "triton":
        return _backend.triton_kernels("info_nce")
    return _info_nce_cpu


def _rows_impl(backend: str):
    """The row kernel of the chunked path (spherekit.ops._info_nce_chunked) on a backend."""
    if backend == "triton":
        return _backend.triton_kernels("info_nce_rows")
    return _info_nce_cpu


@torch.library.custom_op("spherekit::info_nce_fwd", mutates_args=())
def _info_nce_fwd(
    queries: Tensor, candidates: Tensor, targets: Tensor, hard_negatives: Optional[Tensor], temperature: Tensor,
    query_labels: Optional[Tensor], candidate_labels: Optional[Tensor], label_bias: Optional[Tensor],
    hn_softmax: bool, bce_weight: float, bce_scale: float, bce_bias: float, backend: str,
) -> tuple[Tensor, Tensor]:
    return _impl(backend).info_nce_fwd(
        queries, candidates, targets, hard_negatives, temperature, query_labels, candidate_labels, label_bias,
        hn_softmax=hn_softmax, bce_weight=bce_weight, bce_scale=bce_scale, bce_bias=bce_bias,
    )


@_info_nce_fwd.register_fake
def _(queries, *args):
    rows = queries.new_empty(queries.shape[0], dtype=_dispatch.stat_dtype(queries.dtype))
    return rows, torch.empty_like(rows)


@torch.library.custom_op("spherekit::info_nce_bwd", mutates_args=())
def _info_nce_bwd(
    grad_rows: Tensor, queries: Tensor, candidates: Tensor, targets: Tensor, hard_negatives: Optional[Tensor],
    temperature: Tensor, query_labels: Optional[Tensor], candidate_labels: Optional[Tensor],
    label_bias: Optional[Tensor], lse: Tensor, hn_softmax: bool, bce_weight: float, bce_scale: float,
    bce_bias: float, need_dq: bool, need_dc: bool, need_dh: bool, need_dtau: bool, backend: str,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    grads = _impl(backend).info_nce_bwd(
        grad_rows, queries, candidates, targets, hard_negatives, temperature, query_labels, candidate_labels,
        label_bias, lse, hn_softmax=hn_softmax, bce_weight=bce_weight, bce_scale=bce_scale, bce_bias=bce_bias,
        need_dq=need_dq, need_dc=need_dc, need_dh=need_dh, need_dtau=need_dtau,
    )
    like = (queries, candidates, hard_negatives, temperature)
    # custom ops return tensors, never None: a gradient that was not asked for is an empty tensor
    return tuple(
        g.to(ref.dtype) if g is not None else queries.new_empty(0) for g, ref in zip(grads, like)
    )


@_info_nce_bwd.register_fake
def _(grad_rows, queries, candidates, targets, hard_negatives, temperature, ql, cl, lb, lse, hn_softmax,
      bce_weight, bce_scale, bce_bias, need_dq, need_dc, need_dh, need_dtau, backend):
    def like(flag, ref):
        return torch.empty_like(ref) if flag and ref is not None else queries.new_empty(0)

    return like(need_dq, queries), like(need_dc, candidates), like(need_dh, hard_negatives), \
        like(need_dtau, temperature)


class _InfoNCEStreaming(torch.autograd.Function):
    """Autograd of the streaming path: the forward keeps per-row statistics, the backward recomputes the logits.
    A torch.autograd.Function with setup_context (over custom ops without autograd of their own), so that
    torch.func transforms (grad, vjp) and torch.compile both see through it."""

    @staticmethod
    def forward(q, c, t, h, tau, ql, cl, lb, hn_softmax, bce_weight, bce_scale, bce_bias, backend):
        return torch.ops.spherekit.info_nce_fwd(q, c, t, h, tau, ql, cl, lb, hn_softmax, bce_weight, bce_scale,
                                                bce_bias, backend)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (q, c, t, h, tau, ql, cl, lb, hn_softmax, bce_weight, bce_scale, bce_bias, backend) = inputs
        ctx.save_for_backward(q, c, t, h, tau, ql, cl, lb, output[1])
        ctx.options = (hn_softmax, bce_weight, bce_scale, bce_bias)
        ctx.backend = backend
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, grad_rows, _grad_lse):
        q, c, t, h, tau, ql, cl, lb, lse = ctx.saved_tensors
        need = ctx.needs_input_grad
        need_dq, need_dc, need_dh, need_dtau = need[0], need[1], need[3] and h is not None, need[4]
        with torch.no_grad():  # no double backward; and under torch.func no second autograd layer
            dq, dc, dh, dtau = torch.ops.spherekit.info_nce_bwd(
                grad_rows.contiguous(), q, c, t, h, tau, ql, cl, lb, lse, *ctx.options,
                need_dq, need_dc, need_dh, need_dtau, ctx.backend,
            )
        return (dq if need_dq else None, dc if need_dc else None, None, dh if need_dh else None,
                dtau if need_dtau else None) + (None,) * 8


@torch.library.custom_op("spherekit::info_nce_chunked", mutates_args=())
def _info_nce_chunked(
    queries: Tensor, candidates: Tensor, targets: Tensor, hard_negatives: Optional[Tensor], temperature: Tensor,
    query_labels: Optional[Tensor], candidate_labels: Optional[Tensor], label_bias: Optional[Tensor],
    hn_softmax: bool, bce_weight: float, bce_scale: float, bce_bias: float, reduction: str,
    need_dq: bool, need_dc: bool, need_dh: bool, need_dtau: bool, backend: str, workspace_bytes: int,
    dc_accumulator: str,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """A scalar loss and its gradients from one chunked pass (spherekit.ops._info_nce_chunked):
    (loss, dQ', dC', dH', dtau, a), the gradients of q, c, h being a x dQ', a x dC', a x dH' (empty if not needed)."""
    out = _info_nce_chunked_impl.info_nce_fwd_bwd(
        queries, candidates, targets, hard_negatives, temperature, query_labels, candidate_labels, label_bias,
        rows_backend=_rows_impl(backend), compute_dtype=_compute_dtype(queries.dtype, backend), hn_softmax=hn_softmax,
        bce_weight=bce_weight, bce_scale=bce_scale, bce_bias=bce_bias, reduction=reduction, need_dq=need_dq,
        need_dc=need_dc, need_dh=need_dh, need_dtau=need_dtau, workspace_bytes=workspace_bytes,
        dc_accumulator=dc_accumulator,
    )
    return tuple(x if x is not None else queries.new_empty(0) for x in out)


@_info_nce_chunked.register_fake
def _(queries, candidates, targets, hard_negatives, temperature, ql, cl, lb, hn_softmax, bce_weight, bce_scale,
      bce_bias, reduction, need_dq, need_dc, need_dh, need_dtau, backend, workspace_bytes, dc_accumulator):
    compute = _compute_dtype(queries.dtype, backend)
    stat = _dispatch.stat_dtype(compute)
    acc = torch.float32 if dc_accumulator == "fp32" and compute in (torch.float16, torch.bfloat16) else compute

    def like(flag, ref, dtype=compute):
        return ref.new_empty(ref.shape, dtype=dtype) if flag and ref is not None else queries.new_empty(0)

    scalar = queries.new_empty((), dtype=stat)
    return (scalar, like(need_dq, queries), like(need_dc, candidates, acc), like(need_dh, hard_negatives),
            scalar.clone() if need_dtau else queries.new_empty(0), scalar.clone())


# (loss, dQ', dC', dH', dtau, a) -> the gradients of queries, candidates, hard_negatives (x a) and temperature
_InfoNCEChunked = _chunked_gemm.one_pass_function("_InfoNCEChunked", torch.ops.spherekit.info_nce_chunked,
                                                  grad_inputs=(0, 1, 3, 4), scaled=(True, True, True, False))


def _compute_dtype(dtype: torch.dtype, backend: str) -> torch.dtype:
    """The dtype of the chunked path's GEMMs and logits buffer: the inputs' on Triton (fp32 accumulation inside the
    GEMMs, fp32 statistics in the row kernel), fp32 on the CPU (fp64 for fp64 inputs)."""
    return dtype if backend == "triton" else _dispatch.stat_dtype(dtype)


def _validate(q, c, targets, h, query_labels, candidate_labels, label_bias, hard_negative_mode, reduction,
              bce_weight, bce_scale, bce_bias):
    C.check_tensor("queries", q, ndim=2, dtypes=C.FLOAT_DTYPES)
    device, dtype = q.device, q.dtype
    C.check_nonempty("queries", q)
    C.check_tensor("candidates", c, ndim=2, device=device)
    if c.dtype != dtype:
        raise TypeError(f"candidates must have the dtype of queries ({dtype}), got {c.dtype}")
    C.check_nonempty("candidates", c)
    C.check_dim("candidates", c, 1, q.shape[1], "the embedding size d of queries")
    batch, n_cand = q.shape[0], c.shape[0]
    if targets is None:
        if n_cand < batch:
            raise ValueError(
                f"targets=None pairs query i with candidate i, which needs N >= B; got B={batch}, N={n_cand}"
            )
    else:
        C.check_tensor("targets", targets, ndim=1, dtypes=(torch.int64,), device=device)
        C.check_dim("targets", targets, 0, batch, "the number of queries B")
        C.check_index_range("targets", targets, 0, n_cand, ignore=IGNORE_INDEX)
    if h is not None:
        C.check_tensor("hard_negatives", h, ndim=3, device=device)
        if h.dtype != dtype:
            raise TypeError(f"hard_negatives must have the dtype of queries ({dtype}), got {h.dtype}")
        C.check_dim("hard_negatives", h, 0, batch, "the number of queries B")
        C.check_dim("hard_negatives", h, 2, q.shape[1], "the embedding size d of queries")
        if h.shape[1] == 0:
            raise ValueError("hard_negatives has k=0 negatives per query; pass None instead")
    if (query_labels is None) != (candidate_labels is None):
        raise ValueError("query_labels and candidate_labels must be given together")
    if query_labels is not None:
        C.check_tensor("query_labels", query_labels, ndim=1, dtypes=(torch.int64,), device=device)
        C.check_dim("query_labels", query_labels, 0, batch, "the number of queries B")
        C.check_tensor("candidate_labels", candidate_labels, ndim=1, dtypes=(torch.int64,), device=device)
        C.check_dim("candidate_labels", candidate_labels, 0, n_cand, "the number of candidates N")
    if label_bias is not None:
        if query_labels is None:
            raise ValueError("label_bias is indexed by labels: pass query_labels and candidate_labels too")
        C.check_tensor("label_bias", label_bias, ndim=2, dtypes=C.FLOAT_DTYPES, device=device)
        if label_bias.shape[0] != label_bias.shape[1]:
            raise ValueError(f"label_bias must be square (E, E), got shape {tuple(label_bias.shape)}")
        if label_bias.requires_grad:
            raise ValueError("label_bias receives no gradient; pass label_bias.detach()")
        n_labels = label_bias.shape[0]
        C.check_index_range("query_labels", query_labels, 0, n_labels)
        C.check_index_range("candidate_labels", candidate_labels, 0, n_labels)
    C.check_choice("hard_negative_mode", hard_negative_mode, HARD_NEGATIVE_MODES)
    C.check_choice("reduction", reduction, REDUCTIONS)
    for name, value in (("bce_weight", bce_weight), ("bce_scale", bce_scale), ("bce_bias", bce_bias)):
        if not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
            raise ValueError(f"{name} must be a finite float, got {value!r}")


def _check_denominators(targets, h, hn_softmax, query_labels, candidate_labels, n_cand, paired):
    """Each valid row needs a negative: another allowed candidate, or a hard negative in the softmax. From the
    shapes when targets=None (paired: every row valid); else in the "full" check mode only (in the "fast" mode such
    a row's loss is its exact value, 0)."""
    if hn_softmax and h is not None:
        return
    if paired and query_labels is None and n_cand < 2:
        raise ValueError("every query's denominator holds only its target (N=1, no hard negatives in the "
                         "softmax): the loss would be identically 0")
    if not C.full_checks():
        return
    valid = targets != IGNORE_INDEX
    if query_labels is None:
        if n_cand < 2 and bool(valid.any()):
            raise ValueError("every query's denominator holds only its target (N=1, no hard negatives in the "
                             "softmax): the loss would be identically 0")
        return
    # candidates whose label differs from the query's, counted per label via sorting: O((B + N) log N)
    sorted_cl, _ = torch.sort(candidate_labels)
    same = torch.searchsorted(sorted_cl, query_labels, right=True) - torch.searchsorted(sorted_cl, query_labels)
    n_other = n_cand - same
    bad = valid & (n_other == 0)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise ValueError(
            f"query {row}: every candidate shares its label {int(query_labels[row])}, so after masking false "
            "negatives its denominator holds only the target (no negatives)"
        )


def info_nce(
    queries: Tensor,
    candidates: Tensor,
    targets: Tensor | None = None,
    hard_negatives: Tensor | None = None,
    *,
    temperature: float | Tensor = 0.05,
    hard_negative_mode: str | None = None,
    bce_weight: float = 0.5,
    bce_scale: float = 20.0,
    bce_bias: float = 0.0,
    query_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    label_bias: Tensor | None = None,
    candidate_grad: bool = True,
    reduction: str = "mean",
    workspace_bytes: int | None = None,
    dc_accumulator: str = "input",
    backend: str = "auto",
) -> Tensor:
    r"""InfoNCE (MNRL) with in-batch candidates, hard negatives and a fused BCE hard-negative term.

    Args:
        queries: (B, d) float32/float16/bfloat16 (float64 on backends "cpu" and "reference"), used as given
            (normalise first for cosine).
        candidates: (N, d), in-batch positives optionally followed by extra shared negatives.
        targets: (B,) int64 index of each query's positive in candidates; None means arange(B) (needs
            N >= B). Rows with target IGNORE_INDEX (-100) are ignored.
        hard_negatives: (B, k, d) per-query hard negatives, or None.
        temperature: finite and >= 1e-4 (ops.checks.MIN_TEMPERATURE: logits are dot products / temperature
            and must stay in fp32 range); a float or a 0-dim tensor (with requires_grad it receives its gradient).
        hard_negative_mode: what the hard negatives do: "softmax" (the default, as in sentence-transformers'
            MultipleNegativesRankingLoss and PyLate: they join the query's denominator), "bce" (a BCE term only,
            B1 of "Principles of Concept Representation in Sentence Encoders") or "both" (B1-unified plus BCE).
            Setting it without hard_negatives is an error (it would be ignored).
        bce_weight, bce_scale, bce_bias: the BCE term of the "bce" and "both" modes: logit z = bce_scale * <q, h>
            + bce_bias (defaults 0.5, 20 = 1 / temperature, 0: every hard negative gets a gradient, as the concept
            paper's B1 wants); the positive pair has label 1, hard negatives label 0; the row's BCE is the mean over
            its k + 1 pairs. A negative bias (SigLIP's -10: z = 20 cos - 10) saturates the term for negatives below
            cos 0.5, so only the hard ones near the positive get a gradient.
        query_labels, candidate_labels: int64 ids; a candidate sharing the query's label, other than
            its target, is left out of the denominator (false negatives).
        label_bias: (E, E) additive logit bias [query_label, candidate_label] on negatives (not on the
            target), e.g. SoftCSE weights as log w. Receives no gradient.
        candidate_grad: False treats candidates as a frozen bank: no gradient, no memory for one.
        reduction: "mean" (over non-ignored rows; 0 when all rows are ignored), "sum" or "none".
        workspace_bytes: byte budget of the logits chunk of the one-pass path (R = workspace_bytes // (N x
            element size) query rows at a time, at least 64; None: 64 MiB on the CPU, 32 MiB on a GPU,
            spherekit.ops._chunked_gemm.DEFAULT_WORKSPACE_BYTES).
        dc_accumulator: "input" (the candidates' gradient accumulates over the chunks in the inputs' dtype) or
            "fp32" (an fp32 accumulator: N x d x 4 bytes more, for fp16/bf16 inputs on a GPU; the CPU path is fp32).
        backend: "auto" | "triton" | "cpu" | "reference" (see spherekit._backend). "triton" under the Triton
            interpreter (TRITON_INTERPRET=1, CPU tensors) refuses bfloat16: its bf16 arithmetic is wrong.

    Returns the loss in fp32 (fp64 for fp64 inputs), also under torch.autocast: there the GPU path runs its
    products in the autocast dtype (as sentence-transformers' MNRL matmul would), the CPU path in fp32.

    Paths: a scalar loss with a gradient takes one chunked pass that computes the gradients in the forward
    (spherekit.ops._info_nce_chunked: 3 x 2BNd matmul FLOPs, cuBLAS / BLAS GEMMs and a fused row kernel); the
    backward only scales them. reduction="none", or no gradient, streams the logits without storing them
    (kernels/info_nce.py on a GPU, tiled torch on the CPU) and recomputes them in the backward.

    Checks: shapes, dtypes, devices and options always (host metadata, no sync). In the default "fast" check mode
    no tensor value is read: a NaN / Inf input gives a NaN / Inf loss, a target or label out of range a NaN loss;
    spherekit.checks("full") raises named errors for those instead, and for rows whose denominator holds only
    their target.

    Math per valid row i (see spherekit.reference.info_nce):
        loss_i = logsumexp_{allowed j [+ hard negatives]} (<q_i, c_j>/tau + bias_ij) - <q_i, c_t>/tau
                 + bce_weight * mean BCE over (q_i, c_t) [label 1] and (q_i, h_ik) [label 0].
    """
    if hard_negative_mode is not None:
        C.check_choice("hard_negative_mode", hard_negative_mode, HARD_NEGATIVE_MODES)
    if hard_negative_mode is not None and hard_negatives is None:
        raise ValueError(f"hard_negative_mode={hard_negative_mode!r} needs hard_negatives (a (B, k, d) tensor); "
                         "without hard negatives leave it unset")
    hard_negative_mode = "softmax" if hard_negative_mode is None else hard_negative_mode
    _validate(queries, candidates, targets, hard_negatives, query_labels, candidate_labels, label_bias,
              hard_negative_mode, reduction, bce_weight, bce_scale, bce_bias)
    C.check_choice("dc_accumulator", dc_accumulator, _chunked_gemm.ACCUMULATORS)
    C.check_workspace_bytes(workspace_bytes)
    device = queries.device
    chosen = _dispatch.resolve("info_nce", backend, device, queries.dtype, SUPPORTED, "queries",
                               "queries / candidates / hard_negatives")
    C.check_triton_dtype(chosen, queries=queries)
    tau = C.as_temperature(temperature, device)
    C.check_finite(queries=queries, candidates=candidates, hard_negatives=hard_negatives)
    if label_bias is not None:
        C.check_log_weights("label_bias", label_bias)
    paired = targets is None
    if paired:
        targets = torch.arange(queries.shape[0], device=device)
    hn_softmax = hard_negative_mode in ("softmax", "both")
    use_bce = hard_negatives is not None and hard_negative_mode in ("bce", "both")
    _check_denominators(targets, hard_negatives, hn_softmax, query_labels, candidate_labels, candidates.shape[0],
                        paired)
    if not candidate_grad:
        candidates = candidates.detach()
    with _dispatch.autocast_off(device) as autocast_dtype:
        if autocast_dtype is not None and chosen == "triton" and device.type == "cuda":  # products in it
            queries, candidates = queries.to(autocast_dtype), candidates.to(autocast_dtype)
            hard_negatives = None if hard_negatives is None else hard_negatives.to(autocast_dtype)
        if chosen == "reference":
            return reference.info_nce(
                queries, candidates, targets, hard_negatives, temperature=tau, hard_negative_mode=hard_negative_mode,
                bce_weight=bce_weight if use_bce else 0.0, bce_scale=bce_scale, bce_bias=bce_bias,
                query_labels=query_labels, candidate_labels=candidate_labels, label_bias=label_bias,
                reduction=reduction, compute_dtype=_dispatch.stat_dtype(queries.dtype),
            )
        args = (queries.contiguous(), candidates.contiguous(), targets.contiguous(),
                None if hard_negatives is None else hard_negatives.contiguous(), tau, query_labels, candidate_labels,
                None if label_bias is None else label_bias.float().contiguous(), hn_softmax,
                float(bce_weight) if use_bce else 0.0, float(bce_scale), float(bce_bias))
        need = (queries.requires_grad, candidates.requires_grad,
                hard_negatives is not None and hard_negatives.requires_grad, tau.requires_grad)
        if reduction != "none" and torch.is_grad_enabled() and any(need):
            budget = workspace_bytes or _chunked_gemm.default_workspace_bytes(device)
            return _InfoNCEChunked.apply(*args, reduction, *need, chosen, budget, dc_accumulator)[0]
        rows, _ = _InfoNCEStreaming.apply(*_poison_bad_rows(*args), chosen)
        if reduction == "none":
            return rows
        if reduction == "sum":
            return rows.sum()
        return rows.sum() / (targets != IGNORE_INDEX).sum().clamp_min(1).to(rows.dtype)


def _poison_bad_rows(q, c, targets, h, tau, ql, cl, label_bias, *options):
    """The streaming path's answer to indices that only the "full" check mode rejects, without reading them on the
    host: a row whose target (or, with label_bias, whose label) is out of range gets a NaN query, a candidate whose
    label is out of range a NaN embedding, and the indices are clamped into range, so those rows' losses and every
    gradient they touch are NaN, never finite and wrong. (The chunked path's row kernels do the same in place.)"""
    N = c.shape[0]
    bad = (targets != IGNORE_INDEX) & ((targets < 0) | (targets >= N))
    targets = torch.where(bad, torch.zeros_like(targets), targets)
    if label_bias is not None:
        E = label_bias.shape[0]
        bad = bad | (ql < 0) | (ql >= E)
        c = c + torch.where((cl < 0) | (cl >= E), float("nan"), 0.0).to(c.dtype)[:, None]
        ql, cl = ql.clamp(0, E - 1), cl.clamp(0, E - 1)
    q = q + torch.where(bad, float("nan"), 0.0).to(q.dtype)[:, None]
    return (q, c, targets, h, tau, ql, cl, label_bias) + options
