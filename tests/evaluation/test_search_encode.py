"""Exact top-k search (torch chunks, faiss) vs brute force; per-layer encoding vs the model's own readout."""

import pytest
import torch

from spherekit.evaluation.evaluators.retrieval import first_relevant_rank, retrieval_scores
from spherekit.evaluation.metrics import mrr
from spherekit.evaluation.search import rank_of_targets, topk_cosine


def _data(q=37, n=129, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(q, d, generator=g) * 3, torch.randn(n, d, generator=g)


@pytest.mark.parametrize("backend", ["torch", "faiss"])
def test_topk_matches_bruteforce(backend):
    q, d = _data()
    scores, ids = topk_cosine(q, d, 10, backend=backend, chunk_size=7)
    sim = torch.nn.functional.normalize(q, dim=1) @ torch.nn.functional.normalize(d, dim=1).T
    ref = torch.argsort(sim, dim=1, descending=True)[:, :10]
    assert torch.equal(ids, ref)
    assert torch.allclose(scores, sim.gather(1, ref), atol=1e-5)


def test_auto_switches_to_faiss_for_large_work():
    q, d = _data()
    a = topk_cosine(q, d, 5, backend="auto", faiss_min_work=1)[1]
    b = topk_cosine(q, d, 5, backend="torch")[1]
    assert torch.equal(a, b)
    assert topk_cosine(q, d, 500)[1].shape == (37, 129)  # k capped at the pool size


def test_full_rank_mrr_matches_metric_on_full_ranking():
    q, d = _data(seed=3)
    g = torch.Generator().manual_seed(1)
    relevant = [set(torch.randint(0, 129, (int(torch.randint(1, 4, (1,), generator=g)),), generator=g).tolist()) for _ in range(37)]
    _, full = topk_cosine(q, d, 129)
    assert float((1.0 / first_relevant_rank(q, d, relevant).double()).mean()) == pytest.approx(mrr(full, relevant))
    values = retrieval_scores(q, d, relevant, acc1=True)
    assert float(values["MRR"].mean()) == pytest.approx(mrr(full, relevant))
    targets = torch.tensor([min(r) for r in relevant])
    single = first_relevant_rank(q, d, [{t} for t in targets.tolist()])
    assert torch.equal(single, rank_of_targets(q, d, targets))


def test_search_errors():
    with pytest.raises(ValueError, match="same dimension"):
        topk_cosine(torch.randn(2, 3), torch.randn(4, 5), 1)
    with pytest.raises(ValueError, match="backend"):
        topk_cosine(torch.randn(2, 3), torch.randn(4, 3), 1, backend="gpu")
    with pytest.raises(ValueError, match="pool"):
        first_relevant_rank(torch.randn(2, 3), torch.randn(4, 3), [{0}, {9}])


def test_encode_layers_final_layer_is_the_mean_pool_readout(tiny_model):
    from spherekit.evaluation.encode import encode, encode_layers

    texts = ["a cup", "the dirty plate is not clean", "joy", "warm blooded vertebrate that feeds young milk"]
    layers = encode_layers(tiny_model, texts, batch_size=3)
    assert layers.shape == (2, 4, 32)  # embeddings + 1 transformer layer
    assert torch.allclose(layers[-1], encode(tiny_model, texts, batch_size=2), atol=1e-5)
    assert not torch.allclose(layers[0], layers[-1], atol=1e-3)
    raw = encode_layers(tiny_model, texts, normalize=False)
    assert torch.allclose(raw[-1], tiny_model.encode(texts, convert_to_tensor=True), atol=1e-5)
