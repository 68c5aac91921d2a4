"""Benchmark of the contrastive family (InfoNCE / MNRL): providers side by side in one run.

Providers (all compute a mean InfoNCE loss with temperature 0.05, i.e. sentence-transformers' scale 20,
over unit-normalised queries (B, d), candidates (N, d) and, in the "with hard negatives" variant,
hard negatives (B, k=1, d)):

    reference          spherekit.reference.info_nce: the materialising pure-torch oracle (fp32 math)
    reference-compile  torch.compile(reference.info_nce, dynamic=False), one compile per shape
    torch-ce           what a user writes instead: F.cross_entropy(q @ c.T / temperature, arange(B)) on the
                       materialised logits (k = 0 only: per-query hard negatives have no one-line form)
    torch-ce-compile   torch.compile of torch-ce (dynamic=False)
    st-mnrl            sentence-transformers MultipleNegativesRankingLoss.compute_loss_from_embeddings
                       (its default cos_sim, which upcasts fp16/bf16 embeddings to fp32: fp32 products)
    st-mnrl-autocast   the same under torch.autocast(dtype=the input dtype), as sentence-transformers' trainer runs
                       it with bf16=True / fp16=True: bf16 tensor-core products (CUDA only)
    st-cached-mnrl     CachedMultipleNegativesRankingLoss.calculate_loss over cached embeddings (the
                       GradCache step (2): loss and backward, chunked over mini_batch_size=32 rows,
                       ST's default); its embedding steps (1) and (3) are model work, not measured
    spherekit-cpu      spherekit.ops.info_nce(..., backend="cpu"): chunked torch, BLAS products
    spherekit-triton   spherekit.ops.info_nce(..., backend="triton") (CUDA only); a task may carry the op's
                       launch options workspace_bytes and dc_accumulator (the sweeps of scripts/gpu_run.py)
    peak               not the op: the bf16 matmul ceiling and the copy bandwidth (spherekit.bench.ceilings),
                       measured first in the GPU presets' runs, so the throughput goal divides by this run's ceiling

The providers do slightly different math with hard negatives, and the CSV's N and k say what each
computed: spherekit and the reference take per-query hard negatives (B, k, d) in each query's softmax
denominator (hard_negative_mode="softmax", their default; the committed rows with k > 0 timestamped before
2026-12-02 timed the fused BCE term, the default then) over N = B candidates; sentence-transformers appends the hard negatives as k*B
extra columns shared by every query, so N = B(1 + k) for st-*. Without hard negatives (k=0) all providers compute
the same loss.

Modes: "fwd" (forward with inputs that require grad, so it saves what the backward needs; for
st-cached-mnrl the no-grad forward, since its training path interleaves forward and backward per
mini-batch), "bwd" (backward only: the forward runs untimed before each call; not separable for
st-cached-mnrl, which is skipped there), "fwd+bwd". See spherekit.bench._harness for what the time
columns mean exactly, spherekit.bench.memory for "peak extra memory".

Presets: tiny (tests), cpu-small (the README's run, a few minutes on 2 cores), cpu-goal (the CPU goals
at B=16,384 and 65,536), gpu (the whole grid in bf16 on CUDA), gpu-lease (the GPU goals in about a minute:
spherekit-triton, the reference, st-mnrl and st-mnrl-autocast, fwd+bwd at B = 4,096 and 16,384, d = 768, with and
without a hard negative; scripts/gpu_check.sh), full-cpu (the whole grid on CPU, fp32, with memory-based skips).
--rehearse runs a preset's grid on CPU at tiny sizes (rehearsal()).

Metrics (the CSV's metrics cell): useful_flops = 2 B N d per pass (fwd 1, bwd 2, fwd+bwd 3 passes; + 2 B k d per pass
for per-query hard negatives), matmul_flops = the matrix products the call executed in aten ops (counted by the
profiler on GPU runs and rehearsals: spherekit.bench.flops; a Triton kernel's products are not seen), tflops / gb_per_s
for peak rows. GPU goals use the device time (CUDA events) and say so.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from . import _harness as H
from .results import number, timing_table

FAMILY = "contrastive"
MODULE = "spherekit.bench.contrastive"
TEMPERATURE = 0.05  # = 1 / sentence-transformers' default scale 20
CACHED_MINI_BATCH = 32  # CachedMultipleNegativesRankingLoss's default mini_batch_size
MODES = ("fwd", "bwd", "fwd+bwd")
PARAMS = ("B", "N", "d", "k", "workspace_bytes", "dc_accumulator", "n", "elements")  # the params cell: queries,
# candidates per query, width, hard negatives per query, spherekit's launch options when set; peak rows: their size
METRICS = ("useful_flops", "tflops", "gb_per_s")
SPHEREKIT_OPTIONS = ("workspace_bytes", "dc_accumulator")  # task keys passed to spherekit.ops.info_nce when present
PASSES = {"fwd": 1, "bwd": 2, "fwd+bwd": 3}  # matrix products of 2 B N d each: logits; dq and dc
PEAKS = (("bf16_matmul", 8192), ("copy", 256 << 20))  # the ceilings the GPU presets measure first
PROVIDERS = ("peak", "reference", "reference-compile", "torch-ce", "torch-ce-compile", "st-mnrl", "st-mnrl-autocast",
             "st-cached-mnrl", "spherekit-cpu", "spherekit-triton")
GPU_ONLY = ("st-mnrl-autocast", "spherekit-triton")
CPU_PROVIDERS = tuple(p for p in PROVIDERS if p not in GPU_ONLY + ("peak",))
_ST = ("st-mnrl", "st-mnrl-autocast", "st-cached-mnrl")


@dataclass(frozen=True)
class Block:
    providers: tuple[str, ...]
    modes: tuple[str, ...]
    B: tuple[int, ...]
    d: tuple[int, ...]
    k: tuple[int, ...]


@dataclass(frozen=True)
class Preset(H.PresetBase):
    dtype: str
    blocks: tuple[Block, ...]
    peaks: tuple[tuple[str, int], ...] = ()  # (ceiling, size) measured first (spherekit.bench.ceilings)


_BIG = (1024, 4096, 16384, 65536)
PRESETS = {
    "tiny": Preset("cpu", "float32", (Block(("reference", "st-mnrl", "st-cached-mnrl", "spherekit-cpu"), MODES,
                                            (64, 128), (32,), (0, 1)),),
                   repeats=1, warmup=1, min_repeats=1, budget_s=5.0),
    "cpu-small": Preset("cpu", "float32", (
        Block(CPU_PROVIDERS, ("fwd+bwd",), (1024, 4096), (384,), (0, 1)),
        Block(("reference", "spherekit-cpu"), ("fwd", "bwd"), (1024, 4096), (384,), (0, 1)),
    ), repeats=7, warmup=1, budget_s=5.0),
    # st-cached-mnrl only at B=16,384: with mini_batch_size=32 one B=65,536 call takes most of an hour here
    "cpu-goal": Preset("cpu", "float32", (
        Block(("reference", "spherekit-cpu", "st-mnrl"), ("fwd+bwd",), (16384, 65536), (384,), (0,)),
        Block(("st-cached-mnrl",), ("fwd+bwd",), (16384,), (384,), (0,)),
        Block(("torch-ce", "torch-ce-compile"), ("fwd+bwd",), (16384,), (384,), (0,)),
        Block(("reference", "spherekit-cpu"), ("fwd", "bwd"), (16384,), (384,), (0,)),
    ), repeats=5, warmup=1, budget_s=40.0),
    "gpu": Preset("cuda", "bfloat16", (Block(CPU_PROVIDERS + GPU_ONLY, MODES, _BIG, (384, 768), (0, 1)),),
                  repeats=20, warmup=3, budget_s=20.0, peaks=PEAKS),
    "full-cpu": Preset("cpu", "float32", (Block(CPU_PROVIDERS, MODES, _BIG, (384, 768), (0, 1)),),
                       repeats=5, warmup=1, budget_s=60.0),
    "gpu-lease": Preset("cuda", "bfloat16", (Block(("reference", "st-mnrl", "st-mnrl-autocast", "spherekit-triton"),
                                                   ("fwd+bwd",),
                                                   (4096, 16384), (768,), (0, 1)),),
                        repeats=10, warmup=2, budget_s=2.0, peaks=PEAKS),
}


def rehearsal(preset: Preset) -> Preset:
    """The preset's grid (providers, modes, k) on CPU in fp32 at B = 64, 128, ..., d = 32, ..., one timed call each."""
    B = H.tiny_sizes([x for b in preset.blocks for x in b.B], 64)
    d = H.tiny_sizes([x for b in preset.blocks for x in b.d], 32)
    blocks = tuple(replace(b, B=tuple(B[x] for x in b.B), d=tuple(d[x] for x in b.d)) for b in preset.blocks)
    peaks = tuple((name, 256 if name == "bf16_matmul" else 1 << 20) for name, _ in preset.peaks)
    return replace(preset, device="cpu", dtype="float32", blocks=blocks, repeats=1, warmup=1, min_repeats=1,
                   budget_s=1.0, peaks=peaks)


