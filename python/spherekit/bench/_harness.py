"""What every benchmark family shares: timing, isolation in worker processes, OOM handling.

Machine and version facts are in ``machine``, the peak extra memory probe in ``memory``, the CSV in
``results``.

Timing
    Each measurement is one (provider, config, mode). A call of the measured step is preceded by
    its untimed setup (e.g. the forward pass when only the backward is timed) and followed by its
    untimed teardown (dropping outputs and gradients). On CUDA the first call (JIT compilation, lazy
    initialisation) is timed apart (metric first_call_ms) and is no warm-up; at least GPU_WARMUPS (2)
    warm-up calls follow it. On CPU ``warmup`` calls come first, the first of them compiling. Then
    ``repeats`` timed calls, cut down so that they fit ``budget_s`` (never below ``min_repeats``, and
    never below SUB_MS_REPEATS (10) for a call under 1 ms); then one untimed memory probe
    (``memory.PeakMemory``, which defines the ``peak_extra_mib`` column; note "mem=sampled" where it had to
    sample). Every timed call's wall time is the host clock around the synchronised call (median_ms, p20_ms,
    p80_ms); on CUDA CUDA events recorded around the step give its device time too (device_median_ms,
    device_p20_ms, device_p80_ms), and the GPU's clocks after the timed calls go into the metrics (sm_mhz,
    mem_mhz). A family may ask for back-to-back calls (one synchronisation for many launches: a server's
    throughput) and for the executed matrix-product FLOPs of the probe call (spherekit.bench.flops).
    Reported: median, 20% and 80% quantiles, in ms.

Isolation and out-of-memory handling
    ``isolate="provider"`` (default) runs each provider's measurements in a fresh worker process
    (``python -m spherekit.bench._harness --worker MODULE TASKS.json``), so library imports, compile
    caches and allocator state never leak between providers; ``"task"`` starts one worker per
    measurement; ``"none"`` runs in-process (tests, and scripts/gpu_run.py, one process for a whole GPU run:
    torch.compile's caches and the CUDA allocator's cached blocks are dropped between providers, and a
    ``deadline`` stops starting measurements). Before a measurement is dispatched, the
    family's memory prediction is compared to ``mem_limit_bytes`` (default on CPU, from
    ``machine.default_mem_limit``: 20 GiB, or 90% of the memory available at start if less; on CUDA:
    no prediction, real OOM errors are caught): above it the row gets status "skipped". A worker
    whose RSS passes the limit is killed (status "oom"), so a run never takes the machine down; so
    is one that runs past ``timeout_s`` ("timeout"). Inside a worker, MemoryError / "out of memory"
    errors give status "oom", any other exception "error". A dead worker is replaced and the
    remaining measurements go on.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import KW_ONLY, asdict, dataclass
from pathlib import Path
from typing import Callable

from .machine import GIB, default_mem_limit
from .memory import PeakMemory, malloc_probe_mode, rss_bytes

MIB = 1 << 20
GPU_WARMUPS = 2      # warm-up calls after the first (compiling) call on a GPU, at least
SUB_MS_REPEATS = 10  # timed calls of a row under 1 ms, at least
# what measure() adds to a row beside the columns: every family's metrics cell lists them (start_run)
HARNESS_METRICS = ("first_call_ms", "warmups", "back_to_back_calls", "back_to_back_ms", "back_to_back_wall_ms",
                   "matmul_flops", "sm_mhz", "mem_mhz")
_START = "@@SPHEREKIT-BENCH-START "
_RESULT = "@@SPHEREKIT-BENCH-RESULT "


@dataclass(frozen=True)
class PresetBase:
    """What every family's preset has: where it runs and how much it times (the fields of ``Settings``
    that a preset fixes). A family subclasses it and adds its own grid (blocks of sizes, dtypes, ...):

        @dataclass(frozen=True)
        class Preset(PresetBase):
            dtype: str
            blocks: tuple[Block, ...]

        Preset("cpu", "float32", (...), repeats=5, budget_s=20.0)

    ``device`` is positional (first); the timing fields are keyword-only, so a subclass's own fields
    follow ``device`` positionally."""

    device: str
    _: KW_ONLY
    repeats: int = 10
    warmup: int = 2
    min_repeats: int = 3
    budget_s: float = 60.0  # timed calls per measurement are cut to fit this


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
    count_flops: bool = False  # count the probe call's aten matmul FLOPs (GPU runs and rehearsals)
    triton_on_cpu: bool = False  # Triton providers run on CPU tensors through the interpreter (gpu_run --rehearse)


# ------------------------------------------------------------------------------------------------
# one measurement
# ------------------------------------------------------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of a non-empty list."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)



def _busy_note() -> str:
    """A note when other processes compete for the cores (1-minute load above cores + 0.5): with
    oversubscribed OpenMP threads, runs of many small ops slow down by large factors."""
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (OSError, AttributeError):
        return ""
    return f"busy machine: load {load:.1f} on {cores} cores" if load > cores + 0.5 else ""


def _timer(cuda: bool):
    """call(step, setup, teardown) -> (wall ms, device ms or None) of one synchronised call of step."""
    if not cuda:
        def call(step, setup, teardown):
            setup()
            t0 = time.perf_counter()
            out = step()
            wall = (time.perf_counter() - t0) * 1e3
            del out
            teardown()
            return wall, None
        return call
    import torch

    sync = torch.cuda.synchronize

    def call(step, setup, teardown):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        setup()
        sync()
        t0 = time.perf_counter()
        start.record()
        out = step()
        end.record()
        sync()
        wall = (time.perf_counter() - t0) * 1e3
        del out
        teardown()
        return wall, start.elapsed_time(end)
    return call


def _back_to_back(step, calls: int, cuda: bool) -> dict:
    """`calls` calls of step launched one after the other with one synchronisation at the end (a server's
    stream of requests): the time per call, from CUDA events on a GPU, and from the host clock."""
    sync, events = (lambda: None), None
    if cuda:
        import torch

        sync = torch.cuda.synchronize
        events = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sync()
    t0 = time.perf_counter()
    if events:
        events[0].record()
    for _ in range(calls):
        step()
    if events:
        events[1].record()
    sync()
    out = {"back_to_back_calls": calls, "back_to_back_wall_ms": (time.perf_counter() - t0) * 1e3 / calls}
    if events:
        out["back_to_back_ms"] = events[0].elapsed_time(events[1]) / calls
    return out


def measure(step: Callable[[], object], settings: Settings, *, setup: Callable[[], None] | None = None,
            teardown: Callable[[], None] | None = None, back_to_back: int = 0, count_flops: bool = False) -> dict:
    """Warm up, time ``step``, then probe its peak extra memory once; returns the result columns and metrics.

    On CUDA the first call (JIT compilation, autotuning, lazy initialisation) is timed apart (``first_call_ms``) and
    is no warm-up: at least GPU_WARMUPS warm-ups follow it. Each timed call gives its wall time (host clock around
    the synchronised call: median_ms, p20_ms, p80_ms) and, on CUDA, its device time (CUDA events recorded around
    step, setup and teardown outside: device_median_ms, ...). A row whose calls take under 1 ms gets at least
    SUB_MS_REPEATS timed calls whatever the budget. back_to_back > 0 adds that many calls launched one after the
    other with a single synchronisation (back_to_back_ms per call on the device, back_to_back_wall_ms on the host;
    only without setup / teardown). count_flops: the memory-probe call also runs under the profiler, which counts
    its aten matrix products (``matmul_flops``, spherekit.bench.flops). On CUDA the GPU's clocks after the timed
    calls are kept (sm_mhz, mem_mhz)."""
    if back_to_back and (setup is not None or teardown is not None):
        raise ValueError("back_to_back timing needs a step without setup or teardown")
    cuda = settings.device.startswith("cuda")
    setup = setup or (lambda: None)
    teardown = teardown or (lambda: None)
    call = _timer(cuda)
    if not cuda:
        malloc_probe_mode(False)  # time every call in the same (warmed-up) allocator state
    notes = []
    first_ms = None
    if cuda:
        first_ms = call(step, setup, teardown)[0]
        warmups = max(GPU_WARMUPS, settings.warmup)
    else:
        warmups = max(1, settings.warmup)  # on CPU the first call is the first warm-up (as the CPU rows always were)
    estimate, done = None, 0
    for _ in range(warmups):
        dt = call(step, setup, teardown)[0] / 1e3
        first_ms = dt * 1e3 if first_ms is None else first_ms
        estimate = dt if estimate is None else min(estimate, dt)
        done += 1
        if not cuda and estimate * (settings.min_repeats + 2) > settings.budget_s:  # long CPU calls: one is enough
            break
    n = settings.repeats
    if estimate * n > settings.budget_s:
        n = max(settings.min_repeats, min(n, int(settings.budget_s / max(estimate, 1e-9))))
        if n < settings.repeats:
            notes.append(f"repeats cut to {n} by budget_s={settings.budget_s:g}")
    if estimate < 1e-3:
        n = max(n, SUB_MS_REPEATS)
    timed = [call(step, setup, teardown) for _ in range(n)]
    wall = [w for w, _ in timed]
    result = {"median_ms": quantile(wall, 0.5), "p20_ms": quantile(wall, 0.2), "p80_ms": quantile(wall, 0.8),
              "first_call_ms": first_ms, "warmups": done}
    if cuda:
        dev = [d for _, d in timed]
        result.update(device_median_ms=quantile(dev, 0.5), device_p20_ms=quantile(dev, 0.2),
                      device_p80_ms=quantile(dev, 0.8))
    if back_to_back:
        result.update(_back_to_back(step, back_to_back, cuda))
    if cuda:
        from .machine import gpu_clocks

        clocks = gpu_clocks(settings.device)
        result.update({k: clocks[k] for k in ("sm_mhz", "mem_mhz") if k in clocks})
    setup()
    if cuda:
        import torch

        torch.cuda.synchronize()
    with contextlib.ExitStack() as stack:
        counter = None
        if count_flops:
            from .flops import MatmulCounter

            counter = stack.enter_context(MatmulCounter())
        with PeakMemory(settings.device) as mem:
            out = step()
            if cuda:
                torch.cuda.synchronize()
            del out
    teardown()
    if counter is not None:
        result["matmul_flops"] = counter.flops
    if mem.method == "sampled":
        notes.append("mem=sampled")
    busy = _busy_note()
    if busy:
        notes.append(busy)
    result.update(peak_extra_mib=mem.extra_bytes / MIB, repeats=n, status="ok", note="; ".join(notes))
    return result


def classify_error(exc: BaseException) -> str:
    """'oom' for out-of-memory errors (CPU or CUDA), else 'error'."""
    if isinstance(exc, MemoryError):
        return "oom"
    text = f"{type(exc).__name__} {exc}".lower()
    if "outofmemory" in text or "out of memory" in text or "can't allocate memory" in text \
            or "cannot allocate memory" in text:
        return "oom"
    return "error"


DEADLINE_NOTE = "not run: the run's deadline had passed"


def release_caches(device: str) -> None:
    """What a fresh worker process would not carry over from the previous provider: torch.compile's graphs
    (dynamo reset), garbage, and on CUDA the allocator's cached blocks."""
    if "torch._dynamo" in sys.modules:
        sys.modules["torch._dynamo"].reset()
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def needs_cuda(provider: str, settings: Settings, triton: bool = False) -> str | None:
    """Why a GPU-only provider cannot run here (None when it can): on CUDA always; on CPU a Triton provider
    (triton=True) only when settings.triton_on_cpu and TRITON_INTERPRET=1 (the interpreter runs it on CPU tensors)."""
    if settings.device.startswith("cuda"):
        return None
    if triton and settings.triton_on_cpu:
        from .._backend import triton_interpreting

        if triton_interpreting():
            return None
    return f"{provider} needs CUDA tensors"


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
# running many measurements
# ------------------------------------------------------------------------------------------------


