"""maxsim_ragged (cpu and reference paths; the CUDA kernel has its own tests in test_maxsim_cuda.py) against the
fp64 oracle and against padded maxsim: ragged lengths incl. 1-token documents, chunks cut between documents,
fp32/fp16, a query mask or None, normalize on/off, both reductions, no autograd; the cpu path's fixed token
chunks (forced small) cut documents anywhere."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import maxsim, maxsim_ragged
from spherekit.reference import sim_map as ref
from tests._oracle import assert_close_to_oracle
from tests.ops._sim_map_cases import DTYPES, small_cpu_chunks, tokens  # noqa: F401

LENGTHS = [1, 17, 40, 3, 1, 29, 8]


@pytest.fixture(autouse=True)
def _chunks(small_cpu_chunks):  # noqa: F811
    pass


def _case(m, h, lengths, seed):
    q = tokens(m, h, seed=seed)
    docs = tokens(sum(lengths), h, seed=seed + 1)
    offsets = torch.tensor([0] + lengths).cumsum(0)
    mask = torch.rand(m, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[-1] = True
    return q, mask, docs, offsets


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [1, 37])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("masked", [True, False])
def test_matches_oracle(backend, dtype, m, normalize, masked):
    q, mask, docs, offsets = _case(m, 24, LENGTHS, seed=m)
    mask = mask if masked else None
    reduction = "mean" if normalize else "sum"
    got = maxsim_ragged(q.to(dtype), docs.to(dtype), offsets, q_mask=mask, normalize=normalize, reduction=reduction,
                        backend=backend)
    assert got.dtype == torch.float32 and got.shape == (len(LENGTHS),) and not got.requires_grad
    kw = dict(normalize=normalize, reduction=reduction)
    oracle = ref.maxsim_ragged(q, mask, docs, offsets, **kw, compute_dtype=torch.float64)
    base = ref.maxsim_ragged(q.to(dtype), mask, docs.to(dtype), offsets, **kw, compute_dtype=dtype)
    assert_close_to_oracle("scores", got, base, oracle, dtype)


def test_equals_padded_maxsim():
    q, mask, docs, offsets = _case(9, 16, LENGTHS, seed=3)
    n = max(LENGTHS)
    padded = torch.zeros(len(LENGTHS), n, 16, dtype=torch.float64)
    d_mask = torch.zeros(len(LENGTHS), n, dtype=torch.bool)
    for k, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        padded[k, : b - a], d_mask[k, : b - a] = docs[a:b], True
    for kw in (dict(), dict(normalize=True, reduction="mean")):  # the defaults, and F1
        expected = maxsim(q[None], padded, q_mask=mask[None], d_mask=d_mask, **kw, backend="cpu")[0]
        torch.testing.assert_close(maxsim_ragged(q, docs, offsets, q_mask=mask, **kw, backend="cpu"), expected)


def test_inputs_with_grad_give_a_detached_result():
    q, mask, docs, offsets = _case(5, 8, LENGTHS, seed=5)
    out = maxsim_ragged(q.float().requires_grad_(), docs.float().requires_grad_(), offsets, q_mask=mask)
    assert not out.requires_grad


def test_opcheck():
    q, mask, docs, offsets = _case(5, 8, LENGTHS, seed=7)
    for args in ((q.float(), mask, docs.float(), offsets, True, True, "cpu"),
                 (q.float(), None, docs.float(), offsets, False, False, "cpu")):
        torch.library.opcheck(torch.ops.spherekit.maxsim_ragged.default, args,
                              test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_sum_reduction_the_default_equals_padded_maxsim(backend):
    q, q_mask = tokens(1, 5, 12, seed=3)[0], torch.tensor([True, True, False, True, True])
    lengths = [3, 7, 1, 4]
    docs = tokens(sum(lengths), 12, seed=4)
    offsets = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    ragged = maxsim_ragged(q, docs, offsets, q_mask=q_mask, backend=backend)
    mean = maxsim_ragged(q, docs, offsets, q_mask=q_mask, reduction="mean", backend=backend)
    assert torch.allclose(ragged, mean * 4, atol=1e-6)
    padded = torch.zeros(len(lengths), max(lengths), 12, dtype=torch.float64)
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.bool)
    for k, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        padded[k, : b - a], mask[k, : b - a] = docs[a:b], True
    expected = maxsim(q[None], padded, q_mask=q_mask[None], d_mask=mask, backend="reference")[0]
    torch.testing.assert_close(ragged, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="reduction must be one of"):
        maxsim_ragged(q, docs, offsets, q_mask=q_mask, reduction="none")