def n_candidates(provider: str, B: int, k: int) -> int:
    """Columns each query is scored against: B, or B(1 + k) where hard negatives become shared columns."""
    return B * (1 + k) if provider in _ST else B


def build_tasks(preset: Preset, providers: list[str] | None = None) -> list[dict]:
    """Tasks of a preset: its peaks first, then grouped by provider (one worker each), then by B, d, k, mode."""
    from .ceilings import peak_task

    peaks = [peak_task(FAMILY, name, size) for name, size in preset.peaks if not providers or "peak" in providers]
    seen, tasks = set(), []
    for block in preset.blocks:
        for p, B, d, k, mode in itertools.product(block.providers, block.B, block.d, block.k, block.modes):
            if providers and p not in providers:
                continue
            key = (p, B, d, k, mode)
            if key not in seen:
                seen.add(key)
                tasks.append(dict(family=FAMILY, provider=p, mode=mode, B=B, N=n_candidates(p, B, k), d=d, k=k,
                                  dtype=preset.dtype))
    order = {p: i for i, p in enumerate(PROVIDERS)}
    return peaks + sorted(tasks, key=lambda t: (order[t["provider"]], t["B"], t["d"], t["k"],
                                                MODES.index(t["mode"])))


# ------------------------------------------------------------------------------------------------
# the family interface used by the harness: static_skip, predict_bytes, run_task
# ------------------------------------------------------------------------------------------------


