"""The model tests replace where the backbones are found: they never install one on its first use."""

import pytest


@pytest.fixture(autouse=True)
def _no_first_use_install(monkeypatch):
    monkeypatch.setenv("SPHEREKIT_NO_AUTO_INSTALL", "1")
