"""Fixtures for the experiment-layer tests: small offline SentenceTransformer folders (no hub)."""

import pytest

from tests.losses._tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def backbone_dir(tmp_path_factory):
    """A saved 6-layer random BERT + mean pooling, dropout 0 (deterministic): usable as --backbone PATH."""
    root = tmp_path_factory.mktemp("tiny_backbone")
    model = build_tiny_model(root / "hf", num_hidden_layers=6, dropout=0.0, max_seq_length=24)
    model.save(str(root / "st"))
    return root / "st"


@pytest.fixture
def backbone(backbone_dir):
    """A fresh SentenceTransformer loaded from backbone_dir (tests may train or mutate it)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(backbone_dir), device="cpu")