def run_tasks(module_name: str, tasks: list[dict], settings: Settings, emit: Callable[[dict, dict], None],
              progress: bool = True, deadline: float | None = None) -> None:
    """Run ``tasks`` (dicts understood by ``module.run_task``); ``emit(task, result)`` once per task.

    The family module provides ``run_task(task, settings) -> dict``, ``predict_bytes(task) -> int | None``
    and ``static_skip(task, settings) -> str | None`` (a reason not to run the task at all).
    deadline: a time.monotonic() value after which no measurement starts (its row: status "skipped", note
    DEADLINE_NOTE); with isolate="none" it is checked before every measurement, else before every worker.
    In-process (isolate="none"), compile caches and cached allocations are dropped whenever the provider changes.
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

    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    try:
        previous = None
        for group in groups:
            if bar is not None:
                bar.set_description(f"{group[0]['provider']}")
            if settings.isolate == "none":
                for task in group:
                    if late():
                        done(task, {"status": "skipped", "note": DEADLINE_NOTE})
                        continue
                    if previous is not None and task["provider"] != previous:
                        release_caches(settings.device)
                    previous = task["provider"]
                    done(task, run_one(module, task, settings))
                continue
            if late():
                for task in group:
                    done(task, {"status": "skipped", "note": DEADLINE_NOTE})
                continue
            remaining = list(group)
            while remaining:
                consumed = _worker_session(module_name, remaining, settings, done, bar)
                remaining = remaining[consumed:]
    finally:
        if bar is not None:
            bar.close()


def _describe(task: dict) -> str:
    sizes = " ".join(f"{k}={v}" for k, v in task.items() if k not in ("family", "provider", "mode", "dtype"))
    return f"{task['provider']} {sizes} {task.get('mode', '')}".strip()


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
                rss = rss_bytes(proc.pid)
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


def tiny_sizes(values, smallest: int) -> dict[int, int]:
    """A rehearsal's stand-ins for a grid's sizes: the i-th smallest distinct value -> smallest * 2^i, so that a
    shrunk grid keeps its number of distinct measurements."""
    return {v: smallest * 2 ** i for i, v in enumerate(sorted(set(values)))}


def prepare_run(presets: dict, preset: str, providers, known_providers, *, repeats: int | None,
                budget_s: float | None, timeout_s: float, isolate: str, mem_limit_gib: float | None,
                rehearse: bool = False, shrink: Callable | None = None):
    """Validate a preset and a provider subset and build the run Settings: (spec, settings), or None when
    the preset needs a CUDA GPU and none is available (the caller prints nothing more and returns 2).
    `repeats` overrides the preset's (and caps its min_repeats); presets are PresetBase subclasses.
    rehearse: run shrink(preset) instead, the preset's grid on CPU at tiny sizes (the same code path without a
    GPU: scripts/gpu_check.sh --rehearse); GPU-only providers are then skipped by the family's static_skip."""
    from dataclasses import replace

    if preset not in presets:
        raise ValueError(f"preset must be one of {sorted(presets)}, got {preset!r}")
    unknown = sorted(set(providers or ()) - set(known_providers))
    if unknown:
        raise ValueError(f"unknown providers {unknown}; choose from {sorted(known_providers)}")
    spec = presets[preset]
    if rehearse:
        if shrink is None:
            raise ValueError("this benchmark family has no rehearsal (shrink) of its presets")
        spec = shrink(spec)
    if repeats is not None:
        spec = replace(spec, repeats=repeats, min_repeats=min(spec.min_repeats, repeats))
    if spec.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print(f"preset {preset!r} needs a CUDA GPU; none is available here")
            return None
    settings = Settings(
        device=spec.device, repeats=spec.repeats, warmup=spec.warmup, min_repeats=spec.min_repeats,
        budget_s=spec.budget_s if budget_s is None else budget_s, timeout_s=timeout_s, isolate=isolate,
        mem_limit_bytes=int(mem_limit_gib * GIB) if mem_limit_gib else default_mem_limit(spec.device),
        count_flops=spec.device == "cuda" or rehearse,
    )
    return spec, settings


