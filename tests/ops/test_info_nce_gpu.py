"""info_nce on a CUDA GPU (skipped without one): bf16/fp16/fp32 Triton against the fp64 oracle at
larger shapes, and the no-B x N memory property."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import info_nce
from tests._oracle import assert_close_to_oracle

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("B, N, d, k", [(1000, 1003, 384, 2), (257, 4099, 768, None)])
def test_triton_on_gpu_matches_oracle(dtype, B, N, d, k):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = F.normalize(torch.randn(B, d, device="cuda", generator=g, dtype=torch.float64), dim=-1)
    c = F.normalize(torch.randn(N, d, device="cuda", generator=g, dtype=torch.float64), dim=-1)
    h = None if k is None else F.normalize(torch.randn(B, k, d, device="cuda", generator=g, dtype=torch.float64),
                                           dim=-1)

    def run(fn, cast, **kw):
        ins = [x.to(cast).requires_grad_() if x is not None else None for x in (q, c, h)]
        out = fn(ins[0], ins[1], None, ins[2], temperature=0.05, hard_negative_mode="both" if h is not None else None,
                 reduction="none", **kw)
        w = torch.linspace(0.5, 1.5, out.numel(), device="cuda", dtype=out.dtype)
        grads = torch.autograd.grad((out * w).sum(), [x for x in ins if x is not None])
        return out, grads

    out, grads = run(info_nce, dtype, backend="triton")
    oracle, ograds = run(reference.info_nce, torch.float64, compute_dtype=torch.float64)
    base, bgrads = run(reference.info_nce, dtype, compute_dtype=dtype)
    assert_close_to_oracle("loss", out, base, oracle, dtype)
    for name, a, o, b in zip(("dq", "dc", "dh"), grads, ograds, bgrads):
        assert_close_to_oracle(name, a, b, o, dtype)


def test_triton_never_allocates_b_by_n():
    """Peak extra memory of a fwd+bwd stays within O((B + N) d) buffers (the bf16 gradients are 2 bytes per input
    element; 12 allowed, as when fp32 buffers were cast) plus 5% of one bf16 B x N matrix. d = 128 keeps the linear
    part small against the quadratic one (B = N = 32,768: at most 96 MiB vs a 2 GiB bf16 B x N buffer)."""
    B = N = 32768
    d = 128
    q = F.normalize(torch.randn(B, d, device="cuda"), dim=-1).bfloat16().requires_grad_()
    c = F.normalize(torch.randn(N, d, device="cuda"), dim=-1).bfloat16().requires_grad_()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    info_nce(q, c, backend="triton").backward()
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    linear = (B + N) * d * 12
    assert extra < linear + 0.05 * B * N * 2, (f"peak extra memory {extra / 2**20:.0f} MiB is over the "
                                               f"{linear / 2**20:.0f} MiB of gradients: it looks like a B x N buffer")
