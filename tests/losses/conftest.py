"""Fixtures for the loss tests: one tiny offline SentenceTransformer per session."""

import pytest

from tests.losses._tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_bert")
    build_tiny_model(path)
    return path


@pytest.fixture
def tiny_model(tiny_model_path):
    """A fresh model loaded from the saved tiny BERT (tests may train or mutate it)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_path), device="cpu")


@pytest.fixture
def count_fused(monkeypatch):
    """Counts the info_nce calls made by spherekit's MNRL module (proves the fused path ran)."""
    from spherekit.losses import multiple_negatives_ranking as mnrl_mod

    calls = []
    real = mnrl_mod.info_nce

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(mnrl_mod, "info_nce", spy)
    return calls
