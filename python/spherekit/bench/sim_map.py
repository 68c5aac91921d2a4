"""Benchmark of the token-similarity-map family (MaxSim, "Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351)'s F1): providers side by side in one run.

Workloads (a registry, WORKLOADS; more can be added with register_workload, e.g. an F4 end-to-end workload):
    rerank  one query of m=32 tokens against k documents of n=180 tokens (all valid), h=128: scores (1, k),
            forward only under torch.no_grad(). Tokens arrive unit-normalised and no provider normalises
            (normalize=False), as with a stored ColBERT-style index.
    train   B=64 queries, each with its own k=32 candidates (the per-query (B, K, n, h) layout), m=32, n=180,
            h=128, query lengths uniform in [m/2, m], documents in [n/2, n] (padding masked);
            forward + backward of a cross-entropy over each query's candidates (target 0, scale 20); every
            provider normalises the raw tokens with autograd.

Providers:
    einsum               PyLate-style: torch.einsum("ash,bth->abst") (rerank) / ("bsh,bkth->bkst") (train)
                         materialises the 4-D token-similarity tensor, then masked max over t, masked mean
    bmm                  the paper code's map construction: one (m x n) map per (query, document) pair from
                         torch.bmm over the pairs (queries expanded), then masked max and mean
    spherekit-<backend>  spherekit.ops.maxsim(..., backend=<backend>) for cpu (chunked torch, any device),
                         triton (CUDA) and reference (the materialising oracle)
    spherekit-ragged-<backend>  spherekit.ops.maxsim_ragged over the documents packed without padding
                         (rerank only; cpu, or cuda with spherekit._cuda)

    peak                 not the op: the copy bandwidth (spherekit.bench.ceilings), measured first in the GPU presets

Presets: tiny (tests), cpu (rerank k = 1,000 and 10,000, train; fp32), gpu (the same shapes and rerank
k = 100,000 in bf16 on CUDA), gpu-lease (the GPU goal's rerank k = 10,000 and the train workload: einsum,
spherekit-triton and the ragged CUDA kernel, bf16; scripts/gpu_check.sh). --rehearse runs a preset's grid on
CPU at tiny sizes (rehearsal()). Rows are appended atomically to <out>/sim_map.csv (spherekit.bench.results.COLUMNS;
params: workload, B = queries, k = candidates per query, m / n = query / document tokens, d = hidden size h).
Time: median and 20/80% quantiles (wall, and device time from CUDA events on a GPU); memory: peak extra memory of
one call (spherekit.bench.memory). Rerank rows also time BACK_TO_BACK calls launched one after the other with one
synchronisation (metrics back_to_back_ms, back_to_back_wall_ms: a server's throughput) and report gb_per_s, the
documents and masks read per second of device time (wall time on CPU). See spherekit.bench._harness for how each row
is measured.

Goals (printed as PASS / FAIL / N/A): CPU, rerank k=10,000: spherekit-cpu peak memory >= 20x below einsum's and
its median time no slower; GPU, rerank k=10,000: spherekit-triton >= 5x faster than the masked einsum in device time
and >= 4x in wall time, with the back-to-back ratio and measured / predicted (spherekit.bench.roofline at this run's
copy bandwidth) beside them.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from . import _harness as H
from .results import COLUMNS as RESULT_COLUMNS
from .results import number, timing_table

FAMILY = "sim_map"
MODULE = "spherekit.bench.sim_map"
COLUMNS = RESULT_COLUMNS  # deprecated alias: every family writes spherekit.bench.results.COLUMNS
PARAMS = ("workload", "B", "k", "m", "n", "d", "elements")  # the params cell: queries, candidates per query,
# tokens, width; peak rows: elements per array
METRICS = ("gb_per_s",)
CE_SCALE = 20.0
BACK_TO_BACK = 50  # rerank calls launched back to back (GPU)
PEAKS = (("copy", 256 << 20),)


# ------------------------------------------------------------------------------------------------
# workloads and providers
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """make_inputs(task, device) -> dict of tensors; providers[name](task, inputs) -> a step returning the
    output (the scores, or the loss for fwd+bwd modes); predict_bytes(task) -> process memory bound (CPU skips);
    needs(provider) -> None or why the provider cannot run on a device ("cuda" / "cpu")."""

    name: str
    modes: tuple[str, ...]
    make_inputs: Callable[[dict, str], dict]
    providers: dict[str, Callable[[dict, dict], Callable]]
    predict_bytes: Callable[[dict], int]


WORKLOADS: dict[str, Workload] = {}


def register_workload(workload: Workload) -> None:
    WORKLOADS[workload.name] = workload


def _dtype(task):
    import torch

    return getattr(torch, task["dtype"])


def _masked_maxsim(sims, q_mask, d_mask):
    """sims (..., m, n) with masks broadcastable to (..., 1, n) and (..., m): masked max over n, mean over m."""
    best = sims.masked_fill(~d_mask, float("-inf")).amax(-1)
    qm = q_mask.to(best.dtype)
    return (best * qm).sum(-1) / qm.sum(-1)


def _rerank_inputs(task: dict, device: str) -> dict:
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    m, n, h, k = task["m"], task["n"], task["d"], task["k"]
    dtype = _dtype(task)
    q = F.normalize(torch.randn(1, m, h, generator=gen), dim=-1).to(device=device, dtype=dtype)
    d = torch.empty(k, n, h, dtype=dtype, device=device)
    for start in range(0, k, 1000):  # fill in slices: no fp32 copy of the whole corpus
        block = torch.randn(min(1000, k - start), n, h, generator=gen)
        d[start:start + block.shape[0]] = F.normalize(block, dim=-1).to(dtype)
    out = dict(q=q, q_mask=torch.ones(1, m, dtype=torch.bool, device=device), d=d,
               d_mask=torch.ones(k, n, dtype=torch.bool, device=device))
    if task["provider"].startswith("spherekit-ragged"):
        out["docs"] = d.view(k * n, h)  # every token valid: the packed layout is a view, no copy
        out["offsets"] = torch.arange(k + 1, device=device) * n
    return out


def _rerank_providers() -> dict:
    def einsum(task, x):
        import torch

        q, d = x["q"], x["d"]
        return lambda: _masked_maxsim(torch.einsum("ash,bth->abst", q, d), x["q_mask"][:, None, :],
                                      x["d_mask"][None, :, None, :])

    def bmm(task, x):
        import torch

        q, d = x["q"], x["d"]

        def step():
            sims = torch.bmm(q.expand(d.shape[0], -1, -1), d.transpose(1, 2))  # (k, m, n), one map per pair
            return _masked_maxsim(sims, x["q_mask"], x["d_mask"][:, None, :])[None]

        return step

    def spherekit(backend):
        def make(task, x):
            from ..ops import maxsim

            return lambda: maxsim(x["q"], x["d"], q_mask=x["q_mask"], d_mask=x["d_mask"], normalize=False,
                                  reduction="mean", backend=backend)
        return make

    def ragged(backend):
        def make(task, x):
            from ..ops import maxsim_ragged

            return lambda: maxsim_ragged(x["q"][0], x["docs"], x["offsets"], q_mask=x["q_mask"][0], normalize=False,
                                         reduction="mean", backend=backend)[None]
        return make

    out = {"einsum": einsum, "bmm": bmm}
    out.update({f"spherekit-{b}": spherekit(b) for b in ("cpu", "triton", "reference")})
    out.update({f"spherekit-ragged-{b}": ragged(b) for b in ("cpu", "cuda")})
    return out


def _rerank_bytes(task: dict) -> int:
    k, m, n, h, p = task["k"], task["m"], task["n"], task["d"], task["provider"]
    es = 2 if task["dtype"] in ("float16", "bfloat16") else 4
    inputs = k * n * h * es + k * n
    sims = k * m * n * 4
    work = {"einsum": 2 * sims, "bmm": 2 * sims, "spherekit-reference": 3 * sims}.get(p, 64 << 20)
    return inputs + work + (512 << 20)


def _train_inputs(task: dict, device: str) -> dict:
    import torch

    gen = torch.Generator().manual_seed(0)
    B, K, m, n, h = task["B"], task["k"], task["m"], task["n"], task["d"]
    dtype = _dtype(task)
    q = torch.randn(B, m, h, generator=gen).to(device=device, dtype=dtype).requires_grad_()
    d = torch.randn(B, K, n, h, generator=gen).to(device=device, dtype=dtype).requires_grad_()
    q_len = torch.randint(max(1, m // 2), m + 1, (B,), generator=gen)
    d_len = torch.randint(max(1, n // 2), n + 1, (B, K), generator=gen)
    q_mask = (torch.arange(m) < q_len[:, None]).to(device)
    d_mask = (torch.arange(n) < d_len[..., None]).to(device)
    return dict(q=q, q_mask=q_mask, d=d, d_mask=d_mask, leaves=[q, d])


def _ce(scores):
    import torch
    import torch.nn.functional as F

    target = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
    return F.cross_entropy(scores.float() * CE_SCALE, target)


def _train_providers() -> dict:
    def einsum(task, x):
        import torch
        import torch.nn.functional as F

        def step():
            qn, dn = F.normalize(x["q"], dim=-1), F.normalize(x["d"], dim=-1)
            sims = torch.einsum("bsh,bkth->bkst", qn, dn)
            return _ce(_masked_maxsim(sims, x["q_mask"][:, None, :], x["d_mask"][:, :, None, :]))

        return step

    def bmm(task, x):
        import torch
        import torch.nn.functional as F

        def step():
            B, K, n, h = x["d"].shape
            m = x["q"].shape[1]
            qn = F.normalize(x["q"], dim=-1)[:, None].expand(B, K, m, h).reshape(B * K, m, h)
            dn = F.normalize(x["d"], dim=-1).reshape(B * K, n, h)
            sims = torch.bmm(qn, dn.transpose(1, 2))  # one (m x n) map per (query, candidate) pair
            qm = x["q_mask"][:, None].expand(B, K, m).reshape(B * K, m)
            return _ce(_masked_maxsim(sims, qm, x["d_mask"].reshape(B * K, 1, n)).view(B, K))

        return step

    def spherekit(backend):
        def make(task, x):
            from ..ops import maxsim

            return lambda: _ce(maxsim(x["q"], x["d"], q_mask=x["q_mask"], d_mask=x["d_mask"], normalize=True,
                                      reduction="mean", backend=backend))
        return make

    out = {"einsum": einsum, "bmm": bmm}
    out.update({f"spherekit-{b}": spherekit(b) for b in ("cpu", "triton", "reference")})
    return out


def _train_bytes(task: dict) -> int:
    B, K, m, n, h = task["B"], task["k"], task["m"], task["n"], task["d"]
    es = 2 if task["dtype"] in ("float16", "bfloat16") else 4
    tokens = (B * m + B * K * n) * h
    inputs = 4 * tokens * max(es, 4)  # tokens, gradients, normalised copies and their gradients
    sims = B * K * m * n * 4
    work = {"einsum": 5 * sims, "bmm": 5 * sims, "spherekit-reference": 6 * sims}.get(task["provider"], 128 << 20)
    return inputs + work + (512 << 20)


register_workload(Workload("rerank", ("fwd",), _rerank_inputs, _rerank_providers(), _rerank_bytes))
register_workload(Workload("train", ("fwd+bwd",), _train_inputs, _train_providers(), _train_bytes))
PROVIDER_ORDER = ("einsum", "bmm", "spherekit-reference", "spherekit-cpu", "spherekit-triton",
                  "spherekit-ragged-cpu", "spherekit-ragged-cuda")


# ------------------------------------------------------------------------------------------------
# presets
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    workload: str
    providers: tuple[str, ...]
    B: tuple[int, ...]
    k: tuple[int, ...]
    m: int = 32
    n: int = 180
    d: int = 128


@dataclass(frozen=True)
class Preset(H.PresetBase):
    dtype: str
    blocks: tuple[Block, ...]
    peaks: tuple[tuple[str, int], ...] = ()  # (ceiling, size) measured first (spherekit.bench.ceilings)


_CPU_RERANK = ("einsum", "bmm", "spherekit-reference", "spherekit-cpu", "spherekit-ragged-cpu")
_CPU_TRAIN = ("einsum", "bmm", "spherekit-reference", "spherekit-cpu")
PRESETS = {
    "tiny": Preset("cpu", "float32", (Block("rerank", _CPU_RERANK, (1,), (50,), m=8, n=12, d=16),
                                      Block("train", _CPU_TRAIN, (4,), (3,), m=8, n=12, d=16)),
                   repeats=1, warmup=1, min_repeats=1, budget_s=5.0),
    "cpu": Preset("cpu", "float32", (Block("rerank", _CPU_RERANK, (1,), (1000, 10000)),
                                     Block("train", _CPU_TRAIN, (64,), (32,))),
                  repeats=5, warmup=1, budget_s=30.0),
    "gpu": Preset("cuda", "bfloat16", (
        Block("rerank", ("einsum", "bmm", "spherekit-reference", "spherekit-cpu", "spherekit-triton",
                         "spherekit-ragged-cpu", "spherekit-ragged-cuda"), (1,), (1000, 10000, 100000)),
        Block("train", ("einsum", "bmm", "spherekit-reference", "spherekit-cpu", "spherekit-triton"), (64,), (32,)),
    ), repeats=20, warmup=3, budget_s=20.0, peaks=PEAKS),
    "gpu-lease": Preset("cuda", "bfloat16", (
        Block("rerank", ("einsum", "spherekit-triton", "spherekit-ragged-cuda"), (1,), (10000,)),
        Block("train", ("einsum", "spherekit-triton"), (64,), (32,)),
    ), repeats=10, warmup=2, budget_s=2.0, peaks=PEAKS),
}


def rehearsal(preset: Preset) -> Preset:
    """The preset's grid (workloads, providers) on CPU in fp32 at m = 8, n = 12, h = 16, at most 50 candidates."""
    blocks = tuple(replace(b, B=tuple(min(x, 4) for x in b.B), k=tuple(min(x, 50) for x in b.k), m=8, n=12, d=16)
                   for b in preset.blocks)
    return replace(preset, device="cpu", dtype="float32", blocks=blocks, repeats=1, warmup=1, min_repeats=1,
                   budget_s=1.0, peaks=tuple((name, 1 << 20) for name, _ in preset.peaks))


