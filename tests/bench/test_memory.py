"""Peak extra memory of a block: a transient allocation is seen, an empty block is not."""

from __future__ import annotations

import sys

import pytest
import torch

from spherekit.bench.memory import PeakMemory

LINUX = sys.platform.startswith("linux")


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_peak_memory_sees_a_transient_allocation():
    with PeakMemory("cpu") as small:
        pass
    with PeakMemory("cpu") as mem:
        x = torch.ones(64 << 18)  # 64 MiB, freed before the block ends
        del x
    assert 60 << 20 <= mem.extra_bytes <= 80 << 20
    assert small.extra_bytes < 8 << 20
