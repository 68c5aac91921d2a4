"""Session-wide loads of the real installed data (`spherekit data install all`); each is parsed once
per machine and cached, so loading takes about a second."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def wn():
    from spherekit.data.wordnet import load_wordnet

    return load_wordnet()


@pytest.fixture(scope="session")
def gcide():
    from spherekit.data.gcide import load_gcide

    return load_gcide()


@pytest.fixture(scope="session")
def wn_pairs(wn):
    return wn.term_definition_pairs()


@pytest.fixture(scope="session")
def gcide_pairs(gcide, wn):
    return gcide.term_definition_pairs(exceptions=wn.exceptions)


@pytest.fixture
def isolated_data(tmp_path, monkeypatch):
    """NLTK_DATA and the spherekit cache pointed at empty temporary folders, in-process caches cleared."""
    from spherekit.data import gcide, wordnet

    nltk_dir = tmp_path / "nltk_data"
    nltk_dir.mkdir()
    monkeypatch.setenv("NLTK_DATA", str(nltk_dir))
    monkeypatch.setenv("SPHEREKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    monkeypatch.setattr(wordnet, "_LOADED", {})
    monkeypatch.setattr(gcide, "_LOADED", {})
    return tmp_path
