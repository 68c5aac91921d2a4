"""Peak extra memory of a block of code (what the benchmark CSV's ``peak_extra_mib`` column means).

The memory a call needs on top of what was allocated before it: the inputs (and, for "bwd", the
forward's saved state, since the setup ran the forward). Gradients a call returns count.

- CUDA: ``torch.cuda.max_memory_allocated()`` during the call minus ``memory_allocated()`` just
  before it (peak stats reset before the call). Tensor memory only: no allocator caching, no
  CUDA context.
- CPU: growth of the process's resident set size. For the probe call only, glibc is told
  (mallopt) to give every allocation of 64 KiB or more its own mapping, returned to the kernel
  when freed, and malloc_trim(0) hands freed heap pages back, so resident memory follows live
  allocations. The baseline is VmRSS just before the call; writing "5" to /proc/self/clear_refs
  resets the kernel's high-water mark, and the extra is VmHWM after the call minus the baseline.
  The kernel updates the high-water mark before every unmapping, so short peaks are not missed.
  It counts every page the call touched (tensors, page rounding, small-object heap, BLAS and
  OpenMP scratch), so it is a slight upper bound of the tensor bytes. The timed calls run with
  fixed thresholds equal to those of a warmed-up process (32 MiB mapping, 64 MiB trim). Where
  clear_refs cannot be written, a thread samples /proc/self/statm every millisecond instead
  (``PeakMemory.method == "sampled"``); without glibc the heap is not trimmed.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from pathlib import Path


def rss_bytes(pid: int | str = "self") -> int | None:
    """Resident set size of a process (this one by default), or None where /proc cannot tell."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _hwm_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_libc = None
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (glibc malloc.h)


def _glibc():
    """glibc through ctypes, or None (another libc, or not Linux)."""
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL("libc.so.6")
            _libc = lib if hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt") else False
        except OSError:
            _libc = False
    return _libc or None


def malloc_probe_mode(on: bool) -> None:
    """On: every allocation of 64 KiB or more gets its own mapping, returned to the kernel when freed,
    so resident memory follows live allocations; freed heap memory is handed back first. Off: fixed
    thresholds equal to those glibc's dynamic ones reach once large buffers have been freed (32 MiB,
    trim 64 MiB), i.e. the state of a warmed-up process."""
    lib = _glibc()
    if lib is None:
        return
    lib.mallopt(_M_MMAP_THRESHOLD, 64 << 10 if on else 32 << 20)
    lib.mallopt(_M_TRIM_THRESHOLD, 128 << 10 if on else 64 << 20)
    if on:
        lib.malloc_trim(0)


class PeakMemory:
    """Context manager; after exit, ``extra_bytes`` is the peak extra memory of the block (see module doc)."""

    def __init__(self, device: str):
        self.device = device
        self.extra_bytes = 0
        self.method = ""

    def __enter__(self):
        gc.collect()
        gc.freeze()  # survivors are long-lived: later collections skip them (a full one takes ~0.3 s)
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
            self.method = "cuda"
            return self
        malloc_probe_mode(True)
        self._base = rss_bytes() or 0
        if _reset_hwm() and _hwm_bytes() is not None:
            self.method = "hwm"
        else:
            self.method = "sampled"
            self._peak = self._base
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self._peak = max(self._peak, rss_bytes() or 0)
            time.sleep(0.001)

    def __exit__(self, *exc):
        if self.method == "cuda":
            import torch

            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
        elif self.method == "hwm":
            peak = _hwm_bytes() or 0
        else:
            self._stop.set()
            self._thread.join()
            peak = max(self._peak, rss_bytes() or 0)
        if self.method != "cuda":
            malloc_probe_mode(False)
        self.extra_bytes = max(0, peak - self._base)
        return False
