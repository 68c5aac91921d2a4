"""What the one-pass InfoNCE path costs, proven on the CPU: its matmul FLOPs (3 x 2BNd, counted from the profiler's
recorded shapes), zero host syncs in the default check mode, a launch count fixed per chunk, and its peak extra
memory at the GPU goal shape (B = N = 16,384, d = 768, bf16; measured on the meta device: no bytes allocated)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from spherekit.ops import _chunked_gemm, _info_nce_chunked, _info_nce_cpu, info_nce
from tests.ops._harness import backends
from tests.ops._hot_path import count_launches, no_host_sync, peak_live_bytes

BACKENDS = backends("info_nce")
MATMULS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::addmm_": (1, 2)}  # name -> the two operands' shapes


def _inputs(B, N, d, k=None, seed=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, d, generator=gen), dim=-1).to(dtype).requires_grad_()
    c = F.normalize(torch.randn(N, d, generator=gen), dim=-1).to(dtype).requires_grad_()
    h = None if k is None else F.normalize(torch.randn(B, k, d, generator=gen), dim=-1).to(dtype).requires_grad_()
    return q, c, h


def _matmul_flops(fn, skip_inner: int | None = None) -> tuple[int, int]:
    """(2 m k n summed over the top-level aten matmuls fn runs, number of bmm calls) from the recorded shapes;
    skip_inner: leave out the products over that inner size k (CircularCSE's 2-wide cos/sin table)."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    flops, bmm = 0, 0
    for event in prof.events():
        if event.cpu_parent is not None and event.cpu_parent.name in MATMULS:
            continue  # a matmul called inside another one is counted once, as the outer call
        if event.name in MATMULS:
            i, j = MATMULS[event.name]
            (m, kk), (kk2, n) = event.input_shapes[i], event.input_shapes[j]
            assert kk == kk2, event.input_shapes
            if kk != skip_inner:
                flops += 2 * m * kk * n
        elif event.name == "aten::bmm":
            bmm += 1
    return flops, bmm


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("candidate_grad", [True, False])
def test_forward_and_backward_do_three_products_of_2BNd(backend, candidate_grad):
    """At B = N = 512, d = 64 (one chunk): logits, dq and dc are 3 x 2BNd FLOPs of aten matmuls in all (2 x 2BNd for
    a frozen bank), the backward none; the flash kernels of the streaming path would show 0 here."""
    B = N = 512
    d = 64
    q, c, _ = _inputs(B, N, d)
    flops, bmm = _matmul_flops(lambda: info_nce(q, c, candidate_grad=candidate_grad, backend=backend).backward())
    assert flops == (3 if candidate_grad else 2) * 2 * B * N * d
    assert bmm == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_products_stay_3x2BNd_over_several_chunks(backend, monkeypatch):
    """Over 4 chunks of 32 rows the big products still sum to 3 x 2BNd; the hard negatives add 2 small batched
    products per chunk (their dots and their share of dq) and nothing else."""
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    B, N, d, k = 128, 160, 32, 2
    q, c, h = _inputs(B, N, d, k)
    element = 4
    flops, bmm = _matmul_flops(lambda: info_nce(q, c, None, h, hard_negative_mode="both", backend=backend,
                                                workspace_bytes=32 * N * element).backward())
    assert flops == 3 * 2 * B * N * d
    assert bmm == 2 * 4


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extras", ["plain", "labels-bias-ignore-hn-tau"])
def test_no_host_sync_in_the_default_check_mode(backend, extras):
    """Forward and backward read no tensor value on the host (Tensor.item / tolist / cpu / numpy / bool / float /
    int raise inside no_host_sync): validation is metadata only, a tensor temperature is guarded on the device."""
    q, c, h = _inputs(24, 30, 16, k=2)
    kw = dict(backend=backend, temperature=torch.tensor(0.07, requires_grad=True))
    if extras != "plain":
        targets = torch.arange(24)
        targets[::5] = -100
        kw.update(targets=targets, hard_negatives=h, hard_negative_mode="both",
                  query_labels=torch.arange(24) % 4, candidate_labels=torch.arange(30) % 4,
                  label_bias=torch.randn(4, 4) * 0.1)
    with no_host_sync():
        loss = info_nce(q, c, **kw)
        loss.backward()
    assert torch.isfinite(loss.detach())


@pytest.mark.parametrize("backend", BACKENDS)
def test_launches_are_fixed_per_chunk_whatever_the_batch(backend, monkeypatch):
    """One chunk costs the same aten operators and Triton launches at B = N = 32 as at B = N = 96; each further
    chunk adds the same number again."""
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)

    def launches(B, chunks):
        q, c, _ = _inputs(B, B, 16)
        rows = -(-B // chunks)
        fn = lambda: info_nce(q, c, backend=backend, workspace_bytes=rows * B * 4).backward()  # noqa: E731
        _, ops, kernels = count_launches(fn)
        return sum(ops.values()) + kernels

    one = launches(32, 1)
    assert launches(96, 1) == one
    per_chunk = launches(32, 2) - one
    assert per_chunk > 0 and launches(96, 3) == one + 2 * per_chunk


@pytest.mark.parametrize("accumulator", ["input", "fp32"])
def test_peak_extra_memory_at_the_gpu_goal_shape(accumulator):
    """B = N = 16,384, d = 768, bf16, the GPU's default 32 MiB chunk: the forward holds the chunk, dQ' and dC' (the
    gradients the backward scales) and nothing of size B x N; measured with the live-bytes tracker on meta tensors
    (the torch row kernel stands in for Triton's, which allocates nothing of its own)."""
    B = N = 16384
    d = 768
    meta = torch.device("meta")
    q = torch.empty(B, d, dtype=torch.bfloat16, device=meta)
    c = torch.empty(N, d, dtype=torch.bfloat16, device=meta)
    targets = torch.empty(B, dtype=torch.int64, device=meta)
    tau = torch.empty((), dtype=torch.float32, device=meta)
    budget = _chunked_gemm.DEFAULT_WORKSPACE_BYTES["cuda"]

    def forward():
        return _info_nce_chunked.info_nce_fwd_bwd(
            q, c, targets, None, tau, None, None, None, rows_backend=_info_nce_cpu, compute_dtype=torch.bfloat16,
            hn_softmax=False, bce_weight=0.0, bce_scale=20.0, bce_bias=0.0, reduction="mean", need_dq=True,
            need_dc=True, need_dh=False, need_dtau=False, workspace_bytes=budget, dc_accumulator=accumulator)

    out, peak = peak_live_bytes(forward)
    MiB = 1 << 20
    grads = B * d * 2 + N * d * (4 if accumulator == "fp32" else 2)  # dQ' bf16, dC' bf16 or fp32
    chunk = _chunked_gemm.chunk_rows(B, N, 2, budget) * N * 2
    assert chunk == budget == 32 * MiB
    assert peak <= grads + chunk + MiB, (peak / MiB, (grads + chunk) / MiB)
    assert out[1].shape == (B, d) and out[2].dtype == (torch.float32 if accumulator == "fp32" else torch.bfloat16)


FAST_MODE_BAD = {  # name -> (overrides of the inputs, what the default check mode must give)
    "nan-query": lambda q, c: dict(queries=q.detach().clone().index_fill_(0, torch.tensor([3]), float("nan"))),
    "inf-candidate": lambda q, c: dict(candidates=c.detach().clone().index_fill_(0, torch.tensor([5]), float("inf"))),
    "target-too-large": lambda q, c: dict(targets=torch.arange(12).index_fill_(0, torch.tensor([2]), 14)),
    "negative-target": lambda q, c: dict(targets=torch.arange(12).index_fill_(0, torch.tensor([4]), -7)),
    "label-outside-bias": lambda q, c: dict(query_labels=torch.arange(12) % 3 + 1,
                                            candidate_labels=torch.arange(14) % 3, label_bias=torch.zeros(3, 3)),
    "nan-temperature": lambda q, c: dict(temperature=torch.tensor(float("nan"))),
    "tiny-temperature": lambda q, c: dict(temperature=torch.tensor(1e-6)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", ["chunked", "streaming"])
@pytest.mark.parametrize("case", sorted(FAST_MODE_BAD))
def test_fast_mode_gives_nan_never_a_finite_wrong_number(backend, path, case):
    """What only spherekit.checks("full") rejects by name gives a NaN loss in the default mode, on both paths (the
    chunked one with a gradient; the streaming one without), and NaN in the gradients it touches."""
    q, c, _ = _inputs(12, 14, 8)
    args = dict(queries=q, candidates=c, backend=backend)
    args.update(FAST_MODE_BAD[case](q, c))
    queries = args.pop("queries")
    if path == "chunked":
        leaf = queries.detach().requires_grad_()
        loss = info_nce(leaf, args.pop("candidates"), **args)
        assert torch.isnan(loss.detach())
        loss.backward()
        assert torch.isnan(leaf.grad).any()
    else:
        with torch.no_grad():
            assert torch.isnan(info_nce(queries.detach(), args.pop("candidates").detach(), **args))


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_host_sync_on_the_streaming_path(backend):
    """reduction="none" (forward + recomputing backward) and a no-grad loss read no tensor value on the host."""
    q, c, h = _inputs(24, 30, 16, k=2)
    with no_host_sync():
        info_nce(q, c, None, h, hard_negative_mode="both", reduction="none", backend=backend,
                 temperature=torch.tensor(0.07)).sum().backward()
        with torch.no_grad():
            info_nce(q, c, backend=backend)
