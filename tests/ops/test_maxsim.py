"""maxsim against the fp64 oracle: the three candidate layouts, fp32/fp16, ragged masks, m or n = 1, sizes off
the block grid (m=37, n=41, h=24), normalize on/off, both reductions, grad_output != 1, backends cpu (forced through
several chunks), triton (interpreter) and reference; the defaults are PyLate's scores.

Gradients of a max are defined by which token is maximal; in fp16 two nearly equal similarities can trade
places between the kernel and the fp64 oracle. So the gradient check is conditioned on the op's own selection
(the argmax its forward stores): the selection must be maximal in fp64 up to rounding, and the gradient must
match the fp64 gradient of the score with that selection (the 2x same-precision rule).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F

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


def _selected_score(q, q_mask, d, d_mask, argmax, *, pairwise, normalize, reduction, compute_dtype):
    """c sum_{i in Q} <qn_i, dn_{argmax_i}>: the MaxSim score with the selection fixed."""
    qn, dn = ref._prep(q, normalize, compute_dtype), ref._prep(d, normalize, compute_dtype)
    d4, _, _ = to_layout(dn, d_mask, pairwise)
    Bq, K, m = argmax.shape
    d4 = d4.expand(Bq, K, *d4.shape[2:])
    index = argmax.long().clamp_min(0)[..., None].expand(Bq, K, m, d4.shape[-1])
    dots = (qn[:, None] * torch.gather(d4, 2, index)).sum(-1)
    score = ref._masked_row_reduce(dots, q_mask[:, None, :], reduction)
    return score.view(-1) if pairwise else score


def _op_argmax(inputs, pairwise, normalize, dtype, backend):
    q, d = inputs["q"].to(dtype), inputs["d"].to(dtype)
    if normalize:
        q, d = T.normalize_tokens(q), T.normalize_tokens(d)
    d4, dm4, shared = to_layout(d, inputs["d_mask"], pairwise)
    return torch.ops.spherekit.maxsim_fwd(q.contiguous(), inputs["q_mask"], d4.contiguous(), dm4.contiguous(),
                                          shared, True, True, backend)[1]


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
    kw = dict(pairwise=pairwise, normalize=normalize, reduction="mean" if layout == "pairwise" else "sum")
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
    for kw in (dict(), dict(normalize=True, reduction="mean")):  # the defaults (ColBERT's), and F1
        oracle = partial(ref.maxsim, normalize=kw.get("normalize", False), reduction=kw.get("reduction", "sum"))
        compare(partial(maxsim, **kw, backend=backend), oracle, inputs, torch.float32, ("q", "d"))


@pytest.mark.parametrize("backend", BACKENDS + ["reference"])
def test_layouts_agree(backend):
    """all pairs == per-query K with every document repeated; pairwise == the diagonal of all pairs."""
    if backend == "triton":
        need_triton("maxsim")
    q, qm = tokens(3, 9, 16, seed=1).float(), ragged_mask(3, 9, seed=2)
    d, dm = tokens(3, 11, 16, seed=3).float(), ragged_mask(3, 11, seed=4)
    full = maxsim(q, d, q_mask=qm, d_mask=dm, backend=backend)
    per_query = maxsim(q, d[None].expand(3, -1, -1, -1), q_mask=qm, d_mask=dm[None].expand(3, -1, -1), backend=backend)
    pairs = maxsim(q, d, q_mask=qm, d_mask=dm, pairwise=True, backend=backend)
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
        out = maxsim(qx, dx, q_mask=qm, d_mask=dm, normalize=True, backend=backend)
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
    maxsim(full_q, full_d, q_mask=qm, d_mask=dm, backend=backend).sum().backward()
    only_q = q.clone().requires_grad_()
    maxsim(only_q, d, q_mask=qm, d_mask=dm, backend=backend).sum().backward()
    only_d = d.clone().requires_grad_()
    maxsim(q, only_d, q_mask=qm, d_mask=dm, backend=backend).sum().backward()
    torch.testing.assert_close(only_q.grad, full_q.grad)
    torch.testing.assert_close(only_d.grad, full_d.grad)


def test_backward_stores_argmax_not_the_map():
    """What the autograd graph keeps: the inputs and the (Bq, K, m) argmax, nothing of size Bq K m n."""
    Bq, K, m, n, h = 2, 5, 6, 40, 4
    q = tokens(Bq, m, h, seed=1).float().requires_grad_()
    d = tokens(Bq, K, n, h, seed=2).float().requires_grad_()
    out = maxsim(q, d, backend="cpu")
    saved = [t for t in out.grad_fn.saved_tensors if t is not None]
    assert any(t.dtype == torch.int32 and t.shape == (Bq, K, m) for t in saved)
    assert max(t.numel() for t in saved) <= d.numel() < Bq * K * m * n


def test_bf16_and_no_grad_on_cpu():
    q, qm = tokens(3, 6, 16, seed=31), ragged_mask(3, 6, seed=32)
    d, dm = tokens(4, 7, 16, seed=33), ragged_mask(4, 7, seed=34)
    with torch.no_grad():
        out = maxsim(q.bfloat16(), d.bfloat16(), q_mask=qm, d_mask=dm, normalize=True, reduction="mean",
                     backend="cpu")
    assert not out.requires_grad and out.dtype == torch.float32
    oracle = ref.maxsim(q.bfloat16().double(), qm, d.bfloat16().double(), dm, compute_dtype=torch.float64)
    torch.testing.assert_close(out.double(), oracle, atol=2e-2, rtol=0)


def test_masks_none_mean_all_valid():
    q, d = tokens(2, 5, 8, seed=41).float(), tokens(3, 6, 8, seed=42).float()
    ones_q, ones_d = torch.ones(2, 5, dtype=torch.bool), torch.ones(3, 6, dtype=torch.bool)
    torch.testing.assert_close(maxsim(q, d, backend="cpu"), maxsim(q, d, q_mask=ones_q, d_mask=ones_d, backend="cpu"))


UTILS = ("test_schema", "test_faketensor")


def test_opcheck():
    q, qm = tokens(2, 5, 8, seed=71).float(), ragged_mask(2, 5, seed=72)
    d, dm = tokens(1, 3, 6, 8, seed=73).float(), ragged_mask(1, 3, 6, seed=74)
    for q_mask, d_mask, mean in ((qm, dm, True), (None, None, False)):
        args = (q.clone().requires_grad_(), q_mask, d.clone().requires_grad_(), d_mask, True, mean, True, "cpu")
        torch.library.opcheck(torch.ops.spherekit.maxsim_fwd.default, args)
        scores, argmax = torch.ops.spherekit.maxsim_fwd(*args)
        bwd = (torch.rand(2, 3), q, q_mask, d, d_mask, argmax, True, mean, True, True, "cpu")
        torch.library.opcheck(torch.ops.spherekit.maxsim_bwd.default, bwd, test_utils=UTILS)
    no_argmax = (q, qm, d, dm, True, False, False, "cpu")
    torch.library.opcheck(torch.ops.spherekit.maxsim_fwd.default, no_argmax, test_utils=UTILS)
    assert torch.ops.spherekit.maxsim_fwd(*no_argmax)[1].shape == (0,)


def _pylate_colbert_scores(q, d, q_mask, d_mask):
    """PyLate's torch scoring (pylate.scores.colbert_scores), written out: masks multiply the similarities (padded
    entries become 0), then the max over document tokens and the sum over query tokens."""
    scores = torch.einsum("ash,bth->abst", q, d)
    scores = scores * q_mask[:, None, :, None] * d_mask[None, :, None, :]
    return scores.max(dim=-1).values.sum(dim=-1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_defaults_are_colbert_and_pylate(backend):
    """The defaults (reduction="sum", normalize=False) give PyLate's scores of the same tokens where they agree (each
    valid query token's best valid similarity is >= 0: here non-negative tokens), padded tokens excluded; "mean" is
    the sum over the valid query tokens' count; normalize=True is PyLate's score of F.normalize'd tokens."""
    gen = torch.Generator().manual_seed(0)
    q, d = torch.rand(3, 7, 16, generator=gen) * 2, torch.rand(5, 11, 16, generator=gen)
    q_mask, d_mask = torch.rand(3, 7, generator=gen) < 0.8, torch.rand(5, 11, generator=gen) < 0.7
    q_mask[:, 0] = d_mask[:, 0] = True
    pylate = _pylate_colbert_scores(q, d, q_mask.float(), d_mask.float())
    ours = maxsim(q, d, q_mask=q_mask, d_mask=d_mask, backend=backend)
    torch.testing.assert_close(ours, pylate, atol=1e-5, rtol=1e-5)
    assert (ours - pylate).abs().max() < 1e-4 < (pylate / q_mask.sum(1, keepdim=True) - pylate).abs().max()
    mean = maxsim(q, d, q_mask=q_mask, d_mask=d_mask, reduction="mean", backend=backend)
    torch.testing.assert_close(mean * q_mask.sum(1, keepdim=True), ours, atol=1e-5, rtol=1e-5)
    unit = _pylate_colbert_scores(F.normalize(q, dim=-1), F.normalize(d, dim=-1), q_mask.float(), d_mask.float())
    torch.testing.assert_close(maxsim(q, d, q_mask=q_mask, d_mask=d_mask, normalize=True, backend=backend), unit,
                               atol=1e-5, rtol=1e-5)
    paired = maxsim(q[:3], d[:3], q_mask=q_mask[:3], d_mask=d_mask[:3], pairwise=True, backend=backend)
    torch.testing.assert_close(paired, ours[torch.arange(3), torch.arange(3)], atol=1e-5, rtol=1e-5)
    q.requires_grad_(True)
    maxsim(q, d, q_mask=q_mask, d_mask=d_mask, backend=backend).sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_reduction_is_checked():
    q, d = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"reduction must be one of \('sum', 'mean'\), got 'max'"):
        maxsim(q, d, reduction="max")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_hf_attention_masks_are_accepted(dtype):
    """A Hugging Face attention mask (0/1 integers) is a mask: the same scores as its bool form."""
    inputs, _ = _case("allpairs", SHAPES[0], seed=5)
    q, d, qm, dm = inputs["q"], inputs["d"], inputs["q_mask"], inputs["d_mask"]
    want = maxsim(q, d, q_mask=qm, d_mask=dm, backend="cpu")
    got = maxsim(q, d, q_mask=qm.to(dtype), d_mask=dm.to(dtype), backend="cpu")
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inference_skips_the_custom_op_and_the_argmax(backend, monkeypatch):
    """Without a gradient the public op calls its backend directly with store_argmax=False (no argmax computed or
    stored); with one it goes through spherekit::maxsim_fwd and stores it. Same scores either way."""
    if backend == "triton":
        need_triton("maxsim")
    from spherekit.ops.maxsim import _impl

    impl = _impl(backend)
    calls = []
    original = impl.maxsim_fwd

    def spy(*args, **kwargs):
        calls.append(kwargs["store_argmax"])
        return original(*args, **kwargs)

    monkeypatch.setattr(impl, "maxsim_fwd", spy)
    q, qm = tokens(2, 5, 8, seed=81).float(), ragged_mask(2, 5, seed=82)
    d, dm = tokens(3, 6, 8, seed=83).float(), ragged_mask(3, 6, seed=84)
    with torch.no_grad():
        plain = maxsim(q, d, q_mask=qm, d_mask=dm, backend=backend)
    trained = maxsim(q.requires_grad_(), d, q_mask=qm, d_mask=dm, backend=backend)
    assert calls == [False, True]
    torch.testing.assert_close(plain, trained.detach())
