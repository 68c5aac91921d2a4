"""maxsim against the fp64 oracle: the three candidate layouts, fp32/fp16, ragged masks, m or n = 1, sizes off
the block grid (m=37, n=41, h=24), normalize on/off, grad_output != 1, backends cpu (forced through several
chunks), triton (interpreter) and reference.

Gradients of a max are defined by which token is maximal; in fp16 two nearly equal similarities can trade
places between the kernel and the fp64 oracle. So the gradient check is conditioned on the op's own selection
(the argmax its forward stores): the selection must be maximal in fp64 up to rounding, and the gradient must
match the fp64 gradient of the score with that selection (the 2x same-precision rule).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch

from spherekit.ops import maxsim
from spherekit.ops import tokens as T
from spherekit.ops.maxsim import to_layout
from spherekit.reference import sim_map as ref
from tests.ops._harness import backends, check, compare, random_weights, runs
from tests.ops._sim_map_cases import DTYPES, need_triton, ragged_mask, small_cpu_chunks, tokens  # noqa: F401

BACKENDS = backends("maxsim")
LAYOUTS = ["allpairs", "pairwise", "perquery"]
SHAPES = [(3, 4, 37, 41, 24), (2, 3, 1, 9, 16), (3, 2, 6, 1, 8)]  # (Bq, Bd or K, m, n, h): m = 1, n = 1
SELECTION_TOL = {torch.float32: 1e-5, torch.float16: 4e-3}


@pytest.fixture(autouse=True)
def _chunks(small_cpu_chunks):  # noqa: F811
    pass


def _case(layout: str, shape, seed: int):
    Bq, K, m, n, h = shape
    q, q_mask = tokens(Bq, m, h, seed=seed), ragged_mask(Bq, m, seed=seed + 1)
    lead = {"allpairs": (K,), "pairwise": (Bq,), "perquery": (Bq, K)}[layout]
    d, d_mask = tokens(*lead, n, h, seed=seed + 2), ragged_mask(*lead, n, seed=seed + 3)
    return dict(q=q, q_mask=q_mask, d=d, d_mask=d_mask), layout == "pairwise"


def _selected_score(q, q_mask, d, d_mask, argmax, *, pairwise, normalize, compute_dtype):
    """(1/|Q|) sum_{i in Q} <qn_i, dn_{argmax_i}>: the MaxSim score with the selection fixed."""
    qn, dn = ref._prep(q, normalize, compute_dtype), ref._prep(d, normalize, compute_dtype)
    d4, _, _ = to_layout(dn, d_mask, pairwise)
    Bq, K, m = argmax.shape
    d4 = d4.expand(Bq, K, *d4.shape[2:])
    index = argmax.long().clamp_min(0)[..., None].expand(Bq, K, m, d4.shape[-1])
    dots = (qn[:, None] * torch.gather(d4, 2, index)).sum(-1)
    score = ref._masked_row_mean(dots, q_mask[:, None, :])
    return score.view(-1) if pairwise else score


def _op_argmax(inputs, pairwise, normalize, dtype, backend):
    q, d = inputs["q"].to(dtype), inputs["d"].to(dtype)
    if normalize:
        q, d = T.normalize_tokens(q), T.normalize_tokens(d)
    d4, dm4, shared = to_layout(d, inputs["d_mask"], pairwise)
    return torch.ops.spherekit.maxsim_fwd(q.contiguous(), inputs["q_mask"], d4.contiguous(), dm4.contiguous(),
                                          shared, backend)[1]


def _check_selection(argmax, inputs, pairwise, normalize, dtype):
    """Padding query tokens hold -1; every other entry is a valid doc token whose fp64 similarity is maximal
    up to rounding."""
    qn, dn = ref._prep(inputs["q"], normalize, torch.float64), ref._prep(inputs["d"], normalize, torch.float64)
    d4, dm4, _ = to_layout(dn, inputs["d_mask"], pairwise)
    Bq, K, m = argmax.shape
    sims = torch.einsum("bih,bknh->bkin", qn, d4.expand(Bq, K, *d4.shape[2:]))
    sims = sims.masked_fill(~dm4.expand(Bq, K, -1)[:, :, None, :], float("-inf"))
    qm = inputs["q_mask"][:, None, :].expand(Bq, K, m)
    assert bool((argmax[~qm] == -1).all())
    a = argmax.long()[qm]
    assert bool((a >= 0).all()) and bool((a < sims.shape[-1]).all())
    chosen = sims.gather(-1, argmax.long().clamp_min(0)[..., None])[..., 0][qm]
    assert bool(torch.isfinite(chosen).all()), "a padding doc token was selected"
    gap = (sims.amax(-1)[qm] - chosen).max().item()
    assert gap <= SELECTION_TOL[dtype], f"selected token is {gap:.2e} below the maximum"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("normalize", [True, False])
def test_values_and_grads(backend, dtype, shape, layout, normalize):
    if backend == "triton":
        need_triton("maxsim")
    inputs, pairwise = _case(layout, shape, seed=7 * shape[2] + len(layout))
    kw = dict(pairwise=pairwise, normalize=normalize)
    out = compare(partial(maxsim, **kw, backend=backend), partial(ref.maxsim, **kw), inputs, dtype, (),
                  check_grads=False)
    expected = (shape[0],) if pairwise else (shape[0], shape[1])
    assert out.shape == expected and out.dtype == torch.float32

    argmax = _op_argmax(inputs, pairwise, normalize, dtype, backend)
    assert argmax.dtype == torch.int32 and argmax.shape == (shape[0], 1 if pairwise else shape[1], shape[2])
    _check_selection(argmax, inputs, pairwise, normalize, dtype)
    got, same, exact = runs(partial(maxsim, **kw, backend=backend), partial(_selected_score, argmax=argmax, **kw),
                            inputs, dtype, ("q", "d"), weights=partial(random_weights, seed=3))
    assert all(g.dtype == dtype for g in got[1:])
    check(("d_q", "d_d"), got[1:], same[1:], exact[1:], dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp32_grads_match_the_plain_oracle(backend):
    """In fp32 the selection agrees with the oracle's: compare with its autograd gradient directly."""
    if backend == "triton":
        need_triton("maxsim")
    inputs, _ = _case("perquery", (2, 3, 13, 21, 24), seed=5)
    compare(partial(maxsim, backend=backend), ref.maxsim, inputs, torch.float32, ("q", "d"))


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_layouts_agree(backend):
    """all pairs == per-query K with every document repeated; pairwise == the diagonal of all pairs."""
    if backend == "triton":
        need_triton("maxsim")
    q, qm = tokens(3, 9, 16, seed=1).float(), ragged_mask(3, 9, seed=2)
    d, dm = tokens(3, 11, 16, seed=3).float(), ragged_mask(3, 11, seed=4)
    full = maxsim(q, qm, d, dm, backend=backend)
    per_query = maxsim(q, qm, d[None].expand(3, -1, -1, -1), dm[None].expand(3, -1, -1), backend=backend)
    pairs = maxsim(q, qm, d, dm, pairwise=True, backend=backend)
    torch.testing.assert_close(per_query, full)
    torch.testing.assert_close(pairs, full.diagonal())


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_padding_never_contributes(backend):
    """Other values in padding positions: same scores; the padding tokens get zero gradient."""
    if backend == "triton":
        need_triton("maxsim")
    q, qm = tokens(2, 8, 16, seed=11).float(), ragged_mask(2, 8, seed=12)
    d, dm = tokens(2, 3, 10, 16, seed=13).float(), ragged_mask(2, 3, 10, seed=14)
    outs = []
    for scale in (1.0, 50.0):
        qx = torch.where(qm[..., None], q, q * scale).requires_grad_()
        dx = torch.where(dm[..., None], d, d * scale + 3).requires_grad_()
        out = maxsim(qx, qm, dx, dm, backend=backend)
        out.sum().backward()
        assert bool((qx.grad[~qm] == 0).all()) and bool((dx.grad[~dm] == 0).all())
        outs.append(out.detach())
    torch.testing.assert_close(outs[0], outs[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_of_one_side_only(backend):
    if backend == "triton":
        need_triton("maxsim")
    q, qm = tokens(2, 7, 16, seed=21).float(), ragged_mask(2, 7, seed=22)
    d, dm = tokens(4, 9, 16, seed=23).float(), ragged_mask(4, 9, seed=24)
    full_q, full_d = q.clone().requires_grad_(), d.clone().requires_grad_()
    maxsim(full_q, qm, full_d, dm, backend=backend).sum().backward()
    only_q = q.clone().requires_grad_()
    maxsim(only_q, qm, d, dm, backend=backend).sum().backward()
    only_d = d.clone().requires_grad_()
    maxsim(q, qm, only_d, dm, backend=backend).sum().backward()
    torch.testing.assert_close(only_q.grad, full_q.grad)
    torch.testing.assert_close(only_d.grad, full_d.grad)


def test_backward_stores_argmax_not_the_map():
    """What the autograd graph keeps: the inputs and the (Bq, K, m) argmax, nothing of size Bq K m n."""
    Bq, K, m, n, h = 2, 5, 6, 40, 4
    q = tokens(Bq, m, h, seed=1).float().requires_grad_()
    d = tokens(Bq, K, n, h, seed=2).float().requires_grad_()
    out = maxsim(q, None, d, None, normalize=False, backend="cpu")
    saved = out.grad_fn.saved_tensors
    assert any(t.dtype == torch.int32 and t.shape == (Bq, K, m) for t in saved)
    assert max(t.numel() for t in saved) <= d.numel() < Bq * K * m * n


def test_bf16_and_no_grad_on_cpu():
    q, qm = tokens(3, 6, 16, seed=31), ragged_mask(3, 6, seed=32)
    d, dm = tokens(4, 7, 16, seed=33), ragged_mask(4, 7, seed=34)
    with torch.no_grad():
        out = maxsim(q.bfloat16(), qm, d.bfloat16(), dm, backend="cpu")
    assert not out.requires_grad and out.dtype == torch.float32
    oracle = ref.maxsim(q.bfloat16().double(), qm, d.bfloat16().double(), dm, compute_dtype=torch.float64)
    torch.testing.assert_close(out.double(), oracle, atol=2e-2, rtol=0)


def test_masks_none_mean_all_valid():
    q, d = tokens(2, 5, 8, seed=41).float(), tokens(3, 6, 8, seed=42).float()
    ones_q, ones_d = torch.ones(2, 5, dtype=torch.bool), torch.ones(3, 6, dtype=torch.bool)
    torch.testing.assert_close(maxsim(q, None, d, None, backend="cpu"), maxsim(q, ones_q, d, ones_d, backend="cpu"))


def test_float64_gradcheck_through_the_custom_op():
    q = tokens(2, 4, 6, seed=51).requires_grad_()
    d = tokens(2, 3, 5, 6, seed=52).requires_grad_()
    qm, dm = ragged_mask(2, 4, seed=53), ragged_mask(2, 3, 5, seed=54)
    assert torch.autograd.gradcheck(lambda q_, d_: maxsim(q_, qm, d_, dm, backend="cpu"), (q, d))


def test_torch_compile_traces_through_the_custom_op():
    q, qm = tokens(2, 5, 8, seed=61).float(), ragged_mask(2, 5, seed=62)
    d, dm = tokens(3, 6, 8, seed=63).float(), ragged_mask(3, 6, seed=64)
    x = q.clone().requires_grad_()
    fn = torch.compile(lambda x_: maxsim(x_, qm, d, dm, backend="cpu"), backend="aot_eager", fullgraph=False)
    got = fn(x)
    got.sum().backward()
    x_ref = q.clone().requires_grad_()
    expected = ref.maxsim(x_ref, qm, d, dm)
    expected.sum().backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x.grad, x_ref.grad)


def test_opcheck():
    q, qm = tokens(2, 5, 8, seed=71).float(), ragged_mask(2, 5, seed=72)
    d, dm = tokens(1, 3, 6, 8, seed=73).float(), ragged_mask(1, 3, 6, seed=74)
    args = (q.requires_grad_(), qm, d.requires_grad_(), dm, True, "cpu")
    torch.library.opcheck(torch.ops.spherekit.maxsim_fwd.default, args)
    scores, argmax = torch.ops.spherekit.maxsim_fwd(*args)
    bwd = (torch.rand(2, 3), q.detach(), qm, d.detach(), dm, argmax, True, True, True, "cpu")
    torch.library.opcheck(torch.ops.spherekit.maxsim_bwd.default, bwd, test_utils=("test_schema", "test_faketensor"))


def _pylate_colbert_scores(q, d, q_mask, d_mask):
    """PyLate's torch scoring (pylate.scores.colbert_scores), written out: masks multiply the similarities (padded
    entries become 0), then the max over document tokens and the sum over query tokens."""
    scores = torch.einsum("ash,bth->abst", q, d)
    scores = scores * q_mask[:, None, :, None] * d_mask[None, :, None, :]
    return scores.max(dim=-1).values.sum(dim=-1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sum_reduction_is_colbert_and_pylate(backend):
    """reduction="sum" gives PyLate's scores where they agree (each valid query token's best valid similarity is
    >= 0: here non-negative tokens), padded tokens excluded; "mean" is the sum over the valid query tokens' count."""
    gen = torch.Generator().manual_seed(0)
    q, d = torch.rand(3, 7, 16, generator=gen), torch.rand(5, 11, 16, generator=gen)
    q_mask, d_mask = torch.rand(3, 7, generator=gen) < 0.8, torch.rand(5, 11, generator=gen) < 0.7
    q_mask[:, 0] = d_mask[:, 0] = True
    qn, dn = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(d, dim=-1)
    pylate = _pylate_colbert_scores(qn, dn, q_mask.float(), d_mask.float())
    ours = maxsim(q, q_mask, d, d_mask, reduction="sum", backend=backend)
    torch.testing.assert_close(ours, pylate, atol=1e-5, rtol=1e-5)
    mean = maxsim(q, q_mask, d, d_mask, backend=backend)
    torch.testing.assert_close(mean * q_mask.sum(1, keepdim=True), ours, atol=1e-5, rtol=1e-5)
    paired = maxsim(q[:3], q_mask[:3], d[:3], d_mask[:3], pairwise=True, reduction="sum", backend=backend)
    torch.testing.assert_close(paired, ours[torch.arange(3), torch.arange(3)], atol=1e-5, rtol=1e-5)
    q.requires_grad_(True)
    maxsim(q, q_mask, d, d_mask, reduction="sum", backend=backend).sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_reduction_is_checked():
    q, d = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"reduction must be one of \('mean', 'sum'\), got 'max'"):
        maxsim(q, None, d, None, reduction="max")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_hf_attention_masks_are_accepted(dtype):
    """A Hugging Face attention mask (0/1 integers) is a mask: the same scores as its bool form."""
    inputs, _ = _case("allpairs", SHAPES[0], seed=5)
    want = maxsim(inputs["q"], inputs["q_mask"], inputs["d"], inputs["d_mask"], backend="cpu")
    got = maxsim(inputs["q"], inputs["q_mask"].to(dtype), inputs["d"], inputs["d_mask"].to(dtype), backend="cpu")
    torch.testing.assert_close(got, want)
