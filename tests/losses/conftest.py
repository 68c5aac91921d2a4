"""Fixtures for the loss tests (the tiny model and one_thread are in tests/conftest.py)."""

import pytest



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
