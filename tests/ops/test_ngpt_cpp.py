"""The C++ nGPT entry points (spherekit._C) directly: raw-argument checks, and bit-exact float16/bfloat16
conversions (round to nearest even, subnormals, overflow to inf) against torch's own conversions."""

from __future__ import annotations

import pytest
import torch

from spherekit import _backend
from spherekit.ops import ngpt as ngpt_ops
from spherekit.ops._ngpt_cpp import CppNgpt


# ---- the C++ entry points validate their raw arguments ----------------------------------------------------

def _cpp():
    ext = _backend.cpp_extension()
    if not ngpt_ops.has_ngpt(ext):
        pytest.fail("spherekit._C was built without the nGPT entry points")
    return ext


def test_cpp_checks():
    ext = _cpp()
    x = torch.randn(4, 8)
    out, n = torch.empty_like(x), torch.empty(4, 3)
    a = torch.zeros(8)
    p = (out.data_ptr(), n.data_ptr(), x.data_ptr(), x.data_ptr(), a.data_ptr())
    with pytest.raises(ValueError, match="rows: expected > 0, got 0"):
        ext.geodesic_residual_fwd(*p, 0, 8, 0, 1e-6)
    with pytest.raises(ValueError, match="d: expected > 0, got -1"):
        ext.geodesic_residual_fwd(*p, 4, -1, 0, 1e-6)
    with pytest.raises(ValueError, match="dtype: expected a dtype code 0 .* got 7"):
        ext.geodesic_residual_fwd(*p, 4, 8, 7, 1e-6)
    with pytest.raises(ValueError, match="eps: expected a finite value > 0, got 0"):
        ext.l2_normalize_fwd(out.data_ptr(), n.data_ptr(), x.data_ptr(), 4, 8, 0, 0.0)
    with pytest.raises(ValueError, match="h: expected a non-null pointer"):
        ext.geodesic_residual_fwd(p[0], p[1], 0, p[3], p[4], 4, 8, 0, 1e-6)
    with pytest.raises(ValueError, match="norms: expected a 4-byte aligned pointer"):
        ext.l2_normalize_bwd(out.data_ptr(), x.data_ptr(), x.data_ptr(), n.data_ptr() + 2, 4, 8, 0, 1e-6)
    with pytest.raises(ValueError, match="expected equal lengths, got 1, 1, 2, 1, 1"):
        ext.renormalize_([x.data_ptr()], [1], [4, 4], [8], [0], 1e-6)
    with pytest.raises(ValueError, match=r"tensor 0: expected sizes > 0"):
        ext.renormalize_([x.data_ptr()], [1], [0], [8], [0], 1e-6)
    with pytest.raises(ValueError, match=r"dtypes\[0\]: expected a dtype code"):
        ext.renormalize_([x.data_ptr()], [1], [4], [8], [3], 1e-6)
    assert torch.equal(x, x)  # nothing crashed


@pytest.fixture(params=["auto", "generic"])
def isa(request, monkeypatch):
    """The C++ kernels for the best ISA of this CPU (AVX2 + FMA when present) and for the baseline."""
    monkeypatch.setenv("SPHEREKIT_CPU_ISA", request.param)
    return request.param


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpp_conversions_roundtrip_every_finite_value(dtype, isa):
    """l2_normalize_bwd with x = 0 and norm 1 returns grad_out itself: storage -> fp32 -> storage is exact."""
    values = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    g = values[torch.isfinite(values)].reshape(-1, 1).contiguous()  # one value per row
    out = CppNgpt(_cpp()).l2_normalize_bwd(g, torch.zeros_like(g), torch.ones(g.shape[0]), eps=1e-6)
    assert torch.equal(out.view(torch.int16), g.view(torch.int16))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpp_rounding_matches_torch(dtype, isa):
    """grad_x = g / norm computed in fp32, then stored: equal to torch's (g.float() / norm).to(dtype) bit for bit,
    over products from 1e-12 (subnormal / zero) to 1e10 (overflow to inf in fp16)."""
    gen = torch.Generator().manual_seed(0)
    rows = 200_000
    g = (torch.rand(rows, 1, generator=gen) + 1).to(dtype)
    norms = 10 ** -(torch.rand(rows, generator=gen) * 22 - 12)
    out = CppNgpt(_cpp()).l2_normalize_bwd(g, torch.zeros_like(g), norms, eps=1e-30)
    want = (g.float() * (1.0 / norms)[:, None]).to(dtype)
    assert torch.equal(out.view(torch.int16), want.view(torch.int16))
    if dtype == torch.float16:
        assert torch.isinf(out).any() and ((out != 0) & (out.abs() < 6.1e-5)).any()  # overflow and subnormals seen
