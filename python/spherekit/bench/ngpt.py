"""Benchmark of the nGPT family: the geodesic residual out = Norm(Norm(h) + |alpha| (Norm(f) - Norm(h))),
providers side by side in one run, with the effective memory bandwidth next to the machine's measured peak.

Providers (h, f (rows, d) and alpha (d,) all require grad; grad_out is a fixed random tensor):
    eager              spherekit.reference.geodesic_residual computed in the input dtype: the torch
                       composition a model would write (F.normalize, lerp, F.normalize; ~10 passes)
    compile            torch.compile of the same function (dynamic=False), compiled once per shape
    spherekit-cpu      spherekit.ops.geodesic_residual(..., backend="cpu"): the C++ loops of spherekit._C
    spherekit-triton   backend="triton" (CUDA only)
    spherekit-cuda     backend="cuda" (CUDA only, needs spherekit._cuda with the nGPT kernels)
    spherekit-auto     backend="auto": what the op picks on the device (CUDA only: on CPU it is spherekit-cpu)
    peak               not the op: the machine's memory bandwidth, measured in the same run with a large
                       copy (dst = src) and triad (a = b + s * c) at 256 MiB per array on CPU, 1 GiB on CUDA
                       (spherekit.bench.ceilings); the two are named apart, the bandwidth goal divides by copy

Modes: "fwd" (forward with inputs that require grad), "bwd" (the backward only; the forward runs untimed
before each call), "fwd+bwd". Time: median and 20/80% quantiles (see spherekit.bench._harness).
Bandwidth (gb_per_s) = the bytes that must move / median time (device time on CUDA, wall time on CPU): fwd reads h,
f and writes out (3 rows*d elements), bwd reads grad_out, h, f and writes grad_h, grad_f (5), fwd+bwd 8; peak rows:
copy 2 and triad 3 arrays. Each op row carries peak_gb_per_s = the copy row of the run (the triad row where no copy
ran). CSV (spherekit.bench.results.COLUMNS): params rows and d (peak rows: elements per array), metrics bytes_moved,
gb_per_s and peak_gb_per_s.

Presets: tiny (tests, seconds), cpu (the CPU goal at rows=16384, d=1024 fp32 plus one smaller shape; a few
minutes here), cpu-full (d in 768/1024/4096 x rows 8k/16k/64k, fp32; long on 2 cores), gpu (the full grid
in bf16 and fp32 on CUDA), gpu-lease (the GPU goals' shape, rows=65536 d=4096 bf16 fwd+bwd, with every GPU
provider and one compile, plus d=16384, where the Triton backward runs in column chunks; scripts/gpu_check.sh).
--rehearse runs a preset's grid on CPU at tiny sizes (rehearsal()).
Goals: CPU: spherekit-cpu >= 2x eager for fwd+bwd at (16384, 1024) fp32. GPU (at (65536, 4096) bf16,
fwd+bwd, for each spherekit GPU backend, in device time): >= 80% of the copy bandwidth measured in the same run,
>= 3x eager, faster than compile; and backend="auto" within 5% of the faster backend.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from . import _harness as H
from .results import COLUMNS, DEVICE_HEAD, device_cells, grouped_table, has_device_time, number, trust_notes

FAMILY = "ngpt"
MODULE = "spherekit.bench.ngpt"
CSV_COLUMNS = COLUMNS  # deprecated alias: every family writes spherekit.bench.results.COLUMNS
PARAMS = ("elements", "rows", "d")  # the params cell: peak rows have elements (per array), op rows rows and d
METRICS = ("bytes_moved", "gb_per_s", "peak_gb_per_s")
MODES = ("fwd", "bwd", "fwd+bwd")
PEAK_MODES = ("copy", "triad")
PROVIDERS = ("peak", "eager", "compile", "spherekit-cpu", "spherekit-triton", "spherekit-cuda", "spherekit-auto")
GPU_ONLY = ("spherekit-triton", "spherekit-cuda", "spherekit-auto")
GPU_BACKENDS = ("spherekit-triton", "spherekit-cuda")
STREAMS = {"fwd": 3, "bwd": 5, "fwd+bwd": 8, "copy": 2, "triad": 3}  # arrays of rows*d elements that move
ALPHA = 0.05  # nGPT's alpha init scale (1/n_layers order); |alpha| is the step


@dataclass(frozen=True)
class Block:
    providers: tuple[str, ...]
    modes: tuple[str, ...]
    rows: tuple[int, ...]
    d: tuple[int, ...]
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Preset(H.PresetBase):
    blocks: tuple[Block, ...]
    peak_elements: int  # elements per array of the peak copy/triad (fp32)


_OPS_CPU = ("eager", "compile", "spherekit-cpu")
_OPS_GPU = ("eager", "compile", "spherekit-triton", "spherekit-cuda", "spherekit-auto")
PRESETS = {
    "tiny": Preset("cpu", (Block(("eager", "spherekit-cpu"), MODES, (64,), (41, 128), ("float32",)),),
                   peak_elements=1 << 20, repeats=2, warmup=1, min_repeats=1, budget_s=5.0),
    "cpu": Preset("cpu", (Block(_OPS_CPU, MODES, (16384,), (1024,), ("float32",)),
                          Block(("eager", "spherekit-cpu"), ("fwd+bwd",), (8192,), (768,), ("float32",))),
                  peak_elements=64 << 20, repeats=5, warmup=1, budget_s=20.0),
    "cpu-full": Preset("cpu", (Block(_OPS_CPU, MODES, (8192, 16384, 65536), (768, 1024, 4096), ("float32",)),),
                       peak_elements=64 << 20, repeats=5, warmup=1, budget_s=60.0),
    "gpu": Preset("cuda", (Block(_OPS_GPU, MODES, (8192, 16384, 65536), (768, 1024, 4096),
                                 ("bfloat16", "float32")),),
                  peak_elements=256 << 20, repeats=20, warmup=3, budget_s=20.0),
    "gpu-lease": Preset("cuda", (Block(_OPS_GPU, ("fwd+bwd",), (65536,), (4096,), ("bfloat16",)),
                                 Block(GPU_BACKENDS + ("eager",), ("fwd+bwd",), (8192,), (16384,), ("bfloat16",))),
                        peak_elements=256 << 20, repeats=10, warmup=2, budget_s=2.0),
}


def rehearsal(preset: Preset) -> Preset:
    """The preset's grid (providers, modes) on CPU in fp32 at rows = 32, 64, ..., d = 64, 128, ..., peak arrays of
    1 Mi elements."""
    rows = H.tiny_sizes([x for b in preset.blocks for x in b.rows], 32)
    d = H.tiny_sizes([x for b in preset.blocks for x in b.d], 64)
    blocks = tuple(replace(b, rows=tuple(rows[x] for x in b.rows), d=tuple(d[x] for x in b.d), dtypes=("float32",))
                   for b in preset.blocks)
    return replace(preset, device="cpu", blocks=blocks, peak_elements=1 << 20, repeats=1, warmup=1, min_repeats=1,
                   budget_s=1.0)


def build_tasks(preset: Preset, providers: list[str] | None = None) -> list[dict]:
    """The peak measurements first (their result goes into every later row), then by provider, shape, mode."""
    tasks = [dict(family=FAMILY, provider="peak", mode=m, elements=preset.peak_elements, dtype="float32")
             for m in PEAK_MODES]
    seen = set()
    for block in preset.blocks:
        for p, rows, d, dtype, mode in itertools.product(block.providers, block.rows, block.d, block.dtypes,
                                                         block.modes):
            key = (p, rows, d, dtype, mode)
            if (providers and p not in providers) or key in seen:
                continue
            seen.add(key)
            tasks.append(dict(family=FAMILY, provider=p, mode=mode, rows=rows, d=d, dtype=dtype))
    order = {p: i for i, p in enumerate(PROVIDERS)}
    return sorted(tasks, key=lambda t: (order[t["provider"]], t["dtype"], t.get("rows", 0), t.get("d", 0),
                                        (PEAK_MODES + MODES).index(t["mode"])))


# ------------------------------------------------------------------------------------------------
# the family interface used by the harness: static_skip, predict_bytes, run_task
# ------------------------------------------------------------------------------------------------

def static_skip(task: dict, settings: H.Settings) -> str | None:
    p = task["provider"]
    if p in GPU_ONLY and (reason := H.needs_cuda(p, settings, triton=p == "spherekit-triton")):
        return reason
    if p == "spherekit-cuda":
        from ..ops.ngpt import cuda_kernels_available

        if not cuda_kernels_available():
            return "spherekit._cuda is not built with the nGPT kernels"
    return None


def element_size(dtype: str) -> int:
    return 2 if dtype in ("bfloat16", "float16") else 4


def elements(task: dict) -> int:
    """Elements per array of a task: `elements` for a peak row, rows * d for an op row."""
    return task["elements"] if task["provider"] == "peak" else task["rows"] * task["d"]


def bytes_moved(task: dict) -> int:
    """Bytes that must move for one call (the roofline numerator)."""
    n = elements(task)
    extra = 0 if task["provider"] == "peak" else 12 * task["rows"]  # the fp32 (rows, 3) norms
    return STREAMS[task["mode"]] * n * element_size(task["dtype"]) + extra


def predict_bytes(task: dict) -> int:
    """Rough upper bound of the worker's memory for the measurement (the whole process), for skipping."""
    n = elements(task)
    es = element_size(task["dtype"])
    if task["provider"] == "peak":
        return 3 * n * es + (512 << 20)
    arrays = {"eager": 16, "compile": 12}.get(task["provider"], 9)  # inputs, grads, temporaries
    return arrays * n * max(es, 4) + (512 << 20)


