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
