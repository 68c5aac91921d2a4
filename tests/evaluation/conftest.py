"""Fixtures for the evaluation tests: one tiny offline SentenceTransformer per session."""

import pytest


@pytest.fixture(scope="session")
def tiny_model(tiny_model_path):
    """Loaded once per session (overrides tests/conftest.py's fresh-per-test model): the evaluation tests only
    encode, never train or mutate it."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_path), device="cpu")
