"""The CUDA nGPT path (spherekit._cuda via spherekit.ops._ngpt_cuda).

Without a GPU: the argument plumbing. The binding's py::arg names must match the C++ parameters in
csrc/cuda/ngpt.h in order (pybind maps them by position), and the launchers call a fake extension that
has exactly those keyword names and does the documented math on the raw CPU pointers it receives, so a
wrong pointer, stride, size, dtype code or workspace shows up as a wrong result.

On a GPU (@pytest.mark.gpu, skipped here): the cuda and triton launchers and the public ops against the
fp64 oracle in fp32 / bf16 / fp16 over every row configuration of the CUDA kernels (warp rows, block rows,
16 items per thread, streamed rows), unaligned rows (element loads), zero and clamped rows, deterministic
grad_alpha, and multi-tensor renormalize_.
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from spherekit.ops import _ngpt_cuda as NC
from spherekit.reference import ngpt as ref
from tests._cuda import need_cuda_extension
from tests._oracle import assert_close_to_oracle
from tests.ops.test_ngpt import check_huge_rows

ROOT = Path(__file__).resolve().parents[2]
CODE_DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16}


# ---- binding / header consistency -------------------------------------------------------------------------

def _binding_args() -> dict[str, list[str]]:
    src = (ROOT / "csrc" / "cuda" / "bindings.cpp").read_text()
    out = {}
    for m in re.finditer(r'm\.def\(\s*"(\w+)",\s*&spherekit::cuda::(\w+)(.*?)\);', src, re.S):
        if m.group(2) in NC.ENTRY_POINTS:
            out[m.group(1)] = re.findall(r'py::arg\("(\w+)"\)', m.group(3))
    return out


def _header_params() -> dict[str, list[str]]:
    src = (ROOT / "csrc" / "cuda" / "ngpt.h").read_text()
    out = {}
    for m in re.finditer(r"\n(?:void|std::int64_t) (\w+)\((.*?)\);", src, re.S):
        out[m.group(1)] = [p.strip().split()[-1].lstrip("&") for p in m.group(2).split(",")]
    return out


def test_bindings_match_header_in_order():
    binding, header = _binding_args(), _header_params()
    assert set(binding) == set(NC.ENTRY_POINTS) == set(header)
    for name in NC.ENTRY_POINTS:
        assert binding[name] == header[name], name


def test_dtype_codes_match_dispatch_h():
    """Every compiled launcher maps a torch dtype to its spherekit::DTypeCode (csrc/common/dispatch.h) the same way."""
    from spherekit.ops import _dtype_codes, _maxsim_cuda, _ngpt_cpp

    header = (ROOT / "csrc" / "common" / "dispatch.h").read_text()
    enum = dict(re.findall(r"k(Float32|Float16|BFloat16) = (\d+)", header))
    want = {torch.float32: int(enum["Float32"]), torch.float16: int(enum["Float16"]),
            torch.bfloat16: int(enum["BFloat16"])}
    assert _dtype_codes.DTYPE_CODES == want
    assert NC.DTYPE_CODES is _maxsim_cuda.DTYPE_CODES is _ngpt_cpp.DTYPE_CODES is _dtype_codes.DTYPE_CODES
    assert [_dtype_codes.dtype_code(t) for t in want] == list(want.values())
    with pytest.raises(TypeError, match="float64"):
        _dtype_codes.dtype_code(torch.float64)


# ---- a fake extension: the documented raw-pointer API on CPU memory ------------------------------------------

def _mem(ptr: int, dtype: torch.dtype, shape: tuple, strides: tuple) -> torch.Tensor:
    """A writable tensor aliasing `ptr` (a CPU address) with the given element strides."""
    item = torch.empty((), dtype=dtype).element_size()
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
    buf = (ctypes.c_char * max(1, extent * item)).from_address(ptr)
    return torch.frombuffer(buf, dtype=dtype)[:extent].as_strided(shape, strides)


class FakeExt:
    """Parameter names are checked against the binding in test_fake_matches_binding."""

    def __init__(self):
        self.calls = []

    def geodesic_residual_fwd(self, out, stride_out, norms, h, stride_h, f, stride_f, alpha, rows, d, eps, dtype,
                              stream):
        self.calls.append("geodesic_residual_fwd")
        T = CODE_DTYPES[dtype]
        hh, ff = _mem(h, T, (rows, d), (stride_h, 1)).double(), _mem(f, T, (rows, d), (stride_f, 1)).double()
        a = _mem(alpha, torch.float32, (d,), (1,)).double()
        hn, fn = F.normalize(hh, dim=-1, eps=eps), F.normalize(ff, dim=-1, eps=eps)
        y = hn + a.abs() * (fn - hn)
        _mem(out, T, (rows, d), (stride_out, 1)).copy_(F.normalize(y, dim=-1, eps=eps))
        _mem(norms, torch.float32, (rows, 3), (3, 1)).copy_(torch.stack([hh.norm(dim=-1), ff.norm(dim=-1),
                                                                         y.norm(dim=-1)], -1))

    def geodesic_residual_bwd_partials(self, rows, d):
        return 3

    def geodesic_residual_bwd(self, grad_h, stride_grad_h, grad_f, stride_grad_f, grad_alpha, workspace, partials,
                              grad_out, stride_grad_out, h, stride_h, f, stride_f, alpha, norms, rows, d, eps, dtype,
                              stream):
        self.calls.append("geodesic_residual_bwd")
        assert partials == 3
        assert (_mem(workspace, torch.float32, (partials, d), (d, 1)) == 0).all(), "workspace must be zero-filled"
        T = CODE_DTYPES[dtype]
        hh = _mem(h, T, (rows, d), (stride_h, 1)).double().requires_grad_()
        ff = _mem(f, T, (rows, d), (stride_f, 1)).double().requires_grad_()
        a = _mem(alpha, torch.float32, (d,), (1,)).double().requires_grad_()
        g = _mem(grad_out, T, (rows, d), (stride_grad_out, 1)).double()
        nrm = _mem(norms, torch.float32, (rows, 3), (3, 1))
        assert torch.allclose(nrm[:, 0].double(), hh.detach().norm(dim=-1), rtol=1e-5), "norms do not belong to h"
        out = ref.geodesic_residual(hh, ff, a, eps, compute_dtype=torch.float64)
        gh, gf, ga = torch.autograd.grad(out, (hh, ff, a), g)
        _mem(grad_h, T, (rows, d), (stride_grad_h, 1)).copy_(gh)
        _mem(grad_f, T, (rows, d), (stride_grad_f, 1)).copy_(gf)
        _mem(grad_alpha, torch.float32, (d,), (1,)).copy_(ga)

    def l2_normalize_fwd(self, out, stride_out, norms, x, stride_x, rows, d, eps, dtype, stream):
        self.calls.append("l2_normalize_fwd")
        T = CODE_DTYPES[dtype]
        xx = _mem(x, T, (rows, d), (stride_x, 1)).double()
        _mem(out, T, (rows, d), (stride_out, 1)).copy_(F.normalize(xx, dim=-1, eps=eps))
        _mem(norms, torch.float32, (rows,), (1,)).copy_(xx.norm(dim=-1))

    def l2_normalize_bwd(self, grad_x, stride_grad_x, grad_out, stride_grad_out, x, stride_x, norms, rows, d, eps,
                         dtype, stream):
        self.calls.append("l2_normalize_bwd")
        T = CODE_DTYPES[dtype]
        xx = _mem(x, T, (rows, d), (stride_x, 1)).double().requires_grad_()
        g = _mem(grad_out, T, (rows, d), (stride_grad_out, 1)).double()
        assert torch.allclose(_mem(norms, torch.float32, (rows,), (1,)).double(), xx.detach().norm(dim=-1), rtol=1e-5)
        (gx,) = torch.autograd.grad(F.normalize(xx, dim=-1, eps=eps), xx, g)
        _mem(grad_x, T, (rows, d), (stride_grad_x, 1)).copy_(gx)

    def renormalize_(self, ptrs, outer, n, inner, dtypes, workspace, workspace_len, eps, stream):
        self.calls.append("renormalize_")
        assert len(ptrs) == len(outer) == len(n) == len(inner) == len(dtypes) and workspace_len >= 8 * len(ptrs)
        for p, o, k, i, c in zip(ptrs, outer, n, inner, dtypes):
            w = _mem(p, CODE_DTYPES[c], (o, k, i), (k * i, i, 1))
            w.copy_(F.normalize(w.double(), dim=1, eps=eps))


def test_fake_matches_binding():
    binding = _binding_args()
    for name in NC.ENTRY_POINTS:
        params = list(inspect.signature(getattr(FakeExt(), name)).parameters)
        assert params == binding[name], name


@pytest.fixture
def fake(monkeypatch):
    ext = FakeExt()
    monkeypatch.setattr(NC, "_ext", lambda: ext)
    monkeypatch.setattr(NC, "_stream", lambda device: 0)
    monkeypatch.setattr(NC, "_on_device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(NC, "DEVICE_TYPE", "cpu")
    return ext


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_launchers_pass_the_right_arguments(fake, dtype):
    g = torch.Generator().manual_seed(0)
    R, d = 5, 7
    h = torch.randn(R, d + 3, generator=g).to(dtype)[:, 2:d + 2]  # strided rows
    f = torch.randn(R, d, generator=g).to(dtype) * 2
    go = torch.randn(R, d, generator=g).to(dtype)
    alpha = torch.randn(d, generator=g)
    out, norms = NC.geodesic_residual_fwd(h, f, alpha, eps=1e-6)
    want = ref.geodesic_residual(h.double(), f.double(), alpha.double(), 1e-6, compute_dtype=torch.float64)
    assert out.dtype == dtype and out.shape == (R, d)
    assert_close_to_oracle("out", out, want.to(dtype), want, dtype)
    assert torch.allclose(norms[:, 1].double(), f.double().norm(dim=-1), rtol=1e-5)
    gh, gf, ga = NC.geodesic_residual_bwd(go, h, f, alpha, norms, eps=1e-6)
    hh, ff, aa = (x.double().requires_grad_() for x in (h, f, alpha))
    o = ref.geodesic_residual(hh, ff, aa, 1e-6, compute_dtype=torch.float64)
    wgh, wgf, wga = torch.autograd.grad(o, (hh, ff, aa), go.double())
    for name, got, w in (("grad_h", gh, wgh), ("grad_f", gf, wgf)):
        assert got.dtype == dtype
        assert_close_to_oracle(name, got, w.to(dtype), w, dtype)
    assert ga.dtype == torch.float32 and torch.allclose(ga.double(), wga, rtol=1e-5, atol=1e-6)
    x = torch.randn(R, d, generator=g).to(dtype)
    out, norms = NC.l2_normalize_fwd(x, eps=1e-6)
    assert_close_to_oracle("l2 out", out, F.normalize(x.double(), dim=-1).to(dtype), F.normalize(x.double(), dim=-1),
                           dtype)
    gx = NC.l2_normalize_bwd(go, x, norms, eps=1e-6)
    xx = x.double().requires_grad_()
    (wgx,) = torch.autograd.grad(F.normalize(xx, dim=-1, eps=1e-6), xx, go.double())
    assert_close_to_oracle("grad_x", gx, wgx.to(dtype), wgx, dtype)
    assert fake.calls == ["geodesic_residual_fwd", "geodesic_residual_bwd", "l2_normalize_fwd", "l2_normalize_bwd"]


def test_renormalize_passes_every_tensor(fake):
    g = torch.Generator().manual_seed(1)
    ws = [torch.randn(3, 5, generator=g), torch.randn(4, 6, generator=g).half(), torch.randn(2, 3, 4, generator=g),
          torch.randn(0, 4)]
    dims = [-1, 0, 1, -1]
    before = [w.clone() for w in ws]
    views = [ws[0].view(3, 5, 1), ws[1].view(1, 4, 6), ws[2], ws[3].view(0, 4, 1)]
    NC.renormalize_(views, eps=1e-6)
    assert fake.calls == ["renormalize_"]
    for w, b, dim in zip(ws, before, dims):
        want = F.normalize(b.double(), dim=dim, eps=1e-6)
        assert torch.allclose(w.double(), want, atol=1e-3 if w.dtype == torch.float16 else 1e-6)


def test_launcher_errors_name_the_argument(fake):
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="alpha"):
        NC.geodesic_residual_fwd(x, x, torch.ones(8, dtype=torch.float64), eps=1e-6)
    with pytest.raises(ValueError, match="f:"):
        NC.geodesic_residual_fwd(x, x.half(), torch.ones(8), eps=1e-6)
    with pytest.raises(ValueError, match="norms"):
        NC.l2_normalize_bwd(x, x, torch.ones(3), eps=1e-6)
    with pytest.raises(ValueError, match="x:"):
        NC.l2_normalize_fwd(torch.randn(8, 4).t(), eps=1e-6)
    with pytest.raises(ValueError, match=r"views\[1\]"):
        NC.renormalize_([x.view(4, 8, 1), x.t().unsqueeze(0)], eps=1e-6)


def test_needs_cuda_tensors():
    with pytest.raises(ValueError, match="CUDA"):
        NC.l2_normalize_fwd(torch.randn(2, 3), eps=1e-6)


# ---- on a GPU ------------------------------------------------------------------------------------------------

GPU_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# warp rows (<= 256), block rows (<= 1024, 2048, 4096), 16 items per thread (<= 8192), streamed rows (> 8192)
GPU_DIMS = [1, 41, 128, 1000, 2048, 4096, 5000, 8192, 10000]


def _launchers(backend):
    if backend == "cuda":
        need_cuda_extension(*NC.ENTRY_POINTS)
        return NC
    from spherekit.kernels import ngpt as K
    return K


def _gpu_case(R, d, seed, dtype):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(R, d, generator=g, device="cuda", dtype=torch.float64) * 2).to(dtype)


def _oracle(h, f, alpha, go, eps, dtype):
    hh, ff, aa = (x.detach().to(dtype).requires_grad_() for x in (h, f, alpha))
    out = ref.geodesic_residual(hh, ff, aa, eps, compute_dtype=dtype if dtype != torch.bfloat16 else torch.float32)
    return (out.detach(),) + torch.autograd.grad(out, (hh, ff, aa), go.to(dtype))


def _check_gpu(L, h, f, alpha, go, eps, dtype):
    out, norms = L.geodesic_residual_fwd(h, f, alpha, eps=eps)
    gh, gf, ga = L.geodesic_residual_bwd(go, h, f, alpha, norms, eps=eps)
    o64 = _oracle(h.double(), f.double(), alpha.double(), go.double(), eps, torch.float64)
    base = _oracle(h, f, alpha, go, eps, dtype)
    for name, got, b, o in zip(("out", "grad_h", "grad_f", "grad_alpha"), (out, gh, gf, ga), base, o64):
        assert torch.isfinite(got).all(), name
        assert_close_to_oracle(name, got, b, o, dtype)
    hn, fn = F.normalize(h.double(), dim=-1, eps=eps), F.normalize(f.double(), dim=-1, eps=eps)
    y = hn + alpha.double().abs() * (fn - hn)
    want = torch.stack([h.double().norm(dim=-1), f.double().norm(dim=-1), y.norm(dim=-1)], -1)
    assert torch.allclose(norms.double(), want, rtol=1e-4, atol=1e-6)
    return ga


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("dtype", GPU_DTYPES)
@pytest.mark.parametrize("d", GPU_DIMS)
@pytest.mark.parametrize("R", [1, 37, 1000])
def test_gpu_geodesic_residual(backend, dtype, d, R):
    L = _launchers(backend)
    h, f, go = _gpu_case(R, d, 1, dtype), _gpu_case(R, d, 2, dtype), _gpu_case(R, d, 3, dtype)
    alpha = (torch.rand(d, device="cuda") - 0.3) * 1.4
    alpha[0] = 0.0
    ga = _check_gpu(L, h, f, alpha, go, 1e-6, dtype)
    out2, norms2 = L.geodesic_residual_fwd(h, f, alpha, eps=1e-6)
    assert torch.equal(L.geodesic_residual_bwd(go, h, f, alpha, norms2, eps=1e-6)[2], ga), "grad_alpha not deterministic"


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("dtype", GPU_DTYPES)
@pytest.mark.parametrize("d", [40, 1000, 5000, 10000])
def test_gpu_unaligned_and_clamped_rows(backend, dtype, d):
    """Row stride d + 1 and a base offset of one element (no 16-byte vectors), zero rows and 0 < ||h|| < eps."""
    L = _launchers(backend)
    R, eps = 9, 1e-2 if dtype != torch.float32 else 1e-6
    h = _gpu_case(R, d + 1, 1, dtype)[:, 1:]
    f = _gpu_case(R, d + 1, 2, dtype)[:, :d]
    go = _gpu_case(R, d, 3, dtype)
    h[0] = 0
    f[1] = 0
    h[2] = 0
    f[2] = 0
    h[3] = (h[3].double() / h[3].double().norm() * 0.5 * eps).to(dtype)
    alpha = torch.full((d,), 0.5, device="cuda")
    _check_gpu(L, h, f, alpha, go, eps, dtype)
    x = h.contiguous()[:, : d - 1] if d > 1 else h
    out, norms = L.l2_normalize_fwd(x, eps=eps)
    gx = L.l2_normalize_bwd(go[:, : x.shape[1]], x, norms, eps=eps)
    xx = x.double().requires_grad_()
    o = F.normalize(xx, dim=-1, eps=eps)
    (w,) = torch.autograd.grad(o, xx, go[:, : x.shape[1]].double())
    for i in range(R):  # rows differ by orders of magnitude (clamped rows: 1/eps)
        assert_close_to_oracle(f"l2 out[{i}]", out[i], o[i].detach().to(dtype), o[i].detach(), dtype)
        assert_close_to_oracle(f"grad_x[{i}]", gx[i], w[i].to(dtype), w[i], dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("d", [41, 1000, 10000])
def test_gpu_huge_rows(backend, dtype, d):
    """Rows whose fp32 sum of squares overflows (|x| >= ~2e19): unit vectors and right gradients, streamed rows too."""
    _launchers(backend)
    check_huge_rows(backend, dtype, "cuda", d)


@pytest.mark.gpu
def test_gpu_float64_auto_runs_the_torch_composition():
    """float64 on CUDA tensors: auto picks the cpu backend (torch composition, float64 math) over the fp32 kernels."""
    from spherekit import ops

    x = _gpu_case(5, 41, 1, torch.float64).requires_grad_()
    out = ops.l2_normalize(x)
    (gx,) = torch.autograd.grad(out, x, torch.ones_like(out))
    xx = x.detach().requires_grad_()
    want = F.normalize(xx, dim=-1)
    (gw,) = torch.autograd.grad(want, xx, torch.ones_like(want))
    torch.testing.assert_close(out, want, rtol=1e-14, atol=1e-15)
    torch.testing.assert_close(gx, gw, rtol=1e-12, atol=1e-14)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_gpu_renormalize_multi_tensor(backend):
    L = _launchers(backend)
    g = torch.Generator(device="cuda").manual_seed(5)
    specs = [((1000, 768), -1, torch.bfloat16), ((768, 3072), 0, torch.bfloat16), ((4, 41, 9), 1, torch.float32),
             ((3, 10000), -1, torch.float16), ((41, 7), -1, torch.float16), ((5,), 0, torch.float32),
             ((0, 8), -1, torch.float32)]
    specs += [((k % 5 + 1, k % 9 + 3), k % 2 - 1, torch.float32) for k in range(100)]  # many tensors
    ws = [(torch.randn(*s, generator=g, device="cuda") * 3).to(dt) for s, _, dt in specs]
    ws.append(torch.randn(8 * 33 + 1, device="cuda", generator=g).half()[1:].view(8, 33))  # unaligned base, odd n
    specs.append(((8, 33), -1, torch.float16))
    ws[0][3] = 0
    before = [w.clone() for w in ws]
    views = []
    for w, (_, dim, _) in zip(ws, specs):
        dim %= w.dim()
        outer = int(torch.tensor(w.shape[:dim]).prod()) if dim else 1
        inner = int(torch.tensor(w.shape[dim + 1:]).prod()) if dim + 1 < w.dim() else 1
        views.append(w.view(outer, w.shape[dim], inner))
    L.renormalize_(views, eps=1e-6)
    for i, (w, b, (_, dim, dt)) in enumerate(zip(ws, before, specs)):
        oracle = F.normalize(b.double(), dim=dim, eps=1e-6)
        base = ref.renormalize(b, dim, 1e-6, compute_dtype=torch.float32).to(dt)
        assert_close_to_oracle(f"weights[{i}]", w, base, oracle, dt)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("dtype", GPU_DTYPES)
def test_gpu_public_ops(backend, dtype):
    """spherekit.ops with backend="cuda"/"triton" (wired by ops/ngpt.py) against the fp64 oracle."""
    _launchers(backend)
    from spherekit import ops

    h, f, go = _gpu_case(64, 768, 1, dtype), _gpu_case(64, 768, 2, dtype), _gpu_case(64, 768, 3, dtype)
    alpha = ((torch.rand(768, device="cuda") - 0.3) * 1.4).requires_grad_()
    hh, ff = h.clone().requires_grad_(), f.clone().requires_grad_()
    out = ops.geodesic_residual(hh, ff, alpha, backend=backend)
    grads = torch.autograd.grad(out, (hh, ff, alpha), go)
    o64 = _oracle(h.double(), f.double(), alpha.detach().double(), go.double(), 1e-6, torch.float64)
    base = _oracle(h, f, alpha.detach(), go, 1e-6, dtype)
    for name, got, b, o in zip(("out", "grad_h", "grad_f", "grad_alpha"), (out,) + grads, base, o64):
        assert_close_to_oracle(name, got, b, o, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 768, 4096])
def test_gpu_triton_persistent_loops(d):
    """Many more rows than resident programs (each program runs many steps of its pipelined row loop, the last
    one partial) and zero rows, against the fp64 oracle; grad_alpha deterministic across runs."""
    from spherekit.kernels import ngpt as K

    R, dtype = 70_001, torch.bfloat16
    h, f, go = _gpu_case(R, d, 1, dtype), _gpu_case(R, d, 2, dtype), _gpu_case(R, d, 3, dtype)
    h[5], f[6] = 0, 0
    alpha = (torch.rand(d, device="cuda") - 0.3) * 1.4
    ga = _check_gpu(K, h, f, alpha, go, 1e-6, dtype)
    out, norms = K.geodesic_residual_fwd(h, f, alpha, eps=1e-6)
    assert torch.equal(K.geodesic_residual_bwd(go, h, f, alpha, norms, eps=1e-6)[2], ga)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["auto", "triton", "cuda"])
def test_gpu_autocast(backend):
    """Under CUDA bf16 autocast: an fp32 h and a bf16 block output give fp32 (promoted, as on the CPU), two bf16
    inputs give bf16, l2_normalize keeps its input's dtype; values as outside autocast; auto is triton on CUDA."""
    if backend == "cuda":
        need_cuda_extension(*NC.ENTRY_POINTS)
    from spherekit import ops
    from spherekit.ops import ngpt as ngpt_ops

    assert ngpt_ops._resolve("geodesic_residual", "auto", torch.device("cuda"), 768) == "triton"
    h, x = _gpu_case(64, 768, 1, torch.float32), _gpu_case(64, 768, 2, torch.float32)
    lin = torch.nn.Linear(768, 768, device="cuda")
    alpha = torch.full((768,), 0.05, device="cuda", requires_grad=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        f = lin(x)
        mixed = ops.geodesic_residual(h, f, alpha, backend=backend)
        both = ops.geodesic_residual(f, f.flip(0), alpha, backend=backend)
        unit = ops.l2_normalize(f, backend=backend)
    assert f.dtype == torch.bfloat16 and mixed.dtype == torch.float32 and both.dtype == unit.dtype == torch.bfloat16
    torch.testing.assert_close(mixed, ops.geodesic_residual(h, f.float(), alpha, backend=backend), rtol=0, atol=0)
    torch.testing.assert_close(both, ops.geodesic_residual(f, f.flip(0), alpha, backend=backend), rtol=0, atol=0)
    mixed.sum().backward()
    assert alpha.grad is not None and torch.isfinite(alpha.grad).all()


@pytest.mark.gpu
@pytest.mark.parametrize("d", [41, 4096])
def test_gpu_triton_near_antipodal_rows(d):
    """The compiled forward's explicit path (rows where the five-sum ||y||^2 cancels), fp32: each output row within
    the error rule with the conditioning 16 ulp / ||y|| (tests/ops/test_ngpt.py), the saved ||y|| within that of fp64,
    the exactly opposite pair exactly 0."""
    from spherekit.kernels import ngpt as K
    from tests.ops.test_ngpt import antipodal_rows

    h64, f64 = antipodal_rows(d)
    h, f = h64.float().cuda(), f64.float().cuda()
    out, norms = K.geodesic_residual_fwd(h, f, torch.full((d,), 0.5, device="cuda"), eps=1e-6)
    hn, fn = F.normalize(h.double(), dim=-1), F.normalize(f.double(), dim=-1)
    y = hn + 0.5 * (fn - hn)
    ny = y.norm(dim=-1)
    want = y / ny.clamp_min(1e-6)[:, None]
    base = ref.geodesic_residual(h, f, torch.full((d,), 0.5, device="cuda"), compute_dtype=torch.float32)
    assert ny[-1] == 0 and norms[-1, 2] == 0 and torch.equal(out[-1], torch.zeros_like(out[-1]))
    for i in range(len(ny) - 1):
        cond = 16 * 2 ** -24 / ny[i].item()
        assert_close_to_oracle(f"out[{i}]", out[i], base[i], want[i], torch.float32, conditioning=cond)
        assert abs(norms[i, 2].item() - ny[i].item()) <= cond * ny[i].item(), i