def plan_run(presets: dict, preset: str, providers, known_providers, build_tasks, **options):
    """prepare_run, then the preset's tasks for the chosen providers: (spec, settings, tasks), or None when the
    caller should return 2 (a CUDA preset without a GPU, or no measurement selected; both printed)."""
    prepared = prepare_run(presets, preset, providers, known_providers, **options)
    if prepared is None:
        return None
    spec, settings = prepared
    tasks = build_tasks(spec, providers)
    if not tasks:
        print("no measurements selected")
        return None
    return spec, settings, tasks


def run_facts(preset: str, device: str) -> dict:
    """The cells every row of a run shares: run_id (its start), preset, machine, device and the versions."""
    from .machine import machine_name, now, versions

    return dict(run_id=now(), preset=preset, machine=machine_name(device), device=device, **versions())


EMPTY_RESULT = {"median_ms": None, "p20_ms": None, "p80_ms": None, "device_median_ms": None, "device_p20_ms": None,
                "device_p80_ms": None, "peak_extra_mib": None, "repeats": 0, "note": ""}


def row_writer(csv_path: str | os.PathLike, common: dict, *, params, metrics=(), defaults=None,
               finish_row: Callable[[dict, list[dict]], None] | None = None):
    """(rows, emit): `emit(task, result)` builds a row (`common`, the task, empty result columns, `defaults` (a dict
    or a function of the task), the result, a timestamp), lets `finish_row(row, rows)` complete it, fills its params /
    metrics cells from the keys named `params` / `metrics` and HARNESS_METRICS (spherekit.bench.results), appends it
    atomically to csv_path at once and to the returned list."""
    from .machine import now
    from .results import append_rows, set_fields

    rows: list[dict] = []

    def emit(task: dict, result: dict) -> None:
        row = {**common, **task, **EMPTY_RESULT, **(defaults(task) if callable(defaults) else defaults or {}),
               **result, "timestamp": now()}
        rows.append(row)
        if finish_row is not None:
            finish_row(row, rows)
        append_rows(csv_path, [set_fields(row, params, tuple(metrics) + HARNESS_METRICS)])

    return rows, emit