def build_tasks(preset: Preset, providers: list[str] | None = None) -> list[dict]:
    """Tasks of a preset: its peaks first, then grouped by provider (one worker each), then by workload and size."""
    from .ceilings import peak_task

    peaks = [peak_task(FAMILY, name, size) for name, size in preset.peaks if not providers or "peak" in providers]
    tasks = []
    for block in preset.blocks:
        workload = WORKLOADS[block.workload]
        for p, B, k, mode in itertools.product(block.providers, block.B, block.k, workload.modes):
            if providers and p not in providers:
                continue
            tasks.append(dict(family=FAMILY, workload=block.workload, provider=p, mode=mode, B=B, k=k, m=block.m,
                              n=block.n, d=block.d, dtype=preset.dtype))
    order = {p: i for i, p in enumerate(PROVIDER_ORDER)}
    return peaks + sorted(tasks, key=lambda t: (order.get(t["provider"], len(order)), t["provider"], t["workload"],
                                                t["k"]))


# ------------------------------------------------------------------------------------------------
# the family interface used by the harness: static_skip, predict_bytes, run_task
# ------------------------------------------------------------------------------------------------


def static_skip(task: dict, settings: H.Settings) -> str | None:
    if task["provider"] == "peak":
        return None
    cuda = settings.device.startswith("cuda")
    if task["provider"] == "spherekit-triton" and (reason := H.needs_cuda("spherekit-triton", settings, triton=True)):
        return reason
    if task["provider"] == "spherekit-ragged-cuda":
        if not cuda:
            return "spherekit-ragged-cuda needs CUDA tensors"
        from .. import _backend

        if not hasattr(_backend.cuda_extension(), "maxsim_ragged"):
            return "spherekit._cuda is not built with maxsim_ragged"
    if task["provider"] not in WORKLOADS[task["workload"]].providers:
        return f"no {task['provider']} provider for the {task['workload']} workload"
    return None


