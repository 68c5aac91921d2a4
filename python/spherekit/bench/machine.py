"""Facts about the machine and the installed versions, recorded in every benchmark row.

The CPU model and core count (the GPU's name first on CUDA), the installed torch / triton / spherekit /
sentence-transformers versions read from package metadata, a UTC timestamp, the default memory
limit measurements are checked against on CPU (20 GiB, or 90% of the memory available at start if less), and
the GPU's current clocks, temperature and power (``gpu_clocks``: NVML through nvidia-ml-py where it imports, else
``nvidia-smi``; read only, the card's settings are never changed).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import subprocess
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


CLOCK_KEYS = ("sm_mhz", "mem_mhz", "temp_c", "power_w")
_SMI_FIELDS = "clocks.sm,clocks.mem,temperature.gpu,power.draw"


def _nvml_clocks(index: int) -> dict | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return dict(sm_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    mem_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                    temp_c=pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                    power_w=round(pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, 1))
    except pynvml.NVMLError:
        return None


def _smi_clocks(index: int) -> dict | None:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        out = subprocess.run([tool, f"--id={index}", f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        values = [float(x) for x in out.splitlines()[0].split(",")]
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return {k: (round(v, 1) if k == "power_w" else int(v)) for k, v in zip(CLOCK_KEYS, values)}


def gpu_clocks(device: str = "cuda", index: int = 0) -> dict:
    """{sm_mhz, mem_mhz, temp_c, power_w} of GPU `index` now ({} on CPU or where neither NVML nor nvidia-smi
    answers). Logged at the start and end of a run and with every GPU row: a clock that dropped explains a slow
    row."""
    if not device.startswith("cuda"):
        return {}
    return _nvml_clocks(index) or _smi_clocks(index) or {}


def clocks_text(clocks: dict) -> str:
    """'SM 1980 MHz, memory 3201 MHz, 45 C, 120.5 W' (or 'clocks unknown')."""
    if not clocks:
        return "clocks unknown"
    parts = [f"SM {clocks.get('sm_mhz')} MHz", f"memory {clocks.get('mem_mhz')} MHz"]
    parts += [f"{clocks['temp_c']} C"] if "temp_c" in clocks else []
    parts += [f"{clocks['power_w']} W"] if "power_w" in clocks else []
    return ", ".join(parts)