def start_run(family: str, preset: str, spec: PresetBase, settings: Settings, tasks: list[dict],
              out: str | os.PathLike, *, params, metrics=(), defaults: dict | None = None,
              finish_row: Callable[[dict, list[dict]], None] | None = None):
    """Print the run's header line and make its `emit(task, result)` for run_tasks (row_writer into
    <out>/<family>.csv). On CUDA the GPU's clocks are printed first (and again by run_and_report at the end).
    Returns (csv path, rows, emit)."""
    csv_path = Path(out) / f"{family}.csv"
    common = run_facts(preset, spec.device)
    limit = f"{settings.mem_limit_bytes / GIB:.1f} GiB" if settings.mem_limit_bytes else "none (OOM caught)"
    print(f"spherekit bench {family}: preset {preset}, {len(tasks)} measurements on {common['machine']}; "
          f"mem limit {limit}; isolate={settings.isolate}; rows -> {csv_path}")
    print_clocks("start", spec.device)
    rows, emit = row_writer(csv_path, common, params=params, metrics=metrics, defaults=defaults, finish_row=finish_row)
    return csv_path, rows, emit


def print_clocks(when: str, device: str) -> dict:
    """Print the GPU's clocks (machine.gpu_clocks) with `when` (start / end); nothing on CPU. Returns them."""
    from .machine import clocks_text, gpu_clocks

    if not device.startswith("cuda"):
        return {}
    clocks = gpu_clocks(device)
    print(f"GPU clocks at the {when}: {clocks_text(clocks)}", flush=True)
    return clocks


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextlib.contextmanager
def background_load(processes: int):
    """A fixed, known load for the duration: `processes` child processes that spin on the CPU (pure Python, no
    threads of their own), stopped on exit (also on Ctrl-C). 0: nothing."""
    if processes < 0:
        raise ValueError(f"background_load must be >= 0 processes, got {processes}")
    if processes == 0:
        yield
        return
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    spinners = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(processes)]
    for proc in spinners:
        proc.start()
    try:
        yield
    finally:
        stop.set()
        for proc in spinners:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def load_note(processes: int) -> str:
    return f"background load: {processes} spinning processes" if processes else ""


