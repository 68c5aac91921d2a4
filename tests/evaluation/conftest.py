"""Fixtures for the evaluation tests: one tiny offline SentenceTransformer per session."""

import pytest

from tests.losses._tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_bert_eval")
    build_tiny_model(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(tiny_model_path):
    """Loaded once; the evaluation tests only encode (never train or mutate it)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_path), device="cpu")
