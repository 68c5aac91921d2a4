"""Ragged MaxSim CUDA kernel (csrc/cuda/maxsim.cu via spherekit.ops._maxsim_cuda) against the fp64 oracle
spherekit.reference.sim_map.maxsim_ragged: ragged document lengths around the 128-token tile (incl. 0 and 1),
query lengths around the 32-token tile, fp32/fp16/bf16, normalize on/off, masks, vector and scalar load
paths (h % 8, row strides), and the argument errors (which need no GPU)."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import _maxsim_cuda
from spherekit.reference import sim_map as ref
from tests._cuda import need_cuda_extension
from tests._oracle import assert_close_to_oracle

LENGTHS = [1, 127, 128, 129, 300, 7, 64, 2]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _case(m, h, lengths, *, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(m, h, generator=gen, dtype=torch.float64) * scale
    docs = torch.randn(sum(lengths), h, generator=gen, dtype=torch.float64) * scale
    offsets = torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0)
    q_mask = torch.rand(m, generator=gen) > 0.3
    q_mask[0] = True
    return q, q_mask, docs, offsets


def _needs_cuda_ext():
    need_cuda_extension("maxsim_ragged")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,h", [(1, 64), (37, 24), (32, 128), (65, 20), (8, 768)])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("masked", [True, False])
def test_matches_oracle(dtype, m, h, normalize, masked):
    _needs_cuda_ext()
    q, q_mask, docs, offsets = _case(m, h, LENGTHS, scale=1.0 if normalize else 0.3)
    q_mask = q_mask if masked else None
    dev = torch.device("cuda")
    got = _maxsim_cuda.maxsim_ragged(q.to(dev, dtype), None if q_mask is None else q_mask.to(dev),
                                     docs.to(dev, dtype), offsets.to(dev), normalize=normalize)
    assert got.dtype == torch.float32 and got.shape == (len(LENGTHS),)
    oracle = ref.maxsim_ragged(q, q_mask, docs, offsets, normalize=normalize, compute_dtype=torch.float64)
    base = ref.maxsim_ragged(q.to(dev, dtype), None if q_mask is None else q_mask.to(dev), docs.to(dev, dtype),
                             offsets.to(dev), normalize=normalize, compute_dtype=dtype)
    assert_close_to_oracle("scores", got.cpu(), base.cpu(), oracle, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_strided_and_empty_documents(dtype):
    """Row strides that are not multiples of 8 (scalar loads), a misaligned base, and empty documents (score 0)."""
    _needs_cuda_ext()
    lengths = [5, 0, 130, 0, 1]
    q, q_mask, docs, offsets = _case(33, 16, lengths, seed=1)
    dev = torch.device("cuda")
    wide = torch.zeros(docs.shape[0], 21, dtype=dtype, device=dev)
    wide[:, 1:17] = docs.to(dev, dtype)  # stride 21, base offset 1 element: no vector loads
    got = _maxsim_cuda.maxsim_ragged(q.to(dev, dtype), q_mask.to(dev), wide[:, 1:17], offsets.to(dev))
    nonempty = [k for k, n in enumerate(lengths) if n > 0]
    sub = torch.tensor([0] + [lengths[k] for k in nonempty]).cumsum(0)
    oracle = ref.maxsim_ragged(q, q_mask, docs, sub, compute_dtype=torch.float64)
    base = ref.maxsim_ragged(q.to(dev, dtype), q_mask.to(dev), docs.to(dev, dtype), sub.to(dev), compute_dtype=dtype)
    assert_close_to_oracle("scores", got[nonempty].cpu(), base.cpu(), oracle, dtype)
    assert (got[[1, 3]] == 0).all()
    same = _maxsim_cuda.maxsim_ragged(q.to(dev, dtype), q_mask.to(dev), docs.to(dev, dtype).contiguous(),
                                      offsets.to(dev))
    assert_close_to_oracle("scores (contiguous)", same[nonempty].cpu(), base.cpu(), oracle, dtype)


@pytest.mark.gpu
def test_runs_on_current_stream():
    _needs_cuda_ext()
    q, q_mask, docs, offsets = _case(16, 64, LENGTHS)
    dev = torch.device("cuda")
    args = (q.to(dev, torch.float16), q_mask.to(dev), docs.to(dev, torch.float16), offsets.to(dev))
    expect = _maxsim_cuda.maxsim_ragged(*args)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = _maxsim_cuda.maxsim_ragged(*args)
    side.synchronize()
    torch.testing.assert_close(got, expect, rtol=0, atol=0)


def _cpu_args():
    q = torch.randn(4, 8)
    return q, None, torch.randn(10, 8), torch.tensor([0, 3, 10])


@pytest.mark.parametrize("change, error, match", [
    (dict(q=torch.randn(4, 8)), ValueError, "q must be a CUDA tensor"),
    (dict(q=torch.randn(4)), ValueError, "q must have 2 dimensions"),
    (dict(offsets=torch.tensor([0, 3, 10], dtype=torch.int32)), TypeError, "offsets must have dtype torch.int64"),
    (dict(docs=torch.randn(10, 8, dtype=torch.float64)), TypeError, "docs must have the dtype of q"),
])
def test_argument_errors_before_device_work(change, error, match):
    """Errors name the argument; CPU tensors are rejected before anything touches CUDA."""
    q, q_mask, docs, offsets = _cpu_args()
    args = dict(q=q, q_mask=q_mask, docs=docs, offsets=offsets)
    args.update(change)
    with pytest.raises(error, match=match):
        _maxsim_cuda.maxsim_ragged(args["q"], args["q_mask"], args["docs"], args["offsets"])


def test_offsets_check():
    with pytest.raises(ValueError, match=r"offsets must be non-decreasing, got offsets\[1\]=5 > offsets\[2\]=3"):
        _maxsim_cuda.check_offsets(torch.tensor([0, 5, 3, 10]), 10)
    with pytest.raises(ValueError, match=r"offsets must lie in \[0, 10\]"):
        _maxsim_cuda.check_offsets(torch.tensor([0, 5, 11]), 10)
    _maxsim_cuda.check_offsets(torch.tensor([0, 5, 5, 10]), 10)


@pytest.mark.gpu
@pytest.mark.parametrize("normalize", [True, False])
def test_nan_propagates(normalize):
    """A NaN in a document token makes that document's score NaN (the kernel's max keeps NaN, fmaxf would drop it);
    a NaN in a valid query token makes every score NaN; the other documents are unchanged."""
    _needs_cuda_ext()
    q, q_mask, docs, offsets = _case(16, 64, LENGTHS, seed=2)
    dev = torch.device("cuda")
    args = dict(q=q.to(dev, torch.float32), q_mask=q_mask.to(dev), docs=docs.to(dev, torch.float32),
                offsets=offsets.to(dev))
    clean = _maxsim_cuda.maxsim_ragged(*args.values(), normalize=normalize)
    bad_docs = args["docs"].clone()
    bad_docs[offsets[3] + 5, 7] = float("nan")  # inside document 3 (129 tokens)
    got = _maxsim_cuda.maxsim_ragged(args["q"], args["q_mask"], bad_docs, args["offsets"], normalize=normalize)
    assert torch.isnan(got[3]) and torch.equal(torch.cat([got[:3], got[4:]]), torch.cat([clean[:3], clean[4:]]))
    bad_q = args["q"].clone()
    bad_q[0, 3] = float("nan")  # query token 0 is valid
    got = _maxsim_cuda.maxsim_ragged(bad_q, args["q_mask"], args["docs"], args["offsets"], normalize=normalize)
    assert torch.isnan(got).all()
