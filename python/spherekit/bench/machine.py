"""Facts about the machine and the installed versions, recorded in every benchmark row.

The CPU model and core count (the GPU's name first on CUDA), the installed torch / triton / spherekit /
sentence-transformers versions read from package metadata, a UTC timestamp, and the default memory
limit measurements are checked against on CPU: 20 GiB, or 90% of the memory available at start if less.
"""

from __future__ import annotations

import datetime as _dt
import os
from importlib import metadata
from pathlib import Path

GIB = 1 << 30
DEFAULT_CPU_MEM_LIMIT = 20 * GIB


def default_mem_limit(device: str) -> int | None:
    """CPU: 20 GiB, or 90% of MemAvailable when that is less. CUDA: None (real OOMs are caught)."""
    if device != "cpu":
        return None
    avail = _meminfo_bytes("MemAvailable")
    return DEFAULT_CPU_MEM_LIMIT if avail is None else min(DEFAULT_CPU_MEM_LIMIT, int(0.9 * avail))


def _meminfo_bytes(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def machine_name(device: str) -> str:
    """CPU model and core count; the GPU's name first when the device is CUDA."""
    cpu = f"{cpu_name()} ({os.cpu_count()} cores)"
    if device.startswith("cuda"):
        import torch

        return f"{torch.cuda.get_device_name(0)}; {cpu}"
    return cpu


def versions() -> dict[str, str]:
    """Installed versions (from package metadata: nothing heavy is imported)."""
    out = {}
    for column, dist in (("torch", "torch"), ("triton", "triton"), ("spherekit", "spherekit"),
                         ("sentence_transformers", "sentence-transformers")):
        try:
            out[column] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[column] = ""
    return out


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