def static_skip(task: dict, settings: H.Settings) -> str | None:
    if task["provider"] == "peak":
        return None
    if task["provider"] in GPU_ONLY:
        reason = H.needs_cuda(task["provider"], settings, triton=task["provider"] == "spherekit-triton")
        if reason:
            return reason
    if task["provider"].startswith("torch-ce") and task["k"]:
        return "k > 0: per-query hard negatives have no one-line cross-entropy form (compare with the reference)"
    if task["provider"] == "st-cached-mnrl" and task["mode"] == "bwd":
        return "its backward runs interleaved with the forward per mini-batch: see fwd+bwd"
    return None


def predict_bytes(task: dict) -> int:
    """Rough upper bound of the worker's memory for the measurement (the whole process), for skipping."""
    if task["provider"] == "peak":
        return (3 * task.get("elements", 0) * 4 + 3 * task.get("n", 0) ** 2 * 2) + (512 << 20)
    B, N, d, k, p = task["B"], task["N"], task["d"], task["k"], task["provider"]
    es = 2 if task["dtype"] in ("bfloat16", "float16") else 4
    rows = B * (1 + k) + N  # queries, hard negatives, candidates
    inputs = 3 * rows * d * max(es, 4)  # inputs, their gradients, fp32 copies
    if p in ("reference", "reference-compile"):
        work = 8 * B * N * 4  # fp32 dots, logits, one-hot (int64 then bool), logsumexp, their gradients
    elif p.startswith("torch-ce"):
        work = 4 * B * N * 4  # logits, log-softmax, their gradients
    elif p in ("st-mnrl", "st-mnrl-autocast"):
        work = 6 * B * N * 4
    elif p == "st-cached-mnrl":
        work = 6 * min(B, CACHED_MINI_BATCH) * N * 4 + 2 * rows * d * es
    elif p == "spherekit-cpu":
        from ..ops import cpu_budget

        work = 6 * min(B * N, cpu_budget.tile_elements()) * 4
    else:
        work = 0
    return inputs + work + (512 << 20)  # + the process (interpreter, torch, libraries)


