"""Stage 1: the faiss IndexFlatIP search equals exact torch search; ids, normalisation and errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spherekit.retrieval import PooledIndex, exact_search, faiss_gpu_available


def _data(n=50, q=7, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g) * 3.0, torch.randn(q, d, generator=g)


@pytest.mark.parametrize("k", (1, 10, 50))
def test_faiss_equals_exact_torch_search(k):
    corpus, queries = _data()
    index = PooledIndex(16, device="cpu")
    index.add(corpus[:20])
    index.add(corpus[20:].numpy())  # numpy input, a second add continues the ids
    got = index.search(queries, k)
    scores, pos = exact_search(queries, corpus, k)
    assert torch.equal(got.ids, pos) and torch.equal(got.positions, pos)
    torch.testing.assert_close(got.scores, scores, atol=1e-5, rtol=1e-5)
    # cosine: the scores are those of the normalised vectors
    want = F.normalize(queries, dim=-1) @ F.normalize(corpus, dim=-1).T
    torch.testing.assert_close(got.scores, want.gather(1, pos), atol=1e-5, rtol=1e-5)
    assert bool((got.scores[:, :-1] >= got.scores[:, 1:]).all())


def test_custom_ids_and_raw_inner_product():
    corpus, queries = _data(n=12)
    ids = torch.arange(100, 112).flip(0)
    index = PooledIndex(16, normalize=False)
    index.add(corpus, ids=ids)
    got = index.search(queries, 5)
    scores, pos = torch.topk(queries @ corpus.T, 5)
    assert torch.equal(got.positions, pos) and torch.equal(got.ids, ids[pos])
    torch.testing.assert_close(got.scores, scores, atol=1e-4, rtol=1e-5)


def test_errors():
    corpus, queries = _data(n=5)
    index = PooledIndex(16)
    index.add(corpus)
    with pytest.raises(ValueError, match="k=6 exceeds the number of indexed documents"):
        index.search(queries, 6)
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        index.search(queries, 0)
    with pytest.raises(ValueError, match="queries has dimension 8"):
        index.search(queries[:, :8], 2)
    with pytest.raises(ValueError, match="vectors has dimension 15"):
        index.add(corpus[:, :15])
    with pytest.raises(ValueError, match="NaN"):
        index.add(torch.full((1, 16), float("nan")))
    with pytest.raises(ValueError, match="unique"):
        index.add(corpus[:1], ids=torch.tensor([3]))
    with pytest.raises(ValueError, match="2-D"):
        index.add(corpus[0])
    with pytest.raises(ValueError, match="exceeds"):
        exact_search(queries, corpus, 9)
    with pytest.raises(ValueError, match="device must be one of"):
        PooledIndex(16, device="tpu")
    assert index.ntotal == 5


def test_gpu_detection_is_optional():
    assert isinstance(faiss_gpu_available(), bool)
    if not faiss_gpu_available():
        with pytest.raises(RuntimeError, match="faiss-gpu"):
            PooledIndex(4, device="gpu")
        assert PooledIndex(4).on_gpu is False


@pytest.mark.gpu
def test_gpu_index_equals_exact_search():
    if not faiss_gpu_available():
        pytest.skip("faiss without GPU support")
    corpus, queries = _data(n=300)
    index = PooledIndex(16, device="gpu")
    index.add(corpus)
    got = index.search(queries, 20)
    scores, pos = exact_search(queries, corpus, 20)
    assert index.on_gpu and torch.equal(got.ids, pos)
    np.testing.assert_allclose(got.scores.numpy(), scores.numpy(), atol=1e-4)