def noting(emit, note: str):
    """emit, with note appended to every result's note ('' leaves emit as it is)."""
    if not note:
        return emit

    def wrapped(task: dict, result: dict) -> None:
        result["note"] = "; ".join(x for x in (result.get("note", ""), note) if x)
        emit(task, result)
    return wrapped


def run_and_report(module: str, tasks: list[dict], settings: Settings, emit, rows: list[dict], csv_path, *,
                   table, goals=None, progress: bool = True) -> float:
    """The common end of a family's run: run the tasks (rows arrive through emit), print table(rows), then the
    lines of goals(rows) when given, and where the rows went. Returns the wall time in seconds."""
    t0 = time.perf_counter()
    run_tasks(module, tasks, settings, emit, progress=progress)
    wall = time.perf_counter() - t0
    print_clocks("end", settings.device)
    print()
    print(table(rows))
    if goals is not None:
        print()
        print("goals:")
        for line in goals(rows):
            print("  " + line)
    print(f"\n{len(rows)} rows appended to {csv_path} in {wall:.0f} s")
    return wall


# ------------------------------------------------------------------------------------------------
# the command line of a family: `spherekit bench <family> ...` and `python -m spherekit.bench.<module>`
# ------------------------------------------------------------------------------------------------


def comma_list(text: str) -> list[str]:
    """'a,b,' -> ['a', 'b'] (the --providers / --recipes option type)."""
    return [p for p in text.split(",") if p]


