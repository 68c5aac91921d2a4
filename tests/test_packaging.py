"""The distribution's metadata and build configuration: license, authors, the README as long description, one version
(python/spherekit/__init__.py, +cu130 for the CUDA build), results out of the sdist, and a cibuildwheel
configuration for manylinux_2_28 wheels of CPython 3.10-3.13 that never vendors a second OpenMP runtime.
scripts/wheel_check.sh builds, repairs and installs the real wheel."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import spherekit

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = CONFIG["project"]
SKBUILD = CONFIG["tool"]["scikit-build"]


def test_license_authors_and_long_description():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("Copyright 2026 The spherekit authors") and "Apache License\n" in text
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert PROJECT["authors"] == [{"name": "The spherekit authors"}]
    assert PROJECT["readme"] == "README.md"


def test_one_version_with_a_cuda_label():
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    version = SKBUILD["metadata"]["version"]
    assert version["input"] == "python/spherekit/__init__.py"
    assert re.search(r'^__version__ = "(.+)"$', (ROOT / version["input"]).read_text(), re.M).group(1) == \
        spherekit.__version__
    (cuda,) = [o for o in SKBUILD["overrides"] if o["if"] == {"env": {"SPHEREKIT_WITH_CUDA": True}}]
    assert cuda["metadata"]["version"] == {**version, "result": "{value}+cu130"}
    assert cuda["build-dir"] != SKBUILD["build-dir"]  # the CPU build's CMake cache is never reconfigured for CUDA


def test_the_installed_metadata():
    """What the build wrote for this installation (the editable install here, the wheel in wheel_check.sh)."""
    meta = importlib.metadata.metadata("spherekit")
    assert meta["Version"].split("+")[0] == spherekit.__version__
    assert meta["License-Expression"] == "Apache-2.0" and meta["Author"] == "The spherekit authors"
    assert meta["Description-Content-Type"] == "text/markdown" and "## A tour" in meta["Description"]
    assert set(meta.get_all("Provides-Extra")) == set(PROJECT["optional-dependencies"])


def test_results_stay_out_of_the_sdist():
    assert "benches/results/" in SKBUILD["sdist"]["exclude"]


def test_release_wheels_configuration():
    cibw = CONFIG["tool"]["cibuildwheel"]
    pythons = [f"3.{m}" for m in range(10, 14)]
    assert cibw["build"] == [f"cp3{v[2:]}-*" for v in pythons]
    assert PROJECT["requires-python"] == ">=3.10"
    classifiers = {c.rsplit(" :: ", 1)[-1] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")}
    assert classifiers == set(pythons)
    linux = cibw["linux"]
    assert linux["manylinux-x86_64-image"] == linux["manylinux-aarch64-image"] == "manylinux_2_28"
    assert "--exclude libgomp.so.1" in linux["repair-wheel-command"]
    assert (ROOT / cibw["test-command"].split()[-1].replace("{project}/", "")).is_file()