def _inputs(task: dict, device: str):
    import torch
    import torch.nn.functional as F

    dtype = getattr(torch, task["dtype"])
    gen = torch.Generator().manual_seed(0)
    B, d, k = task["B"], task["d"], task["k"]

    def unit(*shape):
        x = F.normalize(torch.randn(*shape, generator=gen), dim=-1)
        return x.to(device=device, dtype=dtype).requires_grad_()

    q, c = unit(B, d), unit(B, d)
    h = unit(B, k, d) if k else None
    return q, c, h


def _make_loss(task: dict, q, c, h):
    """-> (loss closure, leaves whose .grad to clear, note, fwd closure override or None)."""
    import torch

    from .. import reference

    p, k = task["provider"], task["k"]
    leaves = [t for t in (q, c, h) if t is not None]
    if p == "reference":
        return (lambda: reference.info_nce(q, c, None, h, temperature=TEMPERATURE)), leaves, "", None
    if p == "reference-compile":
        torch._dynamo.reset()  # one compile per shape, never an automatic-dynamic or cache-limit fallback
        fn = torch.compile(reference.info_nce, dynamic=False)
        return (lambda: fn(q, c, None, h, temperature=TEMPERATURE)), leaves, "", None
    if p in ("torch-ce", "torch-ce-compile"):
        import torch.nn.functional as F

        target = torch.arange(q.shape[0], device=q.device)

        def plain(q, c):
            return F.cross_entropy(q @ c.T / TEMPERATURE, target)

        fn = plain if p == "torch-ce" else torch.compile(plain, dynamic=False)
        return (lambda: fn(q, c)), leaves, "", None
    if p in ("spherekit-cpu", "spherekit-triton"):
        from ..ops import info_nce

        backend = p.split("-", 1)[1]
        options = spherekit_options(task)
        return (lambda: info_nce(q, c, None, h, temperature=TEMPERATURE, backend=backend, **options)), leaves, \
            "", None
    note = f"hard negatives as {k}*B shared columns" if k else ""
    if p in ("st-mnrl", "st-mnrl-autocast"):
        from sentence_transformers.sentence_transformer.losses.multiple_negatives_ranking import (
            MultipleNegativesRankingLoss,
        )

        loss = MultipleNegativesRankingLoss(torch.nn.Identity(), scale=1.0 / TEMPERATURE)
        embeddings = [q, c] + [h[:, j] for j in range(k)]
        if p == "st-mnrl":
            return (lambda: loss.compute_loss_from_embeddings(embeddings, None)), leaves, note, None

        def autocast_loss():
            with torch.autocast(device_type=q.device.type, dtype=q.dtype):
                return loss.compute_loss_from_embeddings(embeddings, None)

        return autocast_loss, leaves, note, None
    if p == "st-cached-mnrl":
        from sentence_transformers.sentence_transformer.losses.cached_multiple_negatives_ranking import (
            CachedMultipleNegativesRankingLoss,
        )

        # a stand-in model: the loss only indexes model[0] (to reject StaticEmbedding) and never calls it
        loss = CachedMultipleNegativesRankingLoss(torch.nn.Sequential(torch.nn.Identity()), scale=1.0 / TEMPERATURE,
                                                  mini_batch_size=CACHED_MINI_BATCH)
        columns = [q, c] + [h[:, j] for j in range(k)]
        reps = [[t.detach().requires_grad_() for t in col.detach().split(CACHED_MINI_BATCH)] for col in columns]
        chunks = [t for col in reps for t in col]
        note = "; ".join(x for x in (note, f"mini_batch_size={CACHED_MINI_BATCH}") if x)

        def fwd():
            with torch.no_grad():
                return loss.calculate_loss(reps, None)

        return (lambda: loss.calculate_loss(reps, None, with_backward=True)), chunks, note, fwd
    raise ValueError(f"unknown provider {p!r}; choose from {PROVIDERS}")


