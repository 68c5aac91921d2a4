"""Two-stage retrieval: a constructed example where MaxSim re-ranking must reorder the pooled-cosine
candidates; padded and ragged stores agree; any verifier re-ranks its scores; nDCG@10 / Acc@1."""

import math

import pytest
import torch

from spherekit import ops
from spherekit.nn import MaxSimVerifier, PatchTransformerVerifier
from spherekit.retrieval import (PaddedTokenStore, PooledIndex, RaggedTokenStore, TwoStageRetriever, evaluate,
                                 rerank)

E = torch.eye(8)


def _corpus():
    """Docs (ids 10..14) and pooled keys chosen so stage 1 ranks them B, C, D, A, E for the query."""
    docs = {
        10: [E[0], E[1], E[5]],  # A: both query tokens exactly -> MaxSim 1
        11: [E[0], E[0], E[0], E[6]],  # B: only q0 -> 0.5
        12: [E[2], E[3]],  # C: nothing -> 0
        13: [0.6 * E[0] + 0.8 * E[2], E[1]],  # D: q0 -> 0.6, q1 -> 1 -> 0.8
        14: [E[0], E[1]],  # E: MaxSim 1 too, but pooled cosine leaves it out of the top 4
    }
    cosines = torch.tensor([0.5, 1.0, 0.9, 0.7, -1.0])  # with the query key e_0
    pooled = torch.stack([cosines, (1 - cosines ** 2).sqrt(), torch.zeros(5), torch.zeros(5)], dim=1)
    n = max(len(t) for t in docs.values())
    tokens = torch.zeros(5, n, 8)
    mask = torch.zeros(5, n, dtype=torch.bool)
    for r, toks in enumerate(docs.values()):
        tokens[r, :len(toks)] = torch.stack(toks) * (1.0 + r)  # norms differ: MaxSim normalises
        mask[r, :len(toks)] = True
    return pooled, tokens, mask, torch.tensor(list(docs))


def _query():
    q = torch.stack([E[0], E[1], torch.zeros(8)])[None]  # two tokens + one padding position
    return torch.tensor([[1.0, 0, 0, 0]]), q, torch.tensor([[True, True, False]])


@pytest.mark.parametrize("ragged", (False, True))
def test_maxsim_reranks_the_stage1_candidates(ragged):
    pooled, tokens, mask, ids = _corpus()
    index = PooledIndex(4)
    index.add(pooled, ids=ids)
    store = RaggedTokenStore.from_padded(tokens, mask) if ragged else PaddedTokenStore(tokens, mask)
    qv, qt, qm = _query()
    result = TwoStageRetriever(index, store, MaxSimVerifier(), k=4).search(qv, qt, qm)
    assert result.stage1_ids.tolist() == [[11, 12, 13, 10]]
    torch.testing.assert_close(result.stage1_scores, torch.tensor([[1.0, 0.9, 0.7, 0.5]]))
    assert result.ids.tolist() == [[10, 13, 11, 12]]  # E (14) is outside stage 1's top 4
    torch.testing.assert_close(result.scores, torch.tensor([[1.0, 0.8, 0.5, 0.0]]), atol=1e-6, rtol=0)
    # the evaluation on this query: A is the relevant document
    assert evaluate(result.ids, [{10: 1}]) == {"nDCG@10": pytest.approx(1.0), "Acc@1": 1.0}
    stage1 = evaluate(result.stage1_ids, [{10: 1}])
    assert stage1["Acc@1"] == 0.0 and stage1["nDCG@10"] == pytest.approx(1 / math.log2(5))
    without = TwoStageRetriever(index, store, None, k=4).search(qv)
    assert torch.equal(without.ids, result.stage1_ids)


