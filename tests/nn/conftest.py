"""A tiny offline BERT (hidden 32, 2 heads) saved once per session, for the head tests."""

import pytest

from tests.losses._tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_bert_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_bert_nn")
    build_tiny_model(path)
    return path


@pytest.fixture
def head_model(tiny_bert_path):
    """factory(kind="ngpt", pooling="cls", seed=0, **head_kwargs) -> SentenceTransformer([Transformer, head])."""
    import torch
    from sentence_transformers import SentenceTransformer

    from spherekit.nn import HypersphereHead

    def make(kind="ngpt", pooling="cls", seed=0, **kwargs):
        base = SentenceTransformer(str(tiny_bert_path), device="cpu")
        torch.manual_seed(seed)
        head = HypersphereHead.from_transformer(base[0], kind=kind, pooling=pooling, **kwargs)
        return SentenceTransformer(modules=[base[0], head], device="cpu")

    return make
