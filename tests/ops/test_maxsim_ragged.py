"""maxsim_ragged (cpu and reference paths; the CUDA kernel has its own tests in test_maxsim_cuda.py) against the
fp64 oracle and against padded maxsim: ragged lengths incl. 1-token documents, chunks cut between documents,
fp32/fp16, a query mask or None, normalize on/off, no autograd."""

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
    got = maxsim_ragged(q.to(dtype), mask, docs.to(dtype), offsets, normalize=normalize, backend=backend)
    assert got.dtype == torch.float32 and got.shape == (len(LENGTHS),) and not got.requires_grad
    oracle = ref.maxsim_ragged(q, mask, docs, offsets, normalize=normalize, compute_dtype=torch.float64)
    base = ref.maxsim_ragged(q.to(dtype), mask, docs.to(dtype), offsets, normalize=normalize, compute_dtype=dtype)
    assert_close_to_oracle("scores", got, base, oracle, dtype)


def test_equals_padded_maxsim():
    q, mask, docs, offsets = _case(9, 16, LENGTHS, seed=3)
    n = max(LENGTHS)
    padded = torch.zeros(len(LENGTHS), n, 16, dtype=torch.float64)
    d_mask = torch.zeros(len(LENGTHS), n, dtype=torch.bool)
    for k, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        padded[k, : b - a], d_mask[k, : b - a] = docs[a:b], True
    expected = maxsim(q[None], mask[None], padded, d_mask, backend="cpu")[0]
    torch.testing.assert_close(maxsim_ragged(q, mask, docs, offsets, backend="cpu"), expected)


def test_inputs_with_grad_give_a_detached_result():
    q, mask, docs, offsets = _case(5, 8, LENGTHS, seed=5)
    out = maxsim_ragged(q.float().requires_grad_(), mask, docs.float().requires_grad_(), offsets)
    assert not out.requires_grad


def test_opcheck():
    q, mask, docs, offsets = _case(5, 8, LENGTHS, seed=7)
    args = (q.float(), mask, docs.float(), offsets, True, "cpu")
    torch.library.opcheck(torch.ops.spherekit.maxsim_ragged.default, args, test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_sum_reduction_equals_padded_maxsim_sum(backend):
    q, q_mask = tokens(1, 5, 12, seed=3)[0], torch.tensor([True, True, False, True, True])
    lengths = [3, 7, 1, 4]
    docs = tokens(sum(lengths), 12, seed=4)
    offsets = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    ragged = maxsim_ragged(q, q_mask, docs, offsets, reduction="sum", backend=backend)
    assert torch.allclose(ragged, maxsim_ragged(q, q_mask, docs, offsets, backend=backend) * 4, atol=1e-6)
    padded = torch.zeros(len(lengths), max(lengths), 12, dtype=torch.float64)
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.bool)
    for k, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        padded[k, : b - a], mask[k, : b - a] = docs[a:b], True
    expected = maxsim(q[None], q_mask[None], padded, mask, reduction="sum", backend="reference")[0]
    torch.testing.assert_close(ragged, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="reduction must be one of"):
        maxsim_ragged(q, q_mask, docs, offsets, reduction="none")
