"""sim_map against the fp64 oracle: maps and patch sequences, every channel combination, fp32/fp16, ragged masks,
m or n = 1, sizes off the block and patch grids, normalize on/off, clip, grad_output != 1, backends cpu (forced
through several chunks), triton (interpreter) and reference; the patch layout and the patch mask.

fp16 with a max channel: the gradient follows the maximal entry of a row / column, and the op (fp32 math on
fp16-normalised tokens) and the fp64 oracle (normalising in fp64) may pick different entries where two are
within fp16 rounding. There the gradient is checked on fp16 unit tokens with normalize=False (both sides then
see the same similarities up to fp32 rounding); normalize=True is checked for values.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F

from spherekit.ops import sim_map, sim_map_patch_mask
from spherekit.reference import sim_map as ref
from tests.ops._harness import backends, compare
from tests.ops._sim_map_cases import DTYPES, need_triton, ragged_mask, small_cpu_chunks, tokens  # noqa: F401

BACKENDS = backends("sim_map")
ALL = ("sim", "rowmax", "colmax")
CASES = [  # (B, m, n, h), patch, channels
    ((3, 37, 41, 24), None, ("sim",)),
    ((3, 37, 41, 24), 4, ALL),
    ((2, 1, 9, 16), 2, ("colmax", "sim")),
    ((3, 6, 1, 8), None, ALL),
    ((2, 8, 8, 16), 8, ("rowmax",)),
    ((2, 5, 7, 8), 1, ("sim", "colmax")),
]


@pytest.fixture(autouse=True)
def _chunks(small_cpu_chunks):  # noqa: F811
    pass


def _case(shape, seed, *, unit_dtype=None):
    B, m, n, h = shape
    q, d = tokens(B, m, h, seed=seed), tokens(B, n, h, seed=seed + 2)
    if unit_dtype is not None:  # unit tokens exactly representable in unit_dtype
        q, d = F.normalize(q, dim=-1).to(unit_dtype).double(), F.normalize(d, dim=-1).to(unit_dtype).double()
    return dict(q=q, q_mask=ragged_mask(B, m, seed=seed + 1), d=d, d_mask=ragged_mask(B, n, seed=seed + 3))


def _oracle(**kw):
    """The reference, squeezed like the op for one channel without patches."""
    def fn(*args, **kwargs):
        out = ref.sim_map(*args, **kw, **kwargs)
        return out.squeeze(-1) if kw.get("patch") is None and len(kw["channels"]) == 1 else out
    return fn


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-p{c[1]}-{'+'.join(c[2])}")
@pytest.mark.parametrize("normalize", [True, False])
def test_values_and_grads(backend, dtype, case, normalize):
    if backend == "triton":
        need_triton("sim_map")
    shape, patch, channels = case
    kw = dict(patch=patch, channels=channels, clip=True)
    seed = shape[1] + 5 * shape[2]
    has_max = any(c != "sim" for c in channels)
    inputs = _case(shape, seed)
    op = partial(sim_map, **kw, normalize=normalize, backend=backend)
    out = compare(op, _oracle(**kw, normalize=normalize), inputs, dtype, ("q", "d"),
                  check_grads=not (dtype == torch.float16 and has_max))
    B, m, n, _ = shape
    C = len(channels)
    if patch is None:
        assert out.shape == ((B, m, n) if C == 1 else (B, m, n, C))
    else:
        assert out.shape == (B, -(-m // patch) * -(-n // patch), patch * patch * C)
    assert out.dtype == dtype
    if dtype == torch.float16 and has_max:
        compare(partial(sim_map, **kw, normalize=False, backend=backend), _oracle(**kw, normalize=False),
                _case(shape, seed, unit_dtype=dtype), dtype, ("q", "d"))


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_padding_entries_are_zero_and_get_no_gradient(backend):
    if backend == "triton":
        need_triton("sim_map")
    x = _case((2, 9, 11, 16), seed=3)
    q, qm = x["q"].float().requires_grad_(), x["q_mask"]
    d, dm = x["d"].float().requires_grad_(), x["d_mask"]
    out = sim_map(q, d, q_mask=qm, d_mask=dm, channels=ALL, backend=backend)
    valid = qm[:, :, None] & dm[:, None, :]
    assert bool((out[~valid] == 0).all()) and bool((out[valid][:, 0] != 0).all())
    out.sum().backward()
    assert bool((q.grad[~qm] == 0).all()) and bool((d.grad[~dm] == 0).all())


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_cuts_raw_products(backend):
    """normalize=False with large tokens: many |M| > 1; the clamp and its zero gradient match the oracle."""
    if backend == "triton":
        need_triton("sim_map")
    x = _case((2, 7, 9, 8), seed=5)
    x["q"], x["d"] = x["q"] * 0.6, x["d"] * 0.6
    raw = torch.einsum("bih,bjh->bij", x["q"], x["d"])
    assert 0.2 < (raw.abs() > 1).double().mean() < 0.8
    for clip in (True, False):
        kw = dict(channels=ALL, clip=clip)
        out = compare(partial(sim_map, **kw, normalize=False, backend=backend), _oracle(**kw, normalize=False),
                      x, torch.float32, ("q", "d"))
        assert (out.abs().max() <= 1) == clip


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_out_dtype(backend):
    if backend == "triton":
        need_triton("sim_map")
    x = _case((2, 5, 6, 8), seed=7)
    q, d = x["q"].half(), x["d"].half()
    out = sim_map(q, d, q_mask=x["q_mask"], d_mask=x["d_mask"], channels=ALL, out_dtype=torch.float32, backend=backend)
    assert out.dtype == torch.float32
    oracle = ref.sim_map(q.double(), x["q_mask"], d.double(), x["d_mask"], channels=ALL, compute_dtype=torch.float64)
    torch.testing.assert_close(out.double(), oracle, atol=3e-3, rtol=0)


def test_patch_sequence_equals_a_conv_patch_embedding():
    """A Linear over the patch features == Conv2d(C, D, p, stride=p) over the zero-padded (B, C, m, n) map."""
    x = _case((2, 10, 13, 8), seed=9)
    p, C, D = 4, 3, 5
    args = (x["q"].float(), x["d"].float())
    masks = dict(q_mask=x["q_mask"], d_mask=x["d_mask"])
    patches = sim_map(*args, **masks, patch=p, channels=ALL, backend="cpu")
    grid = sim_map(*args, **masks, channels=ALL, backend="cpu").permute(0, 3, 1, 2)
    grid = F.pad(grid, (0, 16 - 13, 0, 12 - 10))
    conv = torch.nn.Conv2d(C, D, p, stride=p, bias=False)
    expected = conv(grid).flatten(2).transpose(1, 2)
    weight = conv.weight.permute(0, 2, 3, 1).reshape(D, p * p * C)  # feature (pi * p + pj) * C + c
    torch.testing.assert_close(patches @ weight.T, expected, atol=1e-5, rtol=1e-5)


def test_patch_mask():
    qm = torch.tensor([[True, True, False, False, False], [True, False, False, False, True]])
    dm = torch.tensor([[True, False, False], [False, False, True]])
    got = sim_map_patch_mask(qm, dm, 2)  # grid 3 x 2
    expected = torch.tensor([[True, False, False, False, False, False], [False, True, False, False, False, True]])
    assert torch.equal(got, expected)
    assert torch.equal(got, ref.sim_map_patch_mask(qm, dm, 2))


def test_float64_gradcheck_through_the_custom_op():
    x = _case((2, 4, 5, 6), seed=11)
    q, d = x["q"].requires_grad_(), x["d"].requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q_, d_: sim_map(q_, d_, q_mask=x["q_mask"], d_mask=x["d_mask"], patch=3, channels=ALL,
                               backend="cpu"), (q, d))


def test_torch_compile_traces_through_the_custom_op():
    x = _case((2, 5, 7, 8), seed=13)
    q = x["q"].float().requires_grad_()
    fn = torch.compile(lambda q_: sim_map(q_, x["d"].float(), q_mask=x["q_mask"], d_mask=x["d_mask"], patch=2,
                                          channels=ALL, backend="cpu"), backend="aot_eager", fullgraph=False)
    got = fn(q)
    got.pow(2).sum().backward()
    q_ref = x["q"].float().requires_grad_()
    expected = ref.sim_map(q_ref, x["q_mask"], x["d"].float(), x["d_mask"], patch=2, channels=ALL)
    expected.pow(2).sum().backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(q.grad, q_ref.grad)


def test_opcheck():
    x = _case((2, 5, 7, 8), seed=15)
    q, d = x["q"].float().requires_grad_(), x["d"].float().requires_grad_()
    for all_pairs in (False, True):
        args = (q, x["q_mask"], d, x["d_mask"], 3, "sim,rowmax,colmax", True, torch.float32, all_pairs, "cpu")
        torch.library.opcheck(torch.ops.spherekit.sim_map_fwd.default, args)
        out, *stats = torch.ops.spherekit.sim_map_fwd(*args)
        bwd = (torch.rand_like(out), q.detach(), x["q_mask"], d.detach(), x["d_mask"], *stats, 3,
               "sim,rowmax,colmax", True, True, True, all_pairs, "cpu")
        torch.library.opcheck(torch.ops.spherekit.sim_map_bwd.default, bwd,
                              test_utils=("test_schema", "test_faketensor"))