def predict_bytes(task: dict) -> int:
    if task["provider"] == "peak":
        return 2 * task["elements"] * 4 + (512 << 20)
    return WORKLOADS[task["workload"]].predict_bytes(task)


def rerank_bytes(task: dict) -> int:
    """Bytes a rerank call must read: the documents (k n h) and their mask (k n bools)."""
    es = 2 if task["dtype"] in ("float16", "bfloat16") else 4
    return task["k"] * task["n"] * (task["d"] * es + 1)


def make_step(task: dict, device: str) -> tuple[Callable, list]:
    """-> (the measured step: returns the scores (fwd) or the loss (fwd+bwd), the tensors whose .grad to clear)."""
    workload = WORKLOADS[task["workload"]]
    inputs = workload.make_inputs(task, device)
    return workload.providers[task["provider"]](task, inputs), inputs.get("leaves", [])


def prepare_call(task: dict, device: str):
    """A function making one untimed call of the task's measured step, its inputs made once (scripts/gpu_run.py's
    pre-compile capture and profile)."""
    import torch

    step, leaves = make_step(task, device)

    def call():
        if task["mode"] == "fwd":
            with torch.no_grad():
                step()
        else:
            step().backward()
        for t in leaves:
            t.grad = None
    return call


def outputs_at(task: dict, device: str, docs: int = 1000) -> list:
    """The scores (rerank) or the loss and its gradients (train) of the task's provider with at most `docs`
    candidates (a launch option's check against the defaults' outputs in scripts/gpu_run.py's sweeps)."""
    import torch

    small = dict(task, k=min(task["k"], docs))
    step, leaves = make_step(small, device)
    if task["mode"] == "fwd":
        with torch.no_grad():
            return [step()]
    loss = step()
    return [loss.detach()] + list(torch.autograd.grad(loss, leaves))


