"""EmbeddingCache: the same embeddings as the model's own encode / encode_layers, every distinct text encoded
once across suites, and suites give the same metrics through the cache as on the model itself."""

import pytest
import torch

from spherekit.evaluation.cache import EmbeddingCache
from spherekit.evaluation.encode import encode, encode_layers

TEXTS = ["dirty cup", "a warm blooded vertebrate that feeds its young with milk", "joy", "the price of milk rise",
         "cup", "a small open container for drinking"]


def test_sentence_embeddings_equal_model_encode(tiny_model):
    cache = EmbeddingCache(tiny_model, batch_size=4)
    want = tiny_model.encode(TEXTS, convert_to_tensor=True, batch_size=4)
    got = cache.encode(TEXTS)
    torch.testing.assert_close(got, want.float(), atol=1e-5, rtol=1e-5)
    assert cache.encode(TEXTS[0]).shape == want[0].shape
    torch.testing.assert_close(cache.encode(TEXTS, normalize_embeddings=True),
                               torch.nn.functional.normalize(want.float(), dim=-1), atol=1e-5, rtol=1e-5)
    assert isinstance(cache.encode(TEXTS, convert_to_tensor=False), type(want.numpy()))


def test_layers_equal_encode_layers(tiny_model):
    cache = EmbeddingCache(tiny_model, batch_size=3)
    want = encode_layers(tiny_model, TEXTS, batch_size=5)
    got = encode_layers(cache, TEXTS)  # answered by the cache
    assert got.shape == want.shape == (2, len(TEXTS), 32)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cache.encode_layers(TEXTS, normalize=False)[-1].norm(dim=-1) > 0,
                               torch.ones(len(TEXTS), dtype=torch.bool))


def test_each_text_is_encoded_once(tiny_model):
    cache = EmbeddingCache(tiny_model, batch_size=4)
    encode(cache, TEXTS[:4])
    encode(cache, TEXTS)            # 2 new texts
    encode_layers(cache, TEXTS[1:])  # all cached, layers included
    encode(cache, TEXTS + TEXTS)    # duplicates
    assert cache.encoded == len(TEXTS) == cache.size


def test_texts_cached_without_layers_are_encoded_again_for_layers(tiny_model):
    cache = EmbeddingCache(tiny_model, layers=True)
    cache._hf, hf = None, cache._hf  # first call as a cache without layers
    cache.encode(TEXTS[:2])
    cache._hf = hf
    out = cache.encode_layers(TEXTS[:3])
    assert out.shape[1] == 3 and cache.encoded == 5


def test_no_layers_for_a_model_without_transformer(tiny_model):
    cache = EmbeddingCache(tiny_model, layers=False)
    with pytest.raises(TypeError, match="per-layer embeddings need"):
        cache.encode_layers(TEXTS)


def test_model_mode_is_restored_and_attributes_delegate(tiny_model):
    tiny_model.train()
    cache = EmbeddingCache(tiny_model)
    cache.encode(TEXTS[:2])
    assert tiny_model.training and cache.device == tiny_model.device and cache[0] is tiny_model[0]
    assert list(cache) == list(tiny_model)
    assert tiny_model[0].auto_model.config.output_hidden_states in (False, None)
    tiny_model.eval()


def test_suites_give_the_same_metrics_through_the_cache(tiny_model):
    from spherekit.evaluation.evaluators.concept import ConceptRetrievalEvaluator, build_pools
    from spherekit.evaluation.evaluators.layerwise import LayerwiseEvaluator

    records = [{"term": t, "definition": d, "synset_id": f"s{i}"} for i, (t, d) in
               enumerate(zip(TEXTS[::2], TEXTS[1::2]))]
    concept = ConceptRetrievalEvaluator(records, batch_size=2)
    terms, defs, rel, *_ = build_pools(records)
    layerwise = LayerwiseEvaluator(terms, defs, rel, n_pairs=50)
    cache = EmbeddingCache(tiny_model)
    for ev in (concept, layerwise):
        plain, cached = ev(tiny_model), ev(cache)
        assert plain.keys() == cached.keys()
        for k in plain:
            assert cached[k] == pytest.approx(plain[k], abs=1e-5), k
    assert cache.encoded == len(TEXTS)


def test_other_encoders_use_their_own_encode():
    from tests.evaluation._stub import StubModel

    stub = StubModel({"a": [1.0, 0.0], "b": [0.0, 2.0]})
    cache = EmbeddingCache(stub)
    torch.testing.assert_close(cache.encode(["b", "a", "b"]), torch.tensor([[0.0, 2.0], [1.0, 0.0], [0.0, 2.0]]))
    assert cache.encoded == 2
