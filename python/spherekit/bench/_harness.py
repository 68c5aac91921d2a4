"""What every benchmark family shares: timing, peak extra memory, isolation, OOM handling, the CSV.

Timing
    Each measurement is one (provider, config, mode). A call of the measured step is preceded by
    its untimed setup (e.g. the forward pass when only the backward is timed) and followed by its
    untimed teardown (dropping outputs and gradients). ``warmup`` calls come first (compilation,
    lazy initialisation); then ``repeats`` timed calls, cut down so that they fit ``budget_s``
    (never below ``min_repeats``); then one untimed memory probe. On CUDA every timed region starts
    and ends with ``torch.cuda.synchronize()``. Reported: median, 20% and 80% quantiles, in ms.

Peak extra memory (what the ``peak_extra_mib`` column means)
    The memory a call needs on top of what was allocated before it: the inputs (and, for "bwd",
    the forward's saved state, since the setup ran the forward). Gradients a call returns count.
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
      (note "mem=sampled"); without glibc the heap is not trimmed.

Isolation and out-of-memory handling
    ``isolate="provider"`` (default) runs each provider's measurements in a fresh worker process
    (``python -m spherekit.bench._harness --worker MODULE TASKS.json``), so library imports, compile
    caches and allocator state never leak between providers; ``"task"`` starts one worker per
    measurement; ``"none"`` runs in-process (tests). Before a measurement is dispatched, the
    family's memory prediction is compared to ``mem_limit_bytes`` (default on CPU: 20 GiB, or 90%
    of the memory available at start if less; on CUDA: no prediction, real OOM errors are caught):
    above it the row gets status "skipped". A worker whose RSS passes the limit is killed (status
    "oom"), so a run never takes the machine down; so is one that runs past ``timeout_s`` ("timeout").
    Inside a worker, MemoryError / "out of memory" errors give status "oom", any other exception
    "error". A dead worker is replaced and the remaining measurements go on.

CSV
    Long format, one row per measurement, APPENDED to ``<out>/<family>.csv`` (see COLUMNS). Every
    append takes an exclusive lock on the folder, writes the whole file to a temporary file and
    os.replace()s it, so the file is never seen half-written.
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import datetime as _dt
import gc
import importlib
import io
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

COLUMNS = [
    "timestamp", "run_id", "preset", "machine", "torch", "triton", "spherekit", "sentence_transformers",
    "family", "provider", "mode", "B", "N", "d", "k", "dtype", "repeats",
    "median_ms", "p20_ms", "p80_ms", "peak_extra_mib", "status", "note",
]
STATUSES = ("ok", "oom", "skipped", "timeout", "error")
GIB = 1 << 30
MIB = 1 << 20
DEFAULT_CPU_MEM_LIMIT = 20 * GIB
_START = "@@SPHEREKIT-BENCH-START "
_RESULT = "@@SPHEREKIT-BENCH-RESULT "


@dataclass
class Settings:
    """How to run measurements; travels to worker processes as JSON."""

    device: str = "cpu"
    repeats: int = 10
    warmup: int = 2
    min_repeats: int = 3
    budget_s: float = 60.0  # timed calls per measurement are cut to fit this
    timeout_s: float = 1800.0  # a measurement running longer is killed (isolated modes only)
    mem_limit_bytes: int | None = None
    isolate: str = "provider"  # "provider" | "task" | "none"


def default_mem_limit(device: str) -> int | None:
    """CPU: 20 GiB, or 90% of MemAvailable when that is less. CUDA: None (real OOMs are caught)."""
    if device != "cpu":
        return None
    avail = _meminfo_bytes("MemAvailable")
    return DEFAULT_CPU_MEM_LIMIT if avail is None else min(DEFAULT_CPU_MEM_LIMIT, int(0.9 * avail))


# ------------------------------------------------------------------------------------------------
# machine and versions
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# timing and memory
# ------------------------------------------------------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of a non-empty list."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _rss_bytes(pid: int | str = "self") -> int | None:
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


def _malloc_probe_mode(on: bool) -> None:
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
        _malloc_probe_mode(True)
        self._base = _rss_bytes() or 0
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
            self._peak = max(self._peak, _rss_bytes() or 0)
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
            peak = max(self._peak, _rss_bytes() or 0)
        if self.method != "cuda":
            _malloc_probe_mode(False)
        self.extra_bytes = max(0, peak - self._base)
        return False


def _busy_note() -> str:
    """A note when other processes compete for the cores (1-minute load above cores + 0.5): with
    oversubscribed OpenMP threads, runs of many small ops slow down by large factors."""
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (OSError, AttributeError):
        return ""
    return f"busy machine: load {load:.1f} on {cores} cores" if load > cores + 0.5 else ""


def measure(step: Callable[[], object], settings: Settings, *, setup: Callable[[], None] | None = None,
            teardown: Callable[[], None] | None = None) -> dict:
    """Warm up, time ``step``, then probe its peak extra memory once; returns the result columns."""
    cuda = settings.device.startswith("cuda")
    if cuda:
        import torch

        sync = torch.cuda.synchronize
    else:
        def sync():
            return None
    setup = setup or (lambda: None)
    teardown = teardown or (lambda: None)

    def call() -> float:
        setup()
        sync()
        t0 = time.perf_counter()
        out = step()
        sync()
        dt = time.perf_counter() - t0
        del out
        teardown()
        return dt

    if not cuda:
        _malloc_probe_mode(False)  # time every call in the same (warmed-up) allocator state
    estimate = None
    for i in range(max(1, settings.warmup)):
        dt = call()
        estimate = dt if estimate is None else min(estimate, dt)
        if estimate * (settings.min_repeats + 2) > settings.budget_s:  # long calls: one warmup is enough
            break
    n = settings.repeats
    notes = []
    if estimate * n > settings.budget_s:
        n = max(settings.min_repeats, min(n, int(settings.budget_s / max(estimate, 1e-9))))
        if n < settings.repeats:
            notes.append(f"repeats cut to {n} by budget_s={settings.budget_s:g}")
    times = [call() * 1e3 for _ in range(n)]
    setup()
    sync()
    with PeakMemory(settings.device) as mem:
        out = step()
        sync()
        del out
    teardown()
    if mem.method == "sampled":
        notes.append("mem=sampled")
    busy = _busy_note()
    if busy:
        notes.append(busy)
    return {
        "median_ms": quantile(times, 0.5), "p20_ms": quantile(times, 0.2), "p80_ms": quantile(times, 0.8),
        "peak_extra_mib": mem.extra_bytes / MIB, "repeats": n, "status": "ok", "note": "; ".join(notes),
    }


def classify_error(exc: BaseException) -> str:
    """'oom' for out-of-memory errors (CPU or CUDA), else 'error'."""
    if isinstance(exc, MemoryError):
        return "oom"
    text = f"{type(exc).__name__} {exc}".lower()
    if "outofmemory" in text or "out of memory" in text or "can't allocate memory" in text \
            or "cannot allocate memory" in text:
        return "oom"
    return "error"


def _cleanup_after_failure(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        with contextlib.suppress(Exception):
            import torch

            torch.cuda.empty_cache()


def run_one(module, task: dict, settings: Settings) -> dict:
    """Run one measurement through ``module.run_task``; exceptions become a status, never a crash."""
    try:
        return module.run_task(task, settings)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a benchmark row records every failure
        status = classify_error(exc)
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())
    # outside the except block: the traceback (and the tensors its frames hold) is gone by now
    _cleanup_after_failure(settings.device)
    return {"status": status, "note": msg[:300]}


# ------------------------------------------------------------------------------------------------
# CSV
# ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _folder_lock(folder: Path):
    """Exclusive flock on the folder itself (no lock file to leave behind); a no-op without fcntl."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def append_rows(path: str | os.PathLike, rows: list[dict], columns: list[str] = COLUMNS) -> None:
    """Append rows to a CSV atomically (lock, write a temporary copy, os.replace); header when new."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(path.parent):
        existing = path.read_text() if path.exists() else ""
        if existing:
            header = next(csv.reader(io.StringIO(existing)))
            if header != columns:
                raise ValueError(f"{path}: existing header {header} differs from the expected columns {columns}; "
                                 "move the file aside to start a new one")
            if not existing.endswith("\n"):
                existing += "\n"
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        if not existing:
            writer.writeheader()
        writer.writerows([{k: _fmt(v) for k, v in row.items()} for row in rows])
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", newline="") as f:
                f.write(existing)
                f.write(buf.getvalue())
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return "" if value is None else value


def read_rows(path: str | os.PathLike) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------------------------
# running many measurements
# ------------------------------------------------------------------------------------------------


def run_tasks(module_name: str, tasks: list[dict], settings: Settings, emit: Callable[[dict, dict], None],
              progress: bool = True) -> None:
    """Run ``tasks`` (dicts understood by ``module.run_task``); ``emit(task, result)`` once per task.

    The family module provides ``run_task(task, settings) -> dict``, ``predict_bytes(task) -> int | None``
    and ``static_skip(task, settings) -> str | None`` (a reason not to run the task at all).
    """
    module = importlib.import_module(module_name)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), unit="meas", dynamic_ncols=True, file=sys.stderr)

    def done(task, result):
        emit(task, result)
        if bar is not None:
            bar.update(1)

    runnable = []
    for task in tasks:
        reason = module.static_skip(task, settings)
        predicted = module.predict_bytes(task)
        if reason is None and settings.mem_limit_bytes and predicted and predicted > settings.mem_limit_bytes:
            reason = (f"predicted {predicted / GIB:.1f} GiB > mem limit {settings.mem_limit_bytes / GIB:.1f} GiB")
        if reason is not None:
            done(task, {"status": "skipped", "note": reason})
        else:
            runnable.append(task)

    if settings.isolate == "none":
        groups = [[t] for t in runnable]
    elif settings.isolate == "task":
        groups = [[t] for t in runnable]
    elif settings.isolate == "provider":
        by_provider: dict[str, list[dict]] = {}
        for t in runnable:
            by_provider.setdefault(t["provider"], []).append(t)
        groups = list(by_provider.values())
    else:
        raise ValueError(f"isolate must be 'provider', 'task' or 'none', got {settings.isolate!r}")
    try:
        for group in groups:
            if bar is not None:
                bar.set_description(f"{group[0]['provider']}")
            if settings.isolate == "none":
                for task in group:
                    done(task, run_one(module, task, settings))
                continue
            remaining = list(group)
            while remaining:
                consumed = _worker_session(module_name, remaining, settings, done, bar)
                remaining = remaining[consumed:]
    finally:
        if bar is not None:
            bar.close()


def _describe(task: dict) -> str:
    return f"{task['provider']} B={task['B']} d={task['d']} k={task['k']} {task['mode']}"


def _worker_session(module_name: str, tasks: list[dict], settings: Settings, done, bar) -> int:
    """Run tasks in one fresh worker process; returns how many were consumed (finished or failed)."""
    with tempfile.TemporaryDirectory(prefix="spherekit-bench-") as tmp:
        spec = Path(tmp) / "tasks.json"
        spec.write_text(json.dumps({"settings": asdict(settings), "tasks": tasks}))
        err_path = Path(tmp) / "stderr.txt"
        with open(err_path, "w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-u", "-m", "spherekit.bench._harness", "--worker", module_name, str(spec)],
                stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
            )
        lines: queue.Queue = queue.Queue()

        def read():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        current, started, consumed, killed = None, 0.0, 0, None
        while True:
            try:
                line = lines.get(timeout=0.05)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if line.startswith(_START):
                current, started = int(line[len(_START):]), time.monotonic()
                if bar is not None:
                    bar.set_description(_describe(tasks[current]))
            elif line.startswith(_RESULT):
                payload = json.loads(line[len(_RESULT):])
                index = payload.pop("index")
                done(tasks[index], payload)
                consumed, current = index + 1, None
            if current is not None and killed is None:
                rss = _rss_bytes(proc.pid)
                if settings.mem_limit_bytes and rss and rss > settings.mem_limit_bytes:
                    killed = ("oom", f"worker RSS {rss / GIB:.1f} GiB passed the mem limit "
                                     f"{settings.mem_limit_bytes / GIB:.1f} GiB; killed")
                elif settings.timeout_s and time.monotonic() - started > settings.timeout_s:
                    killed = ("timeout", f"ran past timeout_s={settings.timeout_s:g}; killed")
                if killed is not None:
                    proc.kill()
        proc.wait()
        reader.join(timeout=5)
        if consumed >= len(tasks):
            return consumed
        tail = [ln for ln in err_path.read_text(errors="replace").splitlines() if ln.strip()]
        last = tail[-1][:250] if tail else "no stderr"
        if killed is not None:
            status, note = killed
        elif proc.returncode == -9:
            status, note = "oom", "worker killed by SIGKILL (the kernel's OOM killer?)"
        else:
            status, note = "error", f"worker exited with code {proc.returncode}: {last}"
        if current is None and consumed == 0:
            # it died before starting anything (an import error, say): the rest would fail the same way
            for task in tasks:
                done(task, {"status": status, "note": note})
            return len(tasks)
        index = consumed if current is None else current
        done(tasks[index], {"status": status, "note": note})
        return index + 1


def worker_main(module_name: str, spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    settings = Settings(**spec["settings"])
    module = importlib.import_module(module_name)
    for index, task in enumerate(spec["tasks"]):
        print(f"{_START}{index}", flush=True)
        result = run_one(module, task, settings)
        print(_RESULT + json.dumps({"index": index, **result}), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        raise SystemExit(worker_main(sys.argv[2], sys.argv[3]))
    print("usage: python -m spherekit.bench._harness --worker MODULE TASKS.json", file=sys.stderr)
    raise SystemExit(2)