def _inputs(task: dict, device: str):
    import torch

    dtype = getattr(torch, task["dtype"])
    gen = torch.Generator().manual_seed(0)
    rows, d = task["rows"], task["d"]
    h, f, g = (torch.randn(rows, d, generator=gen).to(device=device, dtype=dtype) for _ in range(3))
    alpha = (torch.randn(d, generator=gen) * ALPHA).to(device)
    return h.requires_grad_(), f.requires_grad_(), alpha.requires_grad_(), g


def _make_fn(task: dict):
    import torch

    from ..reference import ngpt as ref

    p = task["provider"]
    dtype = getattr(torch, task["dtype"])

    def eager(h, f, alpha):
        return ref.geodesic_residual(h, f, alpha, compute_dtype=dtype)

    if p == "eager":
        return eager
    if p == "compile":
        return torch.compile(eager, dynamic=False)
    if p.startswith("spherekit-"):
        from ..ops import geodesic_residual

        backend = p.split("-", 1)[1]
        return lambda h, f, alpha: geodesic_residual(h, f, alpha, backend=backend)
    raise ValueError(f"unknown provider {p!r}; choose from {PROVIDERS}")


def prepare_call(task: dict, device: str):
    """A function making one untimed call of the task's measured step, its inputs made once (scripts/gpu_run.py's
    pre-compile capture and profile)."""
    h, f, alpha, g = _inputs(task, device)
    fn = _make_fn(task)

    def call():
        out = fn(h, f, alpha)
        if task["mode"] != "fwd":
            out.backward(g)
        h.grad = f.grad = alpha.grad = None
    return call