def spherekit_options(task: dict) -> dict:
    """The task's launch options for spherekit.ops.info_nce (SPHEREKIT_OPTIONS); ValueError naming the option when
    the installed info_nce does not take it."""
    import inspect

    from ..ops import info_nce

    options = {k: task[k] for k in SPHEREKIT_OPTIONS if task.get(k) is not None}
    missing = sorted(set(options) - set(inspect.signature(info_nce).parameters))
    if missing:
        raise ValueError(f"spherekit.ops.info_nce takes no {', '.join(missing)} in this version")
    return options


def useful_flops(task: dict) -> int:
    """The products a fwd / bwd / fwd+bwd must do: PASSES x 2 B (N + k) d (hard negatives of st-* are in N)."""
    extra = 0 if task["provider"] in _ST else task["k"]
    return PASSES[task["mode"]] * 2 * task["B"] * (task["N"] + extra) * task["d"]


def prepare_call(task: dict, device: str):
    """A function making one untimed call of the task's measured step (a fwd+bwd: the forward, then the backward),
    its inputs made once: what a JIT capture (scripts/gpu_run.py's pre-compile) or a profile records."""
    q, c, h = _inputs(task, device)
    loss_fn, leaves, _, fwd_override = _make_loss(task, q, c, h)

    def call():
        if task["mode"] == "fwd":
            (fwd_override or loss_fn)()
        elif task["provider"] == "st-cached-mnrl":
            loss_fn()
        else:
            loss_fn().backward()
        for t in leaves:
            t.grad = None
    return call


def outputs_at(task: dict, device: str, rows: int = 2048) -> list:
    """The loss and its gradients of the task's provider at B = min(B, rows) (a launch option's check against the
    defaults' outputs in scripts/gpu_run.py's sweeps)."""
    import torch

    B = min(task["B"], rows)
    small = dict(task, B=B, N=n_candidates(task["provider"], B, task["k"]))
    q, c, h = _inputs(small, device)
    loss_fn, leaves, _, _ = _make_loss(small, q, c, h)
    loss = loss_fn()
    return [loss.detach()] + list(torch.autograd.grad(loss, leaves))


def run_task(task: dict, settings: H.Settings) -> dict:
    import torch

    if task["provider"] == "peak":
        from .ceilings import run_peak

        return run_peak(task, settings)
    q, c, h = _inputs(task, settings.device)
    loss_fn, leaves, note, fwd_override = _make_loss(task, q, c, h)

    def clear_grads():
        for t in leaves:
            t.grad = None

    mode = task["mode"]
    count = dict(count_flops=settings.count_flops)
    if mode == "fwd":
        if fwd_override is not None:
            note = "; ".join(x for x in (note, "no-grad forward") if x)
        result = H.measure(fwd_override or loss_fn, settings, **count)
    elif mode == "bwd":
        state = {}

        def setup():
            state["loss"] = loss_fn()

        result = H.measure(lambda: state.pop("loss").backward(), settings, setup=setup, teardown=clear_grads, **count)
    elif mode == "fwd+bwd":
        if task["provider"] == "st-cached-mnrl":
            step = loss_fn  # calculate_loss(..., with_backward=True) runs the backward itself
        else:
            def step():
                loss_fn().backward()
        result = H.measure(step, settings, teardown=clear_grads, **count)
    else:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    del q, c, h
    leaves.clear()
    if settings.device.startswith("cuda"):
        torch.cuda.empty_cache()
    result["note"] = "; ".join(x for x in (note, result.get("note", "")) if x)
    result["useful_flops"] = useful_flops(task)
    return result