def test_ragged_maxsim_path_equals_the_padded_path():
    g = torch.Generator().manual_seed(0)
    n_docs, h = 30, 12
    lengths = torch.randint(1, 9, (n_docs,), generator=g)
    tokens = torch.randn(n_docs, 8, h, generator=g)
    mask = torch.arange(8)[None] < lengths[:, None]
    pooled = torch.randn(n_docs, 6, generator=g)
    index = PooledIndex(6)
    index.add(pooled)
    qv, qt = torch.randn(5, 6, generator=g), torch.randn(5, 4, h, generator=g)
    qm = torch.ones(5, 4, dtype=torch.bool)
    qm[1, 2:] = False
    padded = TwoStageRetriever(index, PaddedTokenStore(tokens, mask), MaxSimVerifier(), k=11,
                               pair_batch_size=7).search(qv, qt, qm)
    ragged = TwoStageRetriever(index, RaggedTokenStore.from_padded(tokens, mask), MaxSimVerifier(), k=11
                               ).search(qv, qt, qm)
    assert torch.equal(padded.ids, ragged.ids)
    torch.testing.assert_close(padded.scores, ragged.scores, atol=1e-5, rtol=1e-5)
    want = ops.maxsim(qt, tokens[padded.ids], q_mask=qm, d_mask=mask[padded.ids], normalize=True,
                      reduction="mean")  # F1; ids are positions here
    torch.testing.assert_close(padded.scores, want, atol=1e-5, rtol=1e-5)
    assert bool((padded.scores[:, :-1] >= padded.scores[:, 1:]).all())


def test_any_verifier_reranks_by_its_own_scores():
    g = torch.Generator().manual_seed(1)
    tokens, mask = torch.randn(9, 5, 6, generator=g), torch.ones(9, 5, dtype=torch.bool)
    mask[3, 2:] = False
    torch.manual_seed(0)
    verifier = PatchTransformerVerifier(patch=2, width=8, num_layers=1, num_heads=2, ff_dim=8, map_size=8)
    index = PooledIndex(6)
    index.add(tokens.mean(1))
    qv, qt = torch.randn(2, 6, generator=g), torch.randn(2, 3, 6, generator=g)
    result = TwoStageRetriever(index, PaddedTokenStore(tokens, mask), verifier, k=6, pair_batch_size=5
                               ).search(qv, qt, None)
    assert verifier.training  # search evaluates in eval mode and restores the mode
    verifier.eval()
    with torch.no_grad():
        for i in range(2):
            ids = result.stage1_ids[i]
            s = verifier.score(qt[i:i + 1].expand(6, -1, -1), None, tokens[ids], mask[ids])
            order = torch.sort(s, descending=True, stable=True).indices
            assert torch.equal(result.ids[i], ids[order])
            torch.testing.assert_close(result.scores[i], s[order], atol=1e-5, rtol=1e-5)


def test_errors():
    pooled, tokens, mask, ids = _corpus()
    index = PooledIndex(4)
    index.add(pooled, ids=ids)
    store = PaddedTokenStore(tokens, mask)
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 5\]"):
        TwoStageRetriever(index, store, MaxSimVerifier(), k=100)
    with pytest.raises(ValueError, match="token store holds 4 documents, the index 5"):
        TwoStageRetriever(index, PaddedTokenStore(tokens[:4], mask[:4]), MaxSimVerifier(), k=2)
    qv, qt, qm = _query()
    retriever = TwoStageRetriever(index, store, MaxSimVerifier(), k=2)
    with pytest.raises(ValueError, match="token dimension 7"):
        retriever.search(qv, qt[..., :7], qm)
    with pytest.raises(ValueError, match="query_tokens are needed"):
        retriever.search(qv)
    with pytest.raises(ValueError, match="every document needs a valid token"):
        PaddedTokenStore(tokens, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="offsets must start at 0"):
        RaggedTokenStore(torch.randn(5, 4), torch.tensor([0, 2, 2, 5]))
    with pytest.raises(ValueError, match="positions must lie in"):
        store.gather(torch.tensor([[7]]))
    with pytest.raises(ValueError, match="ragged_maxsim=True needs a RaggedTokenStore"):
        rerank(MaxSimVerifier(), qt, qm, torch.tensor([[0, 1]]), store, ragged_maxsim=True)


def test_from_texts_finds_the_identical_text(tmp_path):
    from tests.losses._tiny_model import build_tiny_model

    model = build_tiny_model(tmp_path)
    corpus = ["the cup is dirty", "she drove to work", "prices rise", "a warm blooded animal", "joy and life"]
    retriever = TwoStageRetriever.from_texts(model, corpus, MaxSimVerifier(), k=3, ragged=True,
                                             ids=torch.arange(5) + 100)
    result = retriever.search_texts(model, ["prices rise", "she drove to work"])
    assert result.ids.shape == (2, 3)
    assert result.ids[:, 0].tolist() == [102, 101]
    torch.testing.assert_close(result.scores[:, 0], torch.ones(2), atol=1e-5, rtol=0)