def outputs_at(task: dict, device: str, rows: int = 2048) -> list:
    """The output and the gradients of h, f and alpha at min(rows, task's rows) rows (a launch option's check
    against the defaults' outputs in scripts/gpu_run.py's sweeps)."""
    import torch

    small = dict(task, rows=min(task["rows"], rows))
    h, f, alpha, g = _inputs(small, device)
    out = _make_fn(small)(h, f, alpha)
    return [out.detach()] + list(torch.autograd.grad(out, (h, f, alpha), g))


def run_task(task: dict, settings: H.Settings) -> dict:
    import torch

    if task["provider"] == "peak":
        from .ceilings import run_peak

        result = run_peak(task, settings)
    else:
        h, f, alpha, g = _inputs(task, settings.device)
        fn = _make_fn(task)
        leaves = (h, f, alpha)

        def clear_grads():
            for t in leaves:
                t.grad = None

        mode = task["mode"]
        if mode == "fwd":
            result = H.measure(lambda: fn(h, f, alpha), settings)
        elif mode == "bwd":
            state = {}

            def setup():
                state["out"] = fn(h, f, alpha)

            result = H.measure(lambda: state.pop("out").backward(g), settings, setup=setup, teardown=clear_grads)
        elif mode == "fwd+bwd":
            result = H.measure(lambda: fn(h, f, alpha).backward(g), settings, teardown=clear_grads)
        else:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        del h, f, alpha, g, leaves
    if settings.device.startswith("cuda"):
        torch.cuda.empty_cache()
    from .results import goal_time

    moved = bytes_moved(task)
    result["bytes_moved"] = moved
    result["gb_per_s"] = moved / (goal_time(result)[0] * 1e-3) / 1e9
    return result


# ------------------------------------------------------------------------------------------------
# reporting
# ------------------------------------------------------------------------------------------------

def peak_bandwidth(rows: list[dict], name: str = "copy") -> float | None:
    """The bandwidth (GB/s) of this run's ok peak row `name` ("copy" or "triad"), or None."""
    values = [number(r, "gb_per_s") for r in rows if r["provider"] == "peak" and r["mode"] == name
              and r["status"] == "ok"]
    return values[-1] if values else None


