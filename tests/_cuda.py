"""The CUDA extension in tests: a test that needs spherekit._cuda (or some of its entry points) skips where it is not
built, unless SPHEREKIT_REQUIRE_CUDA=1 (set by scripts/gpu_check.sh on a GPU): then a missing or broken extension is
a failure, never a quiet skip that leaves the run green."""

from __future__ import annotations

import os

import pytest

from spherekit import _backend


def required() -> bool:
    return os.environ.get("SPHEREKIT_REQUIRE_CUDA", "0") == "1"


def problem(*entry_points: str) -> str | None:
    """Why spherekit._cuda cannot serve `entry_points` (None when it can)."""
    ext = _backend.cuda_extension()
    if ext is None:
        return f"spherekit._cuda is not available: {_backend.build_info()['spherekit._cuda']}"
    missing = [name for name in entry_points if not hasattr(ext, name)]
    return f"spherekit._cuda is built without {', '.join(missing)}" if missing else None


def need_cuda_extension(*entry_points: str) -> None:
    """Skip the calling test when spherekit._cuda lacks `entry_points`; fail it when SPHEREKIT_REQUIRE_CUDA=1."""
    why = problem(*entry_points)
    if why is not None:
        (pytest.fail if required() else pytest.skip)(why)