def run_task(task: dict, settings: H.Settings) -> dict:
    import torch

    if task["provider"] == "peak":
        from .ceilings import run_peak

        return run_peak(task, settings)
    step, leaves = make_step(task, settings.device)

    def clear_grads():
        for t in leaves:
            t.grad = None

    if task["mode"] == "fwd":
        def measured():
            with torch.no_grad():
                return step()
        calls = (BACK_TO_BACK if settings.device.startswith("cuda") else 2) if task["workload"] == "rerank" else 0
        result = H.measure(measured, settings, back_to_back=calls)
        if task["workload"] == "rerank":
            from .results import goal_time

            result["gb_per_s"] = rerank_bytes(task) / (goal_time(result)[0] * 1e-3) / 1e9
    elif task["mode"] == "fwd+bwd":
        result = H.measure(lambda: step().backward(), settings, teardown=clear_grads)
    else:
        raise ValueError(f"mode must be 'fwd' or 'fwd+bwd', got {task['mode']!r}")
    del step
    leaves.clear()
    if settings.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return result


# ------------------------------------------------------------------------------------------------
# reporting
# ------------------------------------------------------------------------------------------------


def format_table(rows: list[dict]) -> str:
    from .ceilings import peak_lines

    peaks = peak_lines(rows)
    order = {p: i for i, p in enumerate(PROVIDER_ORDER)}
    rows = sorted((r for r in rows if r["provider"] != "peak"),
                  key=lambda r: (r["workload"], int(r["k"]), order.get(r["provider"], 99)))
    return "\n".join(peaks + [timing_table(
        f"{'workload':<8} {'B':>3} {'k':>6} {'mode':<8} {'provider':<22}", rows,
        lambda r: f"{r['workload']:<8} {r['B']:>3} {r['k']:>6} {r['mode']:<8} {r['provider']:<22}",
        lambda r: (r["workload"], r["k"]))])