# ------------------------------------------------------------------------------------------------
# reporting
# ------------------------------------------------------------------------------------------------


def format_table(rows: list[dict]) -> str:
    from .ceilings import peak_lines

    peaks = peak_lines(rows)
    rows = [r for r in rows if r["provider"] != "peak"]
    order = {p: i for i, p in enumerate(PROVIDERS)}
    rows = sorted(rows, key=lambda r: (int(r["d"]), int(r["k"]), MODES.index(r["mode"]), int(r["B"]),
                                       order.get(r["provider"], 99)))
    table = timing_table(f"{'d':>4} {'k':>2} {'mode':<8} {'B':>6} {'provider':<18} {'N':>7}", rows,
                         lambda r: f"{r['d']:>4} {r['k']:>2} {r['mode']:<8} {r['B']:>6} {r['provider']:<18} "
                                   f"{r['N']:>7}",
                         lambda r: (r["d"], r["k"], r["mode"], r["B"]))
    if any(int(r["k"]) > 0 for r in rows) and any(r["provider"] in _ST for r in rows):
        table += ("\nnote: at k > 0 the math differs: spherekit and the reference score each query against its own k "
                  "hard negatives (a BCE term, N = B columns), sentence-transformers appends them as k*B columns "
                  "shared by every query (N = B(1 + k)). Like-for-like rows: spherekit vs the reference at every k, "
                  "spherekit vs st-* at k = 0 only.")
    return "\n".join(peaks + [table])


def _find(rows, provider, B, d, dtype, k=0, mode="fwd+bwd", options=False):
    """The last ok-or-not row of (provider, B, d, dtype, k, mode); launch-option rows (the sweeps) only when
    options is True."""
    for r in reversed(rows):
        if r["provider"] == "peak" or (not options and any(r.get(o) not in (None, "") for o in SPHEREKIT_OPTIONS)):
            continue
        if (r["provider"], int(r["B"]), int(r["d"]), int(r["k"]), r["mode"], r["dtype"]) == \
                (provider, B, d, k, mode, dtype):
            return r
    return None


def _ok(row) -> bool:
    return row is not None and row["status"] == "ok"


GOAL_SHAPE = dict(B=16384, d=768, dtype="bfloat16")