def row_defaults(task: dict) -> dict:
    """What an ngpt row holds before its result (also when it did not run): the bytes it must move."""
    return {"bytes_moved": bytes_moved(task), "gb_per_s": None}


def finish_row(row: dict, rows: list[dict]) -> None:
    """Every ngpt row carries the run's copy bandwidth (peak_gb_per_s)."""
    row["peak_gb_per_s"] = peak_bandwidth(rows)


def format_table(rows: list[dict]) -> str:
    order = {p: i for i, p in enumerate(PROVIDERS)}
    allmodes = PEAK_MODES + MODES
    rows = sorted(rows, key=lambda r: (r["provider"] != "peak", r["dtype"], int(r.get("d", 0)),
                                       int(r.get("rows", 0)), allmodes.index(r["mode"]), order.get(r["provider"], 99)))
    peak = peak_bandwidth(rows)
    device = has_device_time(rows)
    head = (f"{'dtype':<8} {'d':>5} {'rows':>9} {'mode':<8} {'provider':<17} {DEVICE_HEAD + ' ' if device else ''}"
            f"{'wall ms':>10} {'p20-p80 ms':>17} {'GB/s':>7} {'% copy':>7} {'peak MiB':>9}  status")

    def shape(r):
        return (r["d"], r["rows"]) if r["provider"] != "peak" else ("-", r["elements"])

    def line(r):
        ok = r["status"] == "ok"
        med = f"{number(r, 'median_ms'):10.2f}" if ok else f"{'-':>10}"
        q = f"{number(r, 'p20_ms'):.2f}-{number(r, 'p80_ms'):.2f}" if ok else "-"
        bw = number(r, "gb_per_s")
        bw_s = f"{bw:7.1f}" if ok else f"{'-':>7}"
        pct = f"{100 * bw / peak:6.0f}%" if ok and peak else f"{'-':>7}"
        mem = f"{number(r, 'peak_extra_mib'):9.1f}" if ok else f"{'-':>9}"
        status = r["status"] if ok or not r.get("note") else f"{r['status']} ({r['note']})"
        d, n = shape(r)
        dev = " ".join(device_cells(r)) + " " if device else ""
        return (f"{r['dtype']:<8} {d:>5} {n:>9} {r['mode']:<8} {r['provider']:<17} {dev}{med} {q:>17} {bw_s} {pct} "
                f"{mem}  {status}")

    table = grouped_table(head, rows, lambda r: (r["dtype"], *shape(r), r["mode"]), line)
    return "\n".join([table, *trust_notes(rows)])


def _find(rows, provider, n_rows, d, dtype, mode="fwd+bwd"):
    for r in rows:
        if (r["provider"], int(r.get("rows", 0)), int(r.get("d", 0)), r["dtype"], r["mode"]) == \
                (provider, n_rows, d, dtype, mode) \
                and r["status"] == "ok":
            return r
    return None


def goal_checks(rows: list[dict], device: str) -> list[str]:
    """The issue's goals as PASS / FAIL / N/A lines, computed from measured rows."""
    if device == "cpu":
        eager, sk = _find(rows, "eager", 16384, 1024, "float32"), _find(rows, "spherekit-cpu", 16384, 1024, "float32")
        if not (eager and sk):
            return ["N/A   CPU goal at rows=16384 d=1024 fp32 fwd+bwd: eager and spherekit-cpu not both measured ok "
                    "(preset cpu)"]
        speed = number(eager, "median_ms") / number(sk, "median_ms")
        return [f"{'PASS' if speed >= 2 else 'FAIL'}  CPU fwd+bwd rows=16384 d=1024 fp32: spherekit-cpu "
                f"{number(sk, 'median_ms'):.1f} ms vs eager {number(eager, 'median_ms'):.1f} ms = {speed:.1f}x faster "
                "(goal >= 2x)"]
    return gpu_goal_checks(rows)