def _find(rows, provider, workload, k):
    for r in reversed(rows):
        if r["provider"] != "peak" and (r["provider"], r["workload"], int(r["k"])) == (provider, workload, k) \
                and r["status"] == "ok":
            return r
    return None


def gpu_goal_checks(rows: list[dict], k: int = 10000) -> list[str]:
    """The GPU goals of the rerank workload: spherekit-triton >= 5x the masked einsum in device time and >= 4x in
    wall time; the back-to-back ratio and measured / predicted beside them."""
    from .ceilings import peak_value
    from .results import goal_time

    ein, sk = _find(rows, "einsum", "rerank", k), _find(rows, "spherekit-triton", "rerank", k)
    if not (ein and sk):
        return [f"N/A   GPU goals, rerank k={k}: einsum and spherekit-triton not both measured ok in this run"]
    out = []
    for which, goal in (("device time", 5), ("wall time", 4)):
        t_sk, t_ein = goal_time(sk, which)[0], goal_time(ein, which)[0]
        if t_sk != t_sk or t_ein != t_ein:
            out.append(f"N/A   GPU {which}, rerank 1 x {k} docs: not measured")
            continue
        out.append(f"{'PASS' if t_ein / t_sk >= goal else 'FAIL'}  GPU {which}, rerank 1 x {k} docs: spherekit-triton "
                   f"{t_sk:.3f} ms vs the masked einsum {t_ein:.3f} ms = {t_ein / t_sk:.1f}x faster (goal >= {goal}x)")
    b_sk, b_ein = number(sk, "back_to_back_ms"), number(ein, "back_to_back_ms")
    if b_sk == b_sk and b_ein == b_ein:
        out.append(f"INFO  back to back ({int(number(sk, 'back_to_back_calls'))} calls, one sync, device time per "
                   f"call): spherekit-triton {b_sk:.3f} ms vs einsum {b_ein:.3f} ms = {b_ein / b_sk:.1f}x; "
                   f"{1e3 / b_sk * k:,.0f} documents/s")
    copy = peak_value(rows, "copy")
    if copy and int(sk["k"]) == 10000 and int(sk["n"]) == 180 and int(sk["d"]) == 128 and int(sk["m"]) == 32:
        from . import roofline

        ceil = roofline.Ceilings(copy, copy, float("inf"), "this run")
        for r, key in ((sk, "maxsim rerank"), (ein, "maxsim rerank einsum")):
            t, predicted = goal_time(r, "device time")[0], roofline.predict(key, ceil)
            out.append(f"INFO  measured / predicted, {r['provider']}: {t:.3f} / {predicted:.3f} ms = "
                       f"{t / predicted:.2f} ({number(r, 'gb_per_s'):.0f} GB/s of documents vs the copy bandwidth "
                       f"{copy:.0f} GB/s measured in this run)")
    return out