def gpu_goal_checks(rows: list[dict], B: int = GOAL_SHAPE["B"], d: int = GOAL_SHAPE["d"],
                    dtype: str = GOAL_SHAPE["dtype"]) -> list[str]:
    """The GPU goals of spherekit-triton's fwd+bwd at (B, d, dtype), k = 0, against sentence-transformers' MNRL
    under bf16 autocast (what its trainer runs with bf16=True), in device time where measured (the line names the
    time it uses), with the matmul ceiling measured in the same run (never a datasheet figure)."""
    from .ceilings import peak_value
    from .results import goal_time

    shape = f"B={B} d={d} {dtype} fwd+bwd"
    sk = _find(rows, "spherekit-triton", B, d, dtype)
    if not _ok(sk):
        return [f"N/A   GPU goals: spherekit-triton {shape} not measured ok in this run"]
    t, which = goal_time(sk)
    out = []
    amp = _find(rows, "st-mnrl-autocast", B, d, dtype)
    if _ok(amp):
        t_amp, _ = goal_time(amp, which)
        mem = number(sk, "peak_extra_mib") / max(number(amp, "peak_extra_mib"), 1e-9)
        out.append(f"{'PASS' if t_amp / t >= 3 else 'FAIL'}  GPU time, {shape}: spherekit-triton {t:.3f} ms vs "
                   f"st-mnrl-autocast {t_amp:.3f} ms ({which}) = {t_amp / t:.2f}x faster (goal >= 3x)")
        out.append(f"{'PASS' if mem <= 0.02 else 'FAIL'}  GPU memory, {shape}: spherekit-triton "
                   f"{number(sk, 'peak_extra_mib'):.1f} MiB vs st-mnrl-autocast {number(amp, 'peak_extra_mib'):.1f} "
                   f"MiB = {100 * mem:.2f}% (goal <= 2%)")
    else:
        out.append(f"N/A   GPU time and memory vs st-mnrl-autocast: not measured ok at {shape}")
    useful = 3 * 2.0 * B * B * d
    executed = number(sk, "matmul_flops")
    executed_text = (f"executed in aten matmuls (profiler): {executed / (2.0 * B * B * d):.2f} x 2BNd"
                     if executed == executed else "executed FLOPs not counted")
    peak = peak_value(rows, "bf16_matmul")
    tflops = useful / (t * 1e-3) / 1e12
    if peak:
        out.append(f"{'PASS' if tflops >= 0.5 * peak else 'FAIL'}  GPU useful FLOPs: 3 x 2BNd / {which} = "
                   f"{tflops:.0f} TFLOP/s = {100 * tflops / peak:.0f}% of the bf16 matmul ceiling measured in this "
                   f"run ({peak:.0f} TFLOP/s) (goal >= 50%); {executed_text}")
    else:
        out.append(f"N/A   GPU useful FLOPs {tflops:.0f} TFLOP/s (3 x 2BNd / {which}): no bf16_matmul ceiling "
                   f"measured in this run; {executed_text}")
    for other, what in (("st-mnrl", "MNRL with fp32 products"), ("torch-ce-compile", "torch.compile of the plain loss"),
                        ("reference", "the materialising reference")):
        r = _find(rows, other, B, d, dtype)
        if _ok(r):
            t_other, _ = goal_time(r, which)
            out.append(f"INFO  vs {other} ({what}): {t_other:.3f} ms = {t_other / t:.2f}x; peak extra memory "
                       f"{number(r, 'peak_extra_mib'):.0f} MiB")
    out += _roofline_lines(rows, sk, t, which)
    return out


def _roofline_lines(rows, sk, t, which) -> list[str]:
    """measured / predicted of the goal row at this run's ceilings (spherekit.bench.roofline)."""
    from . import roofline
    from .ceilings import peak_value

    copy, matmul = peak_value(rows, "copy"), peak_value(rows, "bf16_matmul")
    if which != "device time" or not (copy and matmul) or (int(sk["B"]), int(sk["d"])) != (
            roofline.INFO_NCE["B"], roofline.INFO_NCE["d"]):
        return []
    ws = sk.get("workspace_bytes")
    key = (f"info_nce ws={int(ws) >> 20}MiB dc={sk.get('dc_accumulator') or 'input'}" if ws
           else f"info_nce ws={roofline.INFO_NCE_GOAL_WORKSPACE_MIB}MiB dc=input")
    try:
        predicted = roofline.predict(key, roofline.Ceilings(copy, copy, matmul, "this run"))
    except KeyError:
        return []
    return [f"INFO  measured / predicted: {t:.3f} / {predicted:.3f} ms = {t / predicted:.2f} (roofline row "
            f"'{key}' at this run's ceilings)"]