def add_run_arguments(parser, presets: dict, default_preset: str, providers, *, out_help: str = "the CSV",
                      isolate_choices=("provider", "task", "none"), rehearsal: bool = False) -> None:
    """The options every measuring family shares (its run() takes them as keywords): --preset, --out,
    --repeats, --providers, --isolate, --mem-limit-gib, --budget-s, --timeout-s, --no-progress, and --rehearse
    for a family whose presets can be shrunk (rehearsal=True; its run() takes `rehearse`)."""
    parser.add_argument("--preset", default=default_preset, choices=sorted(presets))
    parser.add_argument("--out", default="results/bench", help=f"folder of {out_help} (default: %(default)s)")
    parser.add_argument("--repeats", type=int, help="timed calls per measurement (default: the preset's)")
    parser.add_argument("--providers", type=comma_list, help=f"comma-separated subset of {','.join(providers)}")
    parser.add_argument("--isolate", default=isolate_choices[0], choices=isolate_choices,
                        help="fresh worker process per provider (default), per measurement, or none")
    parser.add_argument("--mem-limit-gib", type=float,
                        help="skip (predicted) or kill (measured RSS) above this; CPU default 20 GiB or 90%% of free")
    parser.add_argument("--budget-s", type=float, help="time budget of the timed calls per measurement")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="kill a measurement after this long")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    if rehearsal:
        parser.add_argument("--rehearse", action="store_true",
                            help="run the preset's grid on CPU at tiny sizes (checks the path without a GPU)")


def run_options(args) -> dict:
    """The keyword arguments of a family's run() from the options of add_run_arguments."""
    rehearse = {"rehearse": args.rehearse} if hasattr(args, "rehearse") else {}
    return dict(preset=args.preset, out=args.out, repeats=args.repeats, providers=args.providers,
                isolate=args.isolate, mem_limit_gib=args.mem_limit_gib, budget_s=args.budget_s,
                timeout_s=args.timeout_s, progress=not args.no_progress, **rehearse)


def family_parser(module):
    """The argument parser of one family module: prog `spherekit bench <COMMAND>` (COMMAND defaults to the
    module's FAMILY with '-' for '_'), its docstring as description, its add_arguments."""
    import argparse

    command = getattr(module, "COMMAND", module.FAMILY.replace("_", "-"))
    parser = argparse.ArgumentParser(prog=f"spherekit bench {command}", description=module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    return parser


def family_main(module, argv: list[str] | None = None) -> int:
    """The `main(argv)` of a family module: parse argv with its add_arguments, then its run_from_args."""
    args = family_parser(module).parse_args(sys.argv[1:] if argv is None else list(argv))
    return module.run_from_args(args)


def family_entry(module_name: str) -> Callable[..., int]:
    """A family module's `main(argv=None) -> int` (family_main on that module): `main = family_entry(__name__)`."""

    def main(argv: list[str] | None = None) -> int:
        return family_main(sys.modules[module_name], argv)

    main.__doc__ = f"`spherekit bench` entry of {module_name}: parse argv (default sys.argv[1:]), run it."
    return main
