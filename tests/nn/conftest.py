"""The head tests' model factory over the session's tiny BERT (tests/conftest.py)."""

import pytest


@pytest.fixture
def head_model(tiny_model_path):
    """factory(kind="ngpt", pooling="cls", seed=0, **head_kwargs) -> SentenceTransformer([Transformer, head])."""
    import torch
    from sentence_transformers import SentenceTransformer

    from spherekit.nn import HypersphereHead

    def make(kind="ngpt", pooling="cls", seed=0, **kwargs):
        base = SentenceTransformer(str(tiny_model_path), device="cpu")
        torch.manual_seed(seed)
        head = HypersphereHead.from_transformer(base[0], kind=kind, pooling=pooling, **kwargs)
        return SentenceTransformer(modules=[base[0], head], device="cpu")

    return make