def goal_checks(rows: list[dict], device: str) -> list[str]:
    """The issue's goals as PASS / FAIL / N/A lines, computed from measured rows."""
    if device != "cpu":
        return gpu_goal_checks(rows)
    out = []
    ref = _find(rows, "reference", 16384, 384, "float32")
    sk = _find(rows, "spherekit-cpu", 16384, 384, "float32")
    if _ok(ref) and _ok(sk):
        mem = number(sk, "peak_extra_mib") / max(number(ref, "peak_extra_mib"), 1e-9)
        tim = number(sk, "median_ms") / number(ref, "median_ms")
        out.append(f"{'PASS' if mem <= 1 / 8 else 'FAIL'}  CPU memory, B=16384 d=384 fwd+bwd: spherekit-cpu "
                   f"{number(sk, 'peak_extra_mib'):.0f} MiB vs reference {number(ref, 'peak_extra_mib'):.0f} MiB "
                   f"= 1/{1 / max(mem, 1e-12):.1f} (goal <= 1/8)")
        out.append(f"{'PASS' if tim <= 1.3 else 'FAIL'}  CPU time, B=16384 d=384 fwd+bwd: spherekit-cpu "
                   f"{number(sk, 'median_ms'):.0f} ms vs reference {number(ref, 'median_ms'):.0f} ms "
                   f"= {tim:.2f}x (wall time; goal <= 1.3x)")
    else:
        out.append("N/A   CPU memory/time goals at B=16384 d=384: reference and spherekit-cpu fwd+bwd not both "
                   "measured ok in this run (preset cpu-goal)")
    ref = _find(rows, "reference", 65536, 384, "float32")
    sk = _find(rows, "spherekit-cpu", 65536, 384, "float32")
    if sk is None:
        out.append("N/A   B=65536 d=384: spherekit-cpu not run in this run (preset cpu-goal)")
    else:
        ref_status = ref["status"] if ref else "not run"
        ok = sk["status"] == "ok" and ref_status in ("oom", "skipped", "timeout")
        what = f"{number(sk, 'median_ms') / 1e3:.1f} s" if sk["status"] == "ok" else sk["status"]
        out.append(f"{'PASS' if ok else 'FAIL'}  B=65536 d=384 fwd+bwd: spherekit-cpu {what}, "
                   f"reference {ref_status} (goal: runs where the reference cannot)")
    return out


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------


def run(preset: str = "cpu-small", out: str | Path = "results/bench", repeats: int | None = None,
        providers: list[str] | None = None, isolate: str = "provider", mem_limit_gib: float | None = None,
        budget_s: float | None = None, timeout_s: float = 1800.0,
        plot: bool = True, progress: bool = True, rehearse: bool = False, background_load: int = 0) -> int:
    """Run a preset, append rows to <out>/contrastive.csv, print the table and goal checks, plot.
    background_load: that many processes spin on the CPU during the run (a fixed load; each row's note says so)."""
    planned = H.plan_run(PRESETS, preset, providers, PROVIDERS, build_tasks, repeats=repeats, budget_s=budget_s,
                         timeout_s=timeout_s, isolate=isolate, mem_limit_gib=mem_limit_gib, rehearse=rehearse,
                         shrink=rehearsal)
    if planned is None:
        return 2
    spec, settings, tasks = planned
    csv_path, rows, emit = H.start_run(FAMILY, preset, spec, settings, tasks, out, params=PARAMS, metrics=METRICS)
    device = "cpu" if spec.device == "cpu" else "cuda"
    with H.background_load(background_load):
        H.run_and_report(MODULE, tasks, settings, H.noting(emit, H.load_note(background_load)), rows, csv_path,
                         table=format_table, goals=lambda rows: goal_checks(rows, device),
                         progress=progress)
    if plot:
        from . import plot as _plot

        for path in _plot.plot(FAMILY, out):
            print(f"plot: {path}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `spherekit bench contrastive` (run_from_args passes them to run)."""
    H.add_run_arguments(parser, PRESETS, "cpu-small", PROVIDERS, out_help="the CSV and PNGs", rehearsal=True)
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNGs")
    parser.add_argument("--background-load", type=int, default=0, metavar="N",
                        help="N processes spin on the CPU during the run: the same measurements on a busy machine")


def run_from_args(args: argparse.Namespace) -> int:
    return run(**H.run_options(args), plot=not args.no_plot,
               background_load=args.background_load)


main = H.family_entry(__name__)


if __name__ == "__main__":
    raise SystemExit(main())