def gpu_goal_checks(rows: list[dict], n_rows: int = 65536, d: int = 4096, dtype: str = "bfloat16") -> list[str]:
    """The GPU goals at (n_rows, d, dtype) fwd+bwd for each spherekit GPU backend, in device time where measured:
    >= 80% of this run's copy bandwidth (triad named beside it), >= 3x eager, faster than torch.compile;
    measured / predicted (spherekit.bench.roofline at this run's copy bandwidth); and backend="auto" within 5% of
    the faster backend."""
    from .results import goal_time

    copy, triad = peak_bandwidth(rows, "copy"), peak_bandwidth(rows, "triad")
    eager, comp = _find(rows, "eager", n_rows, d, dtype), _find(rows, "compile", n_rows, d, dtype)
    shape = f"rows={n_rows} d={d} {dtype} fwd+bwd"
    out, times = [], {}
    for p in GPU_BACKENDS:
        sk = _find(rows, p, n_rows, d, dtype)
        if sk is None:
            out.append(f"N/A   GPU goals for {p}: {shape} not measured ok in this run")
            continue
        t, which = goal_time(sk)
        times[p] = t
        if copy:
            frac = number(sk, "gb_per_s") / copy
            also = f"; {100 * number(sk, 'gb_per_s') / triad:.0f}% of triad {triad:.0f} GB/s" if triad else ""
            out.append(f"{'PASS' if frac >= 0.8 else 'FAIL'}  GPU bandwidth {p}: {number(sk, 'gb_per_s'):.0f} GB/s "
                       f"({which}) = {100 * frac:.0f}% of the copy bandwidth measured in this run, {copy:.0f} GB/s "
                       f"(goal >= 80%){also}")
            if which == "device time" and (n_rows, d, dtype) == (65536, 4096, "bfloat16"):
                from . import roofline

                predicted = roofline.predict("ngpt fwd+bwd", roofline.Ceilings(copy, triad or copy, float("inf"),
                                                                               "this run"))
                out.append(f"INFO  measured / predicted, {p}: {t:.3f} / {predicted:.3f} ms = {t / predicted:.2f}")
        else:
            out.append(f"N/A   GPU bandwidth {p}: no copy measurement in this run")
        for other, goal, name in ((eager, 3.0, "eager"), (comp, 1.0, "torch.compile")):
            if other is None:
                out.append(f"N/A   GPU time {p} vs {name}: {name} not measured ok")
                continue
            t_other = goal_time(other, which)[0]
            met = t_other / t >= goal if goal > 1 else t_other / t > goal
            out.append(f"{'PASS' if met else 'FAIL'}  GPU time {p} vs {name}: {t:.3f} ms vs {t_other:.3f} ms "
                       f"({which}) = {t_other / t:.2f}x (goal {'>=' if goal > 1 else '>'} {goal:g}x)")
    auto = _find(rows, "spherekit-auto", n_rows, d, dtype)
    if auto is not None and len(times) == len(GPU_BACKENDS):
        t_auto, which = goal_time(auto, which)
        best = min(times, key=times.get)
        out.append(f"{'PASS' if t_auto <= 1.05 * times[best] else 'FAIL'}  backend=\"auto\": {t_auto:.3f} ms vs the "
                   f"faster backend here, {best}, {times[best]:.3f} ms ({which}; goal: within 5%)")
    return out


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------

def run(preset: str = "cpu", out: str | Path = "results/bench", repeats: int | None = None,
        providers: list[str] | None = None, isolate: str = "provider", mem_limit_gib: float | None = None,
        budget_s: float | None = None, timeout_s: float = 1800.0, progress: bool = True,
        rehearse: bool = False) -> int:
    """Run a preset, append rows to <out>/ngpt.csv, print the table and the goal checks."""
    planned = H.plan_run(PRESETS, preset, providers, PROVIDERS, build_tasks, repeats=repeats, budget_s=budget_s,
                         timeout_s=timeout_s, isolate=isolate, mem_limit_gib=mem_limit_gib, rehearse=rehearse,
                         shrink=rehearsal)
    if planned is None:
        return 2
    spec, settings, tasks = planned
    csv_path, rows, emit = H.start_run(FAMILY, preset, spec, settings, tasks, out, params=PARAMS, metrics=METRICS,
                                       defaults=row_defaults, finish_row=finish_row)
    device = "cpu" if spec.device == "cpu" else "cuda"
    H.run_and_report(MODULE, tasks, settings, emit, rows, csv_path, table=format_table,
                     goals=lambda rows: goal_checks(rows, device), progress=progress)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `spherekit bench ngpt` (run_from_args passes them to run)."""
    H.add_run_arguments(parser, PRESETS, "cpu", PROVIDERS, rehearsal=True)


def run_from_args(args: argparse.Namespace) -> int:
    return run(**H.run_options(args))


main = H.family_entry(__name__)


if __name__ == "__main__":
    raise SystemExit(main())
