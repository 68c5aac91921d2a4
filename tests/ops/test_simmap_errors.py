"""Bad input to the token-similarity-map ops gets a clear error naming the argument, the expected and the actual
value: hidden sizes, mask shapes and dtypes, queries / documents without a valid token, layouts, patch, channels,
lam / tau, NaN / Inf, offsets, backends."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import global_avg_sim, maxsim, maxsim_ragged, sim_map, soft_align

NAN, INF = float("nan"), float("inf")


def _good(Bq=2, Bd=3, m=4, n=5, h=8):
    gen = torch.Generator().manual_seed(0)
    return dict(q=torch.randn(Bq, m, h, generator=gen), q_mask=torch.ones(Bq, m, dtype=torch.bool),
                d=torch.randn(Bd, n, h, generator=gen), d_mask=torch.ones(Bd, n, dtype=torch.bool))


def _set(x, key, index, value):
    t = x[key].clone()
    t[index] = value
    return {**x, key: t}


COMMON = [  # (override of the paired inputs (B = 2), error, message)
    (dict(q=torch.randn(2, 4)), ValueError, "q must have 3 dimensions"),
    (dict(q=torch.randn(2, 4, 8).long()), TypeError, "q must have dtype in"),
    (dict(q=torch.randn(2, 0, 8), q_mask=torch.ones(2, 0, dtype=torch.bool)), ValueError, "q is empty"),
    (dict(d=torch.randn(2, 5, 7)), ValueError, r"d.shape\[-1\] must equal the hidden size h of q \(8\)"),
    (dict(d=torch.randn(2, 5, 8).half()), TypeError, r"d must have the dtype of q \(torch.float32\)"),
    (dict(q_mask=torch.ones(2, 4, dtype=torch.int64)), TypeError, "q_mask must have dtype torch.bool"),
    (dict(d_mask=torch.ones(2, 5)), TypeError, "d_mask must have dtype torch.bool"),
    (dict(q_mask=torch.ones(2, 3, dtype=torch.bool)), ValueError, r"q_mask must have shape \(2, 4\), got \(2, 3\)"),
    (dict(d_mask=torch.ones(5, dtype=torch.bool)), ValueError, r"d_mask must have shape \(2, 5\), got \(5,\)"),
    (dict(q_mask=[[True] * 4] * 2), TypeError, "q_mask must be a bool torch.Tensor or None"),
    ("no_valid_query", ValueError, "q_mask: query 1 has no valid token"),
    ("no_valid_doc", ValueError, "d_mask: document 0 has no valid token"),
    ("nan_q", ValueError, "NaN or Inf found in q"),
    ("inf_d", ValueError, "NaN or Inf found in d"),
    (dict(backend="fast"), ValueError, "backend must be one of"),
]


def _apply(override):
    x = _good(Bd=2)
    if override == "no_valid_query":
        return _set(x, "q_mask", 1, False)
    if override == "no_valid_doc":
        return _set(x, "d_mask", 0, False)
    if override == "nan_q":
        return _set(x, "q", (0, 1, 2), NAN)
    if override == "inf_d":
        return _set(x, "d", (1, 4, 0), -INF)
    return {**x, **override}


def _call(fn, x, **kwargs):
    x = dict(x)
    return fn(x.pop("q"), x.pop("q_mask"), x.pop("d"), x.pop("d_mask"), **x, **kwargs)


OPS = {
    "maxsim": maxsim,
    "maxsim_pairwise": lambda *a, **k: maxsim(*a, pairwise=True, **k),
    "soft_align": soft_align,
    "sim_map": sim_map,
    "global_avg_sim": global_avg_sim,
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("override, error, match", COMMON, ids=[str(c[2])[:40] for c in COMMON])
def test_common_errors(op, override, error, match):
    with pytest.raises(error, match=match):
        _call(OPS[op], _apply(override))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(pairwise=True), ValueError, r"pairwise=True needs as many documents as queries: Bq=2, Bd=3"),
    (dict(pairwise=1), TypeError, "pairwise must be a bool"),
    (dict(normalize="yes"), TypeError, "normalize must be a bool"),
    (dict(backend="cuda"), ValueError, "backend 'cuda' is not implemented"),
])
def test_maxsim_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        _call(maxsim, _good(), **kwargs)


def test_maxsim_per_query_layout_errors():
    x = _good()
    d4, dm4 = torch.randn(2, 3, 5, 8), torch.ones(2, 3, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"d.shape\[0\] must equal the number of queries Bq \(2\)"):
        maxsim(x["q"], x["q_mask"], torch.randn(3, 3, 5, 8), torch.ones(3, 3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="pairwise=True needs d of shape"):
        maxsim(x["q"], x["q_mask"], d4, dm4, pairwise=True)
    with pytest.raises(ValueError, match=r"d_mask must have shape \(2, 3, 5\), got \(2, 5\)"):
        maxsim(x["q"], x["q_mask"], d4, dm4[:, 0])
    bad = dm4.clone()
    bad[1, 2] = False
    with pytest.raises(ValueError, match=r"d_mask: document \(1, 2\) has no valid token"):
        maxsim(x["q"], x["q_mask"], d4, bad)
    with pytest.raises(ValueError, match="d must have 3 or 4 dimensions"):
        maxsim(x["q"], x["q_mask"], torch.randn(5, 8), None)


def test_paired_ops_need_equal_batches():
    for fn in (soft_align, sim_map, global_avg_sim):
        with pytest.raises(ValueError, match=r"d.shape\[0\] must equal the batch size B of q \(2\)"):
            _call(fn, _good(Bd=3))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tau=0.0), ValueError, "tau must be a finite float > 0, got 0.0"),
    (dict(tau=-1.0), ValueError, "tau must be a finite float > 0"),
    (dict(tau=NAN), ValueError, "tau must be a finite float > 0"),
    (dict(tau=1e-39), ValueError, r"tau must be >= 0.0001 \(and finite\), got 1e-39"),
    (dict(tau=torch.tensor(5e-5, requires_grad=True)), ValueError, "tau must be >= 0.0001"),
    (dict(lam=INF), ValueError, "lam must be a finite float, got inf"),
    (dict(lam=torch.ones(2)), ValueError, "lam must be a float or a 0-dim floating tensor"),
    (dict(tau=torch.tensor(1)), ValueError, "tau must be a float or a 0-dim floating tensor"),
    (dict(lam="0.1"), TypeError, "lam must be a float or a 0-dim tensor"),
    (dict(tau=True), TypeError, "tau must be a float or a 0-dim tensor"),
    (dict(tau=torch.tensor(0.1, device="meta")), ValueError, "tau must be on the device of q"),
])
def test_soft_align_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        _call(soft_align, _good(Bd=2), **kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(patch=0), ValueError, "patch must be None or an int >= 1, got 0"),
    (dict(patch=-2), ValueError, "patch must be None or an int >= 1, got -2"),
    (dict(patch=2.0), TypeError, "patch must be None or an int >= 1, got float"),
    (dict(patch=True), TypeError, "patch must be None or an int >= 1, got bool"),
    (dict(channels=("sim", "diag")), ValueError, "channels: unknown channel 'diag'"),
    (dict(channels=()), ValueError, "channels must be a non-empty tuple"),
    (dict(channels=("sim", "sim")), ValueError, "channels must not repeat a name"),
    (dict(clip=None), TypeError, "clip must be a bool"),
    (dict(out_dtype=torch.int32), TypeError, "out_dtype must be None or one of"),
])
def test_sim_map_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        _call(sim_map, _good(Bd=2), **kwargs)


def _ragged():
    gen = torch.Generator().manual_seed(0)
    return dict(q=torch.randn(4, 8, generator=gen), q_mask=None, docs=torch.randn(9, 8, generator=gen),
                offsets=torch.tensor([0, 2, 7, 9]))


@pytest.mark.parametrize("override, error, match", [
    (dict(q=torch.randn(1, 4, 8)), ValueError, "q must have 2 dimensions"),
    (dict(docs=torch.randn(9, 6)), ValueError, r"docs.shape\[-1\] must equal the hidden size h of q \(8\)"),
    (dict(docs=torch.randn(9, 8).double()), TypeError, "docs must have the dtype of q"),
    (dict(q_mask=torch.zeros(4, dtype=torch.bool)), ValueError, "q_mask: the query has no valid token"),
    (dict(q_mask=torch.ones(4)), TypeError, "q_mask must have dtype torch.bool"),
    (dict(q_mask=torch.ones(3, dtype=torch.bool)), ValueError, r"q_mask must have shape \(4,\)"),
    (dict(offsets=torch.tensor([0, 2, 7, 9], dtype=torch.int32)), TypeError, "offsets must be a 1-D int64 tensor"),
    (dict(offsets=torch.tensor([[0, 9]])), TypeError, "offsets must be a 1-D int64 tensor"),
    (dict(offsets=torch.tensor([0])), ValueError, "offsets must hold N \\+ 1 >= 2 entries"),
    (dict(offsets=torch.tensor([1, 2, 9])), ValueError, "offsets must start at 0 and end at the number of packed"),
    (dict(offsets=torch.tensor([0, 2, 8])), ValueError, "offsets\\[-1\\]=8"),
    (dict(offsets=torch.tensor([0, 2, 2, 9])), ValueError, "document 1 has no valid token"),
    (dict(offsets=torch.tensor([0, 5, 2, 9])), ValueError, "offsets must be strictly increasing"),
    ("nan_docs", ValueError, "NaN or Inf found in docs"),
    (dict(backend="triton"), ValueError, "backend 'triton' is not implemented"),
    (dict(backend="cuda"), RuntimeError, "backend 'cuda' cannot run here"),
])
def test_maxsim_ragged_errors(override, error, match):
    x = _ragged()
    if override == "nan_docs":
        x["docs"][3, 1] = NAN
    else:
        x.update(override)
    with pytest.raises(error, match=match):
        maxsim_ragged(x.pop("q"), x.pop("q_mask"), x.pop("docs"), x.pop("offsets"), **x)


def test_triton_rejects_float64():
    x = _good(Bd=2)
    x["q"], x["d"] = x["q"].double(), x["d"].double()
    with pytest.raises(TypeError, match="backend 'triton' takes float32 / float16 / bfloat16 tokens"):
        _call(maxsim, x, backend="triton")