def goal_checks(rows: list[dict], device: str) -> list[str]:
    """The issue's goals as PASS / FAIL / N/A lines, computed from measured rows."""
    if device != "cpu":
        return gpu_goal_checks(rows)
    k = 10000
    ein, sk = _find(rows, "einsum", "rerank", k), _find(rows, "spherekit-cpu", "rerank", k)
    if not (ein and sk):
        return [f"N/A   CPU goals, rerank k={k}: einsum and spherekit-cpu not both measured ok (preset cpu)"]
    mem = number(ein, "peak_extra_mib") / max(number(sk, "peak_extra_mib"), 1e-9)
    tim = number(sk, "median_ms") / number(ein, "median_ms")
    return [
        f"{'PASS' if mem >= 20 else 'FAIL'}  CPU memory, rerank 1 x {k} docs: spherekit-cpu "
        f"{number(sk, 'peak_extra_mib'):.1f} MiB vs einsum {number(ein, 'peak_extra_mib'):.1f} MiB = "
        f"{mem:.1f}x less (goal >= 20x)",
        f"{'PASS' if tim <= 1.0 else 'FAIL'}  CPU time, rerank 1 x {k} docs: spherekit-cpu "
        f"{number(sk, 'median_ms'):.0f} ms vs einsum {number(ein, 'median_ms'):.0f} ms = {tim:.2f}x "
        "(wall time; goal <= 1x)",
    ]


# ------------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------------


def provider_names() -> list[str]:
    """Every provider of every registered workload, and "peak", sorted."""
    return sorted({p for w in WORKLOADS.values() for p in w.providers} | {"peak"})


def run(preset: str = "cpu", out: str | Path = "results/bench", repeats: int | None = None,
        providers: list[str] | None = None, isolate: str = "provider", mem_limit_gib: float | None = None,
        budget_s: float | None = None, timeout_s: float = 1800.0, progress: bool = True,
        rehearse: bool = False) -> int:
    """Run a preset, append rows to <out>/sim_map.csv, print the table and the goal checks."""
    planned = H.plan_run(PRESETS, preset, providers, provider_names(), build_tasks, repeats=repeats, budget_s=budget_s,
                         timeout_s=timeout_s, isolate=isolate, mem_limit_gib=mem_limit_gib, rehearse=rehearse,
                         shrink=rehearsal)
    if planned is None:
        return 2
    spec, settings, tasks = planned
    csv_path, rows, emit = H.start_run(FAMILY, preset, spec, settings, tasks, out, params=PARAMS, metrics=METRICS)
    device = "cpu" if spec.device == "cpu" else "cuda"
    H.run_and_report(MODULE, tasks, settings, emit, rows, csv_path, table=format_table,
                     goals=lambda rows: goal_checks(rows, device), progress=progress)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `spherekit bench sim-map` (run_from_args passes them to run)."""
    H.add_run_arguments(parser, PRESETS, "cpu", provider_names(), rehearsal=True)


def run_from_args(args: argparse.Namespace) -> int:
    return run(**H.run_options(args))


main = H.family_entry(__name__)


if __name__ == "__main__":
    raise SystemExit(main())
