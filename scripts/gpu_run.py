"""The prepared GPU run (issue 57): one in-process script that measures what the GPU goals need and writes each row
the moment it is measured, inside one 10-minute device call (internal deadline --deadline-s, 500 s), resumable in a
second call.

    python3 scripts/gpu_run.py [--out DIR] [--deadline-s 500] [--steps a,b] [--resume DIR] [--work W]
    python scripts/gpu_run.py --rehearse     # no GPU: CPU, tiny sizes, the Triton interpreter (CI, the tests)

Steps, in order (STEPS):
  build        scripts/gpu_check.py --steps env,build: spherekit with its CUDA extension into <work>/site (skipped when
               it is there; when rehearsing, the installed spherekit is used); <work>/site then goes first on sys.path
               and every later step runs in this one process (no worker process per provider)
  env          the GPU, the versions and the clocks at the start (rows of family "env"; the end's clocks come last)
  precompile   every Triton launch the later steps make (the goal rows and each sweep candidate) recorded without
               running (benches/triton_resources.py), then compiled in parallel, one process per core, into Triton's
               cache, so the measurements' first calls load kernels instead of compiling them
  correctness  the changed ops against their fp64 oracles under the project's rule (tests/_oracle.py: error <= 2x the
               same-precision torch computation's, plus a floor): info_nce with each dc accumulator, maxsim (rerank,
               no grad; train, fwd+bwd), geodesic_residual on each GPU backend; an op that fails has its later rows
               skipped (status skipped, the failure in the note)
  ceilings     copy, triad and bf16 matmul, each named apart (spherekit.bench.ceilings): what the goal lines divide by
  goals        the goal rows: InfoNCE fwd+bwd B = N = 16,384, d = 768 bf16 (spherekit-triton, MNRL with fp32 products
               and under bf16 autocast, the materialising reference, torch.compile of the plain loss); MaxSim rerank
               1 x 10,000 x 180 tokens, h = 128 (einsum, spherekit-triton, the ragged CUDA kernel; back-to-back
               throughput) and its train step; nGPT fwd+bwd 65,536 x 4,096 (eager, torch.compile, triton, cuda, auto)
  sweeps       InfoNCE workspace_bytes x dc_accumulator and its row kernel's launch options; MaxSim's and nGPT's: each
               kernel module's TUNE_CANDIDATES (FALLBACK_CANDIDATES where it has none), merged into its _config()
               result (monkeypatched: what is timed is the shipped launcher), each checked against the default's
               output first
  profile      torch.profiler of one call per goal provider: the top kernels by device time, the aten matmul FLOPs
  check        scripts/gpu_check.py's steps CHECK_STEPS with the time left (the bench families' gpu-lease presets,
               the papers' predicted hours, the GPU tests), resumable there too

Every measurement goes through spherekit.bench's harness in-process (isolate="none"): device time from CUDA events
beside wall time, the compiling first call apart from >= 2 warm-ups, >= 10 repeats for sub-ms rows. The goal lines
are the families' own (their goal_checks), with measured / predicted from spherekit.bench.roofline at the ceilings
this run measured.

Results (--out, default $OUT, else <work>/out): rows.csv (every row in spherekit.bench.results.COLUMNS, appended as
it is measured), steps.json (status, seconds and note per step: what --resume reads), summary.txt (printed last),
run.log, check.tar.gz (gpu_check's results folder). Resume: --resume DIR (a previous call's results, copied back
into the tree) skips the steps DIR/steps.json holds as ok and, within the others, the rows DIR/rows.csv holds
(except rows cut by the deadline). --rehearse runs every step but build and check on CPU at tiny sizes through the
Triton interpreter (the pre-compile targets sm_90; check runs gpu_check's env step alone).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # gpu_check (its build and bench steps, the steps table)
STEPS = ("build", "env", "precompile", "correctness", "ceilings", "goals", "sweeps", "profile", "check")
REHEARSAL_SKIPS = ("build",)
DEADLINE_S = 500.0
RESERVE_S = dict(goals=120.0, sweeps=60.0, profile=30.0)  # a step starts no measurement with less than this left
CHECK_STEPS = ("contrastive", "sim_map", "ngpt", "verifier_train", "papers", "tests")
OPS = ("info_nce", "maxsim", "geodesic_residual")
MIB = 1 << 20

# launch options tried where a kernel module has no TUNE_CANDIDATES: keys merged into its _config() result
FALLBACK_CANDIDATES = {
    "info_nce_rows": [dict(BLOCK_N=n, num_warps=w) for n in (512, 1024, 2048, 4096) for w in (4, 8, 16)],
    "maxsim": [dict(BLOCK_N=64, BLOCK_H=64, num_warps=2, num_stages=2), dict(BLOCK_N=64, BLOCK_H=128, num_warps=4,
               num_stages=2), dict(BLOCK_N=128, BLOCK_H=64, num_warps=4, num_stages=3),
               dict(BLOCK_N=128, BLOCK_H=128, num_warps=8, num_stages=2), dict(BLOCK_N=256, BLOCK_H=64, num_warps=8,
               num_stages=2), dict(BLOCK_N=32, BLOCK_H=128, num_warps=2, num_stages=3)],
    "ngpt": [dict(num_warps=w) for w in (4, 8, 16, 32)] + [dict(BLOCK_R=2, num_warps=16), dict(num_stages=2),
                                                          dict(num_warps=8, num_stages=2)],
}
DC_ACCUMULATORS = ("input", "fp32")


@dataclass(frozen=True)
class Sizes:
    """The shapes of a run: the goal rows', the correctness checks', the ceilings'."""

    device: str
    dtype: str
    check_dtypes: tuple[str, ...]
    info_nce: tuple[int, int]  # B = N, d
    info_nce_checks: tuple[tuple[int, int, int], ...]  # (B, N, d)
    rerank: dict  # k, m, n, d
    train: dict  # B, k, m, n, d
    rerank_check_k: int
    ngpt: tuple[int, int]  # rows, d
    ngpt_checks: tuple[tuple[int, int], ...]
    workspaces: tuple[int, ...] = ()  # InfoNCE workspace_bytes to sweep (the R x N chunk's budget)
    candidates: int | None = None  # launch-option candidates tried per kernel module (None: all)
    warmups: int = 2  # calls before a profiled one
    peaks: dict = field(default_factory=dict)  # ceiling -> size
    settings: dict = field(default_factory=dict)  # spherekit.bench._harness.Settings fields


GPU = Sizes("cuda", "bfloat16", ("bfloat16", "float32"), (16384, 768), ((2048, 2048, 768), (1000, 1003, 384)),
            dict(k=10000, m=32, n=180, d=128), dict(B=64, k=32, m=32, n=180, d=128), 1000, (65536, 4096),
            ((4096, 4096), (1000, 1536)), tuple(ws * MIB for ws in (16, 32, 64, 128)),
            peaks=dict(copy=256 << 20, triad=256 << 20, bf16_matmul=8192),
            settings=dict(repeats=10, warmup=2, min_repeats=5, budget_s=2.0))
REHEARSAL = Sizes("cpu", "float32", ("float32",), (128, 32), ((64, 64, 32), (41, 43, 16)),
                  dict(k=50, m=8, n=12, d=16), dict(B=4, k=3, m=8, n=12, d=16), 20, (32, 64), ((33, 64),),
                  tuple(rows * 128 * 4 for rows in (64, 128)),  # 64 and 128 rows of 128 fp32 logits: 2 chunks, 1
                  candidates=2, warmups=1, peaks=dict(copy=1 << 20, triad=1 << 20, bf16_matmul=256),
                  settings=dict(repeats=1, warmup=1, min_repeats=1, budget_s=1.0))


# ------------------------------------------------------------------------------------------------
# the run: folders, rows, steps, deadline
# ------------------------------------------------------------------------------------------------

class Run:
    def __init__(self, args):
        self.rehearse = args.rehearse
        self.sizes = REHEARSAL if args.rehearse else GPU
        self.started = time.time()
        self.deadline = self.started + args.deadline_s
        self.work = Path(args.work)
        self.out = Path(args.out or os.environ.get("OUT") or self.work / "out")
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.site = self.work / "site"
        self.records: dict[str, dict] = {}
        self.rows: list[dict] = []  # this run's rows and the resumed ones
        self.done: set[tuple] = set()  # keys of the resumed rows (never measured again)
        self.failed: dict[str, str] = {}  # op -> why its correctness check failed
        self.settings = None  # spherekit.bench._harness.Settings, once spherekit is importable
        self._log = open(self.out / "run.log", "a")

    def left(self) -> float:
        return self.deadline - time.time()

    def log(self, text: str) -> None:
        print(text, flush=True)
        self._log.write(text + "\n")
        self._log.flush()

    # ---------------------------------------------------------------- rows
    def key(self, family: str, task: dict, params) -> tuple:
        from spherekit.bench.results import format_fields

        return (family, task.get("provider", ""), task.get("mode", ""), task.get("dtype", ""),
                format_fields(task, params))

    def writer(self, module, params=None, metrics=None, defaults=None):
        """emit(task, result) for H.run_tasks: the family's row, appended to rows.csv at once."""
        from spherekit.bench import _harness as H

        params = tuple(params if params is not None else module.PARAMS) + ("config",)
        metrics = tuple(metrics if metrics is not None else getattr(module, "METRICS", ()))
        # ngpt rows carry the run's copy bandwidth, measured in the ceilings step: all rows, not the writer's
        finish = (lambda row, _: module.finish_row(row, self.rows)) if getattr(module, "FAMILY", "") == "ngpt" else None
        rows, emit = H.row_writer(self.out / "rows.csv", self.common, params=params, metrics=metrics,
                                  defaults=defaults or getattr(module, "row_defaults", None), finish_row=finish)

        def logged(task, result):
            emit(task, result)
            row = rows[-1]
            self.rows.append(row)
            t = row.get("device_median_ms") or row.get("median_ms")
            shown = f"{float(t):.3f} ms" if t not in (None, "") else row["status"]
            self.log(f"  {row['family']:<11} {row.get('provider', ''):<20} {row.get('mode', ''):<11} "
                     f"{row.get('params', '')[:70]:<70} {shown}  {row.get('note', '')[:80]}")
        return logged

    def measure(self, module, tasks: list[dict], *, step: str, op: str | None = None, config: str = "",
                params=None) -> list[dict]:
        """Run tasks of a family module in-process (the harness: device time, warm-ups, repeats), skipping the rows
        already measured (resume) and, when op failed its correctness check, its spherekit rows. Returns the rows."""
        from spherekit.bench import _harness as H

        emit = self.writer(module, params)
        before = len(self.rows)
        todo = []
        for task in tasks:
            task = dict(task, config=config) if config else dict(task)
            if self.key(module.FAMILY, task, tuple(params or module.PARAMS) + ("config",)) in self.done:
                continue
            if op in self.failed and task["provider"].startswith("spherekit"):
                emit(task, {"status": "skipped", "note": f"not run: {op} failed its correctness check: "
                                                         f"{self.failed[op][:120]}"})
                continue
            todo.append(task)
        if todo:  # the harness's deadline is a time.monotonic() value
            H.run_tasks(module.__name__, todo, self.settings, emit, progress=False,
                        deadline=time.monotonic() + self.left() - RESERVE_S.get(step, 0.0))
        return self.rows[before:]

    def family_rows(self, family: str) -> list[dict]:
        """This run's (and the resumed) rows of a family but its sweep candidates', with the ceilings measured in
        the ceilings step."""
        return [r for r in self.rows
                if (r.get("family") == family and not r.get("config")) or r.get("provider") == "peak"]

    def record(self, name: str, status: str, seconds: float, note: str, lines=()) -> None:
        self.records[name] = dict(status=status, seconds=round(seconds, 1), note=" ".join(str(note).split())[:200],
                                  lines=list(lines))
        self.publish()

    # ---------------------------------------------------------------- results
    def publish(self) -> None:
        from_atomic = self.out / "steps.json.tmp"
        from_atomic.write_text(json.dumps({"rehearse": self.rehearse, "steps": self.records}, indent=1))
        os.replace(from_atomic, self.out / "steps.json")
        (self.out / "summary.txt").write_text(self.summary())

    def summary(self) -> str:
        from gpu_check import steps_table

        lines = steps_table("spherekit gpu_run" + (" --rehearse (no GPU)" if self.rehearse else ""), self.records, 12)
        for name, r in self.records.items():
            if r.get("lines"):
                lines += ["", f"{name}:"] + [f"  {x}" for x in r["lines"]]
        lines.append(f"\nresults in {self.out} ({time.time() - self.started:.0f} s in all)")
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# the workloads: tasks of the bench families, shared by precompile, goals, sweeps and profile
# ------------------------------------------------------------------------------------------------

def info_nce_tasks(s: Sizes, providers) -> list[dict]:
    B, d = s.info_nce
    return [dict(family="contrastive", provider=p, mode="fwd+bwd", B=B, N=B, d=d, k=0, dtype=s.dtype)
            for p in providers]


def rerank_tasks(s: Sizes, providers) -> list[dict]:
    return [dict(family="sim_map", workload="rerank", provider=p, mode="fwd", B=1, dtype=s.dtype, **s.rerank)
            for p in providers]


def train_tasks(s: Sizes, providers) -> list[dict]:
    return [dict(family="sim_map", workload="train", provider=p, mode="fwd+bwd", dtype=s.dtype, **s.train)
            for p in providers]


def ngpt_tasks(s: Sizes, providers) -> list[dict]:
    rows, d = s.ngpt
    return [dict(family="ngpt", provider=p, mode="fwd+bwd", rows=rows, d=d, dtype=s.dtype) for p in providers]


INFO_NCE_PROVIDERS = ("spherekit-triton", "st-mnrl-autocast", "st-mnrl", "reference", "torch-ce-compile")
RERANK_PROVIDERS = ("einsum", "spherekit-triton", "spherekit-ragged-cuda")
TRAIN_PROVIDERS = ("einsum", "spherekit-triton")
NGPT_PROVIDERS = ("spherekit-triton", "spherekit-cuda", "spherekit-auto", "eager", "compile")  # compile last: slow


def goal_workloads(s: Sizes) -> list[tuple[str, str, list[dict]]]:
    """(family module, op, tasks) of the goal rows."""
    return [("contrastive", "info_nce", info_nce_tasks(s, INFO_NCE_PROVIDERS)),
            ("sim_map", "maxsim", rerank_tasks(s, RERANK_PROVIDERS) + train_tasks(s, TRAIN_PROVIDERS)),
            ("ngpt", "geodesic_residual", ngpt_tasks(s, NGPT_PROVIDERS))]


def kernel_module(name: str):
    """spherekit.kernels.<name>, or None where this version has no such module."""
    import importlib

    try:
        return importlib.import_module(f"spherekit.kernels.{name}")
    except ImportError:
        return None


def candidates(name: str) -> list[dict]:
    """The launch options to sweep for kernel module `name`: its TUNE_CANDIDATES, else FALLBACK_CANDIDATES; the
    default ({}) first."""
    module = kernel_module(name)
    listed = list(getattr(module, "TUNE_CANDIDATES", None) or FALLBACK_CANDIDATES.get(name, []))
    return [{}] + [c for c in listed if c]


def config_text(override: dict) -> str:
    """A launch option set as one params cell value: 'BLOCK_N:128,num_warps:8' ('' for the default)."""
    return ",".join(f"{k}:{v}" for k, v in override.items())


@contextlib.contextmanager
def patched(module, override: dict):
    """module._config() with override's keys merged into its result, for the duration."""
    if not override:
        yield
        return
    original = module._config
    module._config = lambda *a, **k: {**original(*a, **k), **override}
    try:
        yield
    finally:
        module._config = original


def sweep_plan(s: Sizes) -> list[tuple[str, str, str | None, dict, list[dict]]]:
    """(family module, op, kernel module, override, tasks) of every sweep candidate (the defaults are the goal rows;
    a rehearsal tries the first s.candidates of each kernel module)."""
    plan = []
    base = info_nce_tasks(s, ("spherekit-triton",))[0]
    info = [dict(base, workspace_bytes=ws, dc_accumulator=acc) for ws in s.workspaces for acc in DC_ACCUMULATORS]
    plan.append(("contrastive", "info_nce", None, {}, info))
    if kernel_module("info_nce_rows") is not None:
        for override in candidates("info_nce_rows")[1:s.candidates]:
            plan.append(("contrastive", "info_nce", "info_nce_rows", override, [base]))
    rerank = rerank_tasks(s, ("spherekit-triton",))
    for override in candidates("maxsim")[1:s.candidates]:
        plan.append(("sim_map", "maxsim", "maxsim", override, rerank))
    ngpt = ngpt_tasks(s, ("spherekit-triton",))
    for override in candidates("ngpt")[1:s.candidates]:
        plan.append(("ngpt", "geodesic_residual", "ngpt", override, ngpt))
    return plan


def predict(s: Sizes = GPU) -> dict[str, float]:
    """Upper bounds (seconds) of each step on an H100 / H200, from assumptions, never from a measurement (as in
    spherekit.bench.lease, whose per-call worst cases it takes): build BUILD_S; the pre-compile one compile of
    COMPILE_KERNEL_S per distinct launch (PRECOMPILE_LAUNCHES at most) over 16 processes plus SPAWN_S; a correctness
    case CHECK_S; a measurement its first call, warm-ups, repeats, probe and back-to-back calls at the family's worst
    call; a torch.compile provider lease.COMPILE_S more; a sweep candidate its output check (2 calls) on top; a
    profile its warm-ups and the profiled call. check gets what is left (CHECK_STEPS resume in a second call)."""
    from spherekit.bench import lease
    from spherekit.bench._harness import GPU_WARMUPS

    st = s.settings
    calls = 1 + max(GPU_WARMUPS, st["warmup"]) + st["repeats"] + 1

    def measurement(family, task):
        call = lease.RERANK_CALL_S if task.get("workload") == "rerank" else lease.CALL_S[family]
        b2b = bench_module("sim_map").BACK_TO_BACK if task.get("workload") == "rerank" else 0
        compile_s = lease.COMPILE_S if "compile" in task["provider"] else 0.0
        return (calls + b2b) * call + compile_s

    goals = sum(measurement(f, t) for f, _, tasks in goal_workloads(s) for t in tasks)
    sweeps = sum(measurement(f, t) + 2 * lease.CALL_S[f] for f, _, _, _, tasks in sweep_plan(s) for t in tasks)
    profile = sum((s.warmups + 1) * lease.CALL_S[f] for f, _, tasks in goal_workloads(s) for t in tasks
                  if "compile" not in t["provider"])
    cases = len(s.check_dtypes) * (len(s.info_nce_checks) * len(DC_ACCUMULATORS) + 2 + 3 * len(s.ngpt_checks))
    return dict(build=BUILD_S, env=5.0, precompile=SPAWN_S + PRECOMPILE_LAUNCHES * COMPILE_KERNEL_S / 16,
                correctness=cases * CHECK_S, ceilings=len(s.peaks) * calls * lease.PEAK_CALL_S, goals=goals,
                sweeps=sweeps, profile=profile)


BUILD_S = 60.0  # gpu_check's build took 37-47 s on the H200 (benches/results/gpu/h200_summary.txt)
SPAWN_S = 20.0  # 16 spawned processes importing torch and triton, plus the capture
PRECOMPILE_LAUNCHES = 80  # distinct launches of the goal rows, the checks and every sweep candidate, at most
COMPILE_KERNEL_S = 10.0
CHECK_S = 1.5  # one correctness case: the op, the same-precision torch and the fp64 oracle at the check shapes


def bench_module(family: str):
    import importlib

    return importlib.import_module(f"spherekit.bench.{family}")


# ------------------------------------------------------------------------------------------------
# steps
# ------------------------------------------------------------------------------------------------

def step_build(run: Run):
    if run.rehearse:
        return True, "rehearsal: the installed spherekit"
    if not (any(run.site.glob("spherekit/_C*")) and any(run.site.glob("spherekit/_cuda*"))):
        cmd = [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--steps", "env,build", "--work", str(run.work),
               "--out", str(run.work / "check-out"), "--deadline-s", str(max(run.left() - 30, 60))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        run.log(proc.stdout[-2000:])
        if proc.returncode != 0:
            return False, f"gpu_check build failed (rc {proc.returncode}): {proc.stdout.strip().splitlines()[-1:]}"
    return True, f"spherekit from {run.site}"


def import_spherekit(run: Run) -> None:
    """Put the built spherekit first on sys.path (GPU), import it, make the run's harness settings."""
    if not run.rehearse:
        sys.path.insert(0, str(run.site))
    import torch

    from spherekit.bench import _harness as H

    if not run.rehearse and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --rehearse")
    run.settings = H.Settings(device=run.sizes.device, isolate="none", timeout_s=120.0, mem_limit_bytes=None,
                              count_flops=True, triton_on_cpu=run.rehearse, **run.sizes.settings)
    run.common = H.run_facts("gpu-run" + ("-rehearsal" if run.rehearse else ""), run.sizes.device)
    bounds = predict(GPU)
    run.log("[gpu_run] predicted upper bounds on a GPU (s): " + ", ".join(f"{k} {v:.0f}" for k, v in bounds.items())
            + f"; {sum(bounds.values()):.0f} in all, check gets the rest of the deadline")


def clocks_row(run: Run, when: str) -> None:
    from spherekit.bench import _harness as H
    from spherekit.bench.machine import clocks_text, gpu_clocks

    clocks = gpu_clocks(run.sizes.device)
    emit = run.writer(H, params=(), metrics=tuple(clocks))
    emit(dict(family="env", provider="clocks", mode=when, dtype=""), dict(status="ok", note=clocks_text(clocks),
                                                                           **clocks))


def step_env(run: Run):
    import torch
    import triton

    from spherekit import _backend
    from spherekit.bench import _harness as H

    emit = run.writer(H, params=(), metrics=("sms", "memory_gib", "capability"))
    facts = dict(note=run.common["machine"])
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        facts.update(sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2 ** 30, 1),
                     capability=f"sm_{p.major}{p.minor}")
    emit(dict(family="env", provider="machine", mode="", dtype=""), dict(status="ok", **facts))
    versions = f"python {sys.version.split()[0]}, torch {torch.__version__}, triton {triton.__version__}, " \
               f"spherekit {run.common['spherekit']}, sentence-transformers {run.common['sentence_transformers']}"
    emit(dict(family="env", provider="versions", mode="", dtype=""), dict(status="ok", note=versions))
    backends = "; ".join(f"{k}: {'yes' if ok else 'no'} ({why})" for k, (ok, why) in _backend.report().items())
    emit(dict(family="env", provider="backends", mode="", dtype=""), dict(status="ok", note=backends[:300]))
    clocks_row(run, "start")
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                              "temperature.gpu,power.draw,power.limit", "--format=csv"], capture_output=True, text=True)
        run.log(smi.stdout.strip())
    return True, f"{facts['note']}; {versions}"


def _capture_calls(run: Run, include_sweeps: bool) -> list:
    """The (label, call) pairs whose Triton launches the pre-compile records: the correctness checks, each spherekit
    task of the goal rows, and of every sweep candidate under its patched _config."""
    device = run.sizes.device
    calls = [(f"check {op} {label} {dtype}", thunk) for op, label, _, dtype, thunk in correctness_cases(run)]
    for family, _, tasks in goal_workloads(run.sizes):
        module = bench_module(family)
        for task in tasks:
            if task["provider"] in ("spherekit-triton", "spherekit-auto"):
                calls.append((f"{family} {task['provider']}", lambda m=module, t=task: m.prepare_call(t, device)()))
    if include_sweeps:
        for family, _, kernel, override, tasks in sweep_plan(run.sizes):
            module, kmod = bench_module(family), kernel_module(kernel) if kernel else None

            def call(m=module, ts=tasks, k=kmod, o=override):
                with patched(k, o) if k is not None else contextlib.nullcontext():
                    for t in ts:
                        with contextlib.suppress(ValueError):  # an option this version's op does not take
                            m.prepare_call(t, device)()
            calls.append((f"{family} {kernel} {config_text(override)}", call))
    return calls


def step_precompile(run: Run):
    """Record the launches, compile the distinct ones in parallel (spawned processes, the interpreter off)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait

    import torch

    sys.path.insert(0, str(ROOT / "benches"))
    import triton_resources as T

    arch = 90 if run.rehearse else int("%d%d" % torch.cuda.get_device_capability())
    t0 = time.time()
    launches = T.distinct(T.record_launches(_capture_calls(run, include_sweeps=not run.rehearse)))
    specs = [T.launch_spec(launch, arch) for launch in launches]
    capture_s = time.time() - t0
    workers = max(1, min(len(specs), (os.cpu_count() or 2) if not run.rehearse else 2))
    compiled, failed = [], []
    interpret = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0"  # the spawned processes compile; the interpreter would replace the compiler
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(T.compile_spec, spec): spec for spec in specs}
            done, pending = wait(futures, timeout=max(run.left() - RESERVE_S["goals"] - 60, 10))
            for future in pending:
                future.cancel()
            for future in done:
                try:
                    compiled.append(future.result())
                except Exception as exc:  # noqa: BLE001 - a kernel that does not compile is reported, not fatal
                    failed.append(f"{futures[future]['name']}: {type(exc).__name__}: {str(exc)[:120]}")
    finally:
        if interpret is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = interpret
    seconds = time.time() - t0
    from spherekit.bench import _harness as H

    emit = run.writer(H, params=("arch",), metrics=("launches", "compiled", "failed", "capture_s", "compile_s"))
    emit(dict(family="precompile", provider="triton", mode="compile", dtype="", arch=f"sm_{arch}"),
         dict(status="ok" if not failed and len(compiled) == len(specs) else "error", launches=len(specs),
              compiled=len(compiled), failed=len(failed), capture_s=round(capture_s, 1), compile_s=round(seconds, 1),
              note="; ".join(failed)[:300]))
    slow = sorted(compiled, key=lambda r: -r["seconds"])[:5]
    note = (f"{len(compiled)} of {len(specs)} distinct launches compiled for sm_{arch} in {seconds:.0f} s "
            f"({workers} processes; capture {capture_s:.0f} s); slowest: "
            + ", ".join(f"{r['kernel']} {r['seconds']:.0f} s" for r in slow))
    return not failed and len(compiled) == len(specs), note + ("; FAILED: " + "; ".join(failed) if failed else "")


# ---------------------------------------------------------------- correctness against the fp64 oracle

def _rule():
    """tests/_oracle.py: the project's accuracy rule (its max_abs and floors)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import _oracle

    return _oracle


def _unit(shape, generator, device):
    import torch
    import torch.nn.functional as F

    return F.normalize(torch.randn(*shape, generator=generator, device=device, dtype=torch.float64), dim=-1)


def _grads_of(out, leaves, weight):
    import torch

    loss = (out * weight).sum() if out.dim() else out * weight
    return list(torch.autograd.grad(loss, leaves))


def check_info_nce(run: Run, B, N, d, dtype, options):
    import torch

    from spherekit import reference
    from spherekit.ops import info_nce

    dev = run.sizes.device
    g = torch.Generator(device=dev).manual_seed(B + N + d)
    q, c = _unit((B, d), g, dev), _unit((N, d), g, dev)
    targets = torch.randperm(N, generator=g, device=dev)[:B] if N >= B else None

    def go(fn, cast, **kw):
        leaves = [q.to(cast).requires_grad_(), c.to(cast).requires_grad_()]
        out = fn(leaves[0], leaves[1], targets, temperature=0.05, **kw)
        return [out.detach()] + _grads_of(out, leaves, 0.75)

    got = go(info_nce, dtype, backend="triton", **options)
    oracle = go(reference.info_nce, torch.float64, compute_dtype=torch.float64)
    same = go(reference.info_nce, dtype, compute_dtype=dtype)
    return list(zip(("loss", "dq", "dc"), got, same, oracle))


def check_maxsim(run: Run, workload, dtype):
    import torch

    from spherekit.ops import maxsim
    from spherekit.reference.sim_map import maxsim as oracle_maxsim

    dev, s = run.sizes.device, run.sizes
    g = torch.Generator(device=dev).manual_seed(7)
    if workload == "rerank":
        m, n, h = s.rerank["m"], s.rerank["n"], s.rerank["d"]
        q, d = _unit((1, m, h), g, dev), _unit((s.rerank_check_k, n, h), g, dev)
    else:
        B, K, m, n, h = (s.train[x] for x in ("B", "k", "m", "n", "d"))
        q, d = _unit((B, m, h), g, dev), _unit((B, K, n, h), g, dev)
    q_len = torch.randint(max(1, q.shape[1] // 2), q.shape[1] + 1, q.shape[:1], generator=g, device=dev)
    d_len = torch.randint(max(1, d.shape[-2] // 2), d.shape[-2] + 1, d.shape[:-2], generator=g, device=dev)
    qm = torch.arange(q.shape[1], device=dev) < q_len[:, None]
    dm = torch.arange(d.shape[-2], device=dev) < d_len[..., None]

    grad = workload == "train"
    options = dict(normalize=grad, reduction="mean")  # what the bench's rerank / train providers ask for

    def go(fn, cast, grad, **kw):
        leaves = [q.to(cast).requires_grad_(grad), d.to(cast).requires_grad_(grad)]
        with torch.set_grad_enabled(grad):
            if fn is maxsim:  # the op takes its masks as keywords, the oracle positionally
                out = fn(leaves[0], leaves[1], q_mask=qm, d_mask=dm, **options, **kw)
            else:
                out = fn(leaves[0], qm, leaves[1], dm, **options, **kw)
        return [out.detach()] + (_grads_of(out, leaves, 0.75) if grad else [])

    names = ("scores", "dq", "dd") if grad else ("scores",)
    got = go(maxsim, dtype, grad, backend="triton")
    oracle = go(oracle_maxsim, torch.float64, grad, compute_dtype=torch.float64)
    same = go(oracle_maxsim, dtype, grad, compute_dtype=dtype)
    return list(zip(names, got, same, oracle))


def check_ngpt(run: Run, rows, d, dtype, backend):
    import torch

    from spherekit.ops import geodesic_residual
    from spherekit.reference.ngpt import geodesic_residual as oracle_residual

    dev = run.sizes.device
    g = torch.Generator(device=dev).manual_seed(rows + d)
    h, f = (torch.randn(rows, d, generator=g, device=dev, dtype=torch.float64) for _ in range(2))
    alpha = torch.randn(d, generator=g, device=dev, dtype=torch.float64) * 0.05
    weight = torch.randn(rows, d, generator=g, device=dev, dtype=torch.float64)

    def go(fn, cast, **kw):
        leaves = [h.to(cast).requires_grad_(), f.to(cast).requires_grad_(),
                  alpha.to(torch.float64 if cast == torch.float64 else torch.float32).requires_grad_()]
        out = fn(*leaves, **kw)
        return [out.detach()] + _grads_of(out, leaves, weight.to(out.dtype))

    got = go(geodesic_residual, dtype, backend=backend)
    oracle = go(oracle_residual, torch.float64, compute_dtype=torch.float64)
    same = go(oracle_residual, dtype, compute_dtype=dtype)
    return list(zip(("out", "dh", "df", "dalpha"), got, same, oracle))


def correctness_cases(run: Run):
    """(op, provider label, params dict, dtype, thunk returning [(name, got, same precision, oracle)])."""
    import inspect

    import torch

    from spherekit import _backend
    from spherekit.ops import info_nce

    s = run.sizes
    takes = inspect.signature(info_nce).parameters
    accumulators = [{"dc_accumulator": a} for a in DC_ACCUMULATORS] if "dc_accumulator" in takes else [{}]
    cases = []
    for dtype_name in s.check_dtypes:
        dtype = getattr(torch, dtype_name)
        for B, N, d in s.info_nce_checks:
            for opts in accumulators:
                label = "spherekit-triton" + (f" dc={opts['dc_accumulator']}" if opts else "")
                cases.append(("info_nce", label, dict(B=B, N=N, d=d), dtype_name,
                              lambda B=B, N=N, d=d, dt=dtype, o=opts: check_info_nce(run, B, N, d, dt, o)))
        for workload in ("rerank", "train"):
            cases.append(("maxsim", f"spherekit-triton {workload}", dict(workload=workload), dtype_name,
                          lambda w=workload, dt=dtype: check_maxsim(run, w, dt)))
        backends = ["triton"] + (["cuda", "auto"] if s.device == "cuda" else [])
        for rows, d in s.ngpt_checks:
            for backend in backends:
                if backend == "cuda" and not _backend.usable("cuda", torch.device("cuda"))[0]:
                    continue
                cases.append(("geodesic_residual", f"spherekit-{backend}", dict(rows=rows, d=d), dtype_name,
                              lambda r=rows, d=d, dt=dtype, b=backend: check_ngpt(run, r, d, dt, b)))
    return cases


def step_correctness(run: Run):
    import torch

    from spherekit.bench import _harness as H

    rule = _rule()
    emit = run.writer(H, params=("B", "N", "d", "workload", "rows"), metrics=("error", "bound", "worst"))
    lines, n_ok = [], 0
    # an op that failed in the resumed rows stays failed
    for r in run.rows:
        if r.get("family") == "check" and r.get("status") == "error":
            run.failed.setdefault(r["mode"], r.get("note", ""))
    for op, label, params, dtype_name, thunk in correctness_cases(run):
        task = dict(family="check", provider=label, mode=op, dtype=dtype_name, **params)
        if run.key("check", task, ("B", "N", "d", "workload", "rows", "config")) in run.done:
            continue
        if run.left() < RESERVE_S["goals"] + 30:
            emit(task, dict(status="skipped", note="not run: the run's deadline"))
            continue
        dtype = getattr(torch, dtype_name)
        worst, result = None, dict(status="ok", note="")
        try:
            for name, got, same, oracle in thunk():
                err, base = rule.max_abs(got, oracle), rule.max_abs(same, oracle)
                scale = max(1.0, oracle.double().abs().max().item()) if oracle.numel() else 1.0
                bound = 2 * base + rule.FLOORS[dtype] * scale
                ratio = err / bound if bound else float("inf")
                if worst is None or ratio > worst[0]:
                    worst = (ratio, name, err, bound)
                if not err <= bound:  # NaN fails too
                    result = dict(status="error", note=f"FAILED: {name} error {err:.3e} > bound {bound:.3e} "
                                                       f"(same-precision torch error {base:.3e})")
                    break
        except Exception as exc:  # noqa: BLE001 - an op that raises has failed its check
            result = dict(status="error", note=f"FAILED: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        if worst is not None:
            result.update(error=worst[2], bound=worst[3], worst=worst[1])
        emit(task, result)
        if result["status"] != "ok":
            run.failed.setdefault(op, f"{label} {dtype_name} {params}: {result['note']}")
            lines.append(f"FAIL  {op} {label} {dtype_name} {params}: {result['note']}")
        else:
            n_ok += 1
        if run.sizes.device == "cuda":
            torch.cuda.empty_cache()
    verdict = "; ".join(f"{op}: {'FAILED' if op in run.failed else 'ok'}" for op in OPS)
    return not run.failed, f"{n_ok} checks within the bound; {verdict}", lines


def step_ceilings(run: Run):
    from spherekit.bench import ceilings, contrastive

    tasks = [ceilings.peak_task("ceilings", name, size) for name, size in run.sizes.peaks.items()]
    rows = run.measure(contrastive, tasks, step="ceilings")
    return all(r["status"] == "ok" for r in rows), "; ".join(ceilings.peak_lines(run.rows)) or "none measured"


def step_goals(run: Run):
    lines, ok = [], True
    for family, op, tasks in goal_workloads(run.sizes):
        module = bench_module(family)
        rows = run.measure(module, tasks, step="goals", op=op)
        ok &= all(r["status"] in ("ok", "skipped") for r in rows)
    s = run.sizes  # the families' GPU goal lines at this run's shapes (a rehearsal: wall times on CPU)
    goals = {"contrastive": dict(B=s.info_nce[0], d=s.info_nce[1], dtype=s.dtype), "sim_map": dict(k=s.rerank["k"]),
             "ngpt": dict(n_rows=s.ngpt[0], d=s.ngpt[1], dtype=s.dtype)}
    for family, shape in goals.items():
        lines += [f"{family}: {line}" for line in bench_module(family).gpu_goal_checks(run.family_rows(family),
                                                                                      **shape)]
    measured = sum(1 for r in run.rows if r.get("family") in ("contrastive", "sim_map", "ngpt") and r["status"] == "ok")
    return ok, f"{measured} goal rows measured ok", lines


def step_sweeps(run: Run):
    """Each sweep candidate: its outputs against the defaults' at a small shape (the family's outputs_at), then its
    rows timed with the candidate merged into the kernel module's _config()."""
    from spherekit.bench.results import goal_time

    lines, errors = [], 0
    best: dict[str, tuple[float, str]] = {}
    defaults: dict[tuple, list] = {}  # (family, kernel) -> the default options' outputs
    for family, op, kernel, override, tasks in sweep_plan(run.sizes):
        if run.left() < RESERVE_S["sweeps"]:
            lines.append(f"cut by the deadline at {family} {kernel or 'options'} {config_text(override)}")
            break
        module, kmod = bench_module(family), kernel_module(kernel) if kernel else None
        differs = ""
        if override and op not in run.failed:
            try:
                if (family, kernel) not in defaults:
                    defaults[(family, kernel)] = module.outputs_at(tasks[0], run.sizes.device)
                with patched(kmod, override):
                    differs = compare(module.outputs_at(tasks[0], run.sizes.device), defaults[(family, kernel)])
            except Exception as exc:  # noqa: BLE001 - a candidate that does not run is a row
                differs = f"DIFFERS: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
        if differs:
            emit = run.writer(module)
            for task in tasks:
                emit(dict(task, config=config_text(override)), {"status": "error", "note": differs})
                errors += 1
            continue
        with patched(kmod, override) if kmod is not None else contextlib.nullcontext():
            rows = run.measure(module, tasks, step="sweeps", op=op, config=config_text(override))
        what = f"{family} options" if kernel is None else f"kernels/{kernel}.py _config"
        for r in rows:
            errors += r["status"] == "error"
            label = config_text(override) or " ".join(f"{k}={r[k]}" for k in ("workspace_bytes", "dc_accumulator")
                                                       if r.get(k)) or "default"
            t = goal_time(r)[0]
            if r["status"] == "ok" and (what not in best or t < best[what][0]):
                best[what] = (t, label)
    lines += [f"fastest {what}: {label}, {t:.3f} ms" for what, (t, label) in best.items()]
    return errors == 0, f"{len(best)} sweeps, {errors} error rows", lines


def compare(got: list, base: list) -> str:
    """'' when every output is within 2e-2 of the default's (relative to its largest entry), else what differs."""
    worst = 0.0
    for a, b in zip(got, base):
        scale = float(b.float().abs().max().clamp_min(1e-30))
        worst = max(worst, float((a.float() - b.float()).abs().max()) / scale)
    return "" if worst < 2e-2 else f"DIFFERS from the default by {worst:.2e}"


def step_profile(run: Run):
    import torch
    from torch.profiler import ProfilerActivity, profile

    from spherekit.bench import _harness as H
    from spherekit.bench.flops import matmul_flops

    cuda = run.sizes.device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    key = "device_time_total" if cuda else "self_cpu_time_total"  # CPU: self time, so nested ops count once
    emit = run.writer(H, params=("shape",), metrics=("calls", "matmul_flops", "kernels"))
    lines = []
    for family, op, tasks in goal_workloads(run.sizes):
        module = bench_module(family)
        for task in tasks:
            if run.left() < RESERVE_S["profile"]:
                return True, "cut by the deadline", lines
            if op in run.failed and task["provider"].startswith("spherekit"):
                continue
            if module.static_skip(task, run.settings) or "compile" in task["provider"]:
                continue  # torch.compile providers: a profile would compile them again (their rows are in goals)
            shape = "/".join(str(task[k]) for k in ("B", "N", "d", "k", "m", "n", "rows") if k in task)
            base = dict(family="profile", provider=f"{family}:{task['provider']}", mode=task["mode"],
                        dtype=task["dtype"], shape=shape)
            if run.key("profile", base, ("shape", "config")) in run.done:
                continue
            try:
                call = module.prepare_call(task, run.sizes.device)
                for _ in range(run.sizes.warmups):
                    call()
                if cuda:
                    torch.cuda.synchronize()
                with profile(activities=activities, record_shapes=True) as prof:
                    call()
                    if cuda:
                        torch.cuda.synchronize()
                del call
            except Exception as exc:  # noqa: BLE001
                emit(base, dict(status="error", note=f"{type(exc).__name__}: {str(exc)[:200]}"))
                continue
            finally:
                H.release_caches(run.sizes.device)
            events = [e for e in prof.key_averages() if getattr(e, key, 0) > 0]
            if cuda:
                events = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA] or events
            events.sort(key=lambda e: -getattr(e, key))
            total = sum(getattr(e, key) for e in events) / 1e3
            flops = matmul_flops(prof.events())
            emit(dict(base, mode=f"{task['mode']} total"),
                 dict(status="ok", device_median_ms=total if cuda else None, median_ms=None if cuda else total,
                      calls=sum(e.count for e in events), matmul_flops=flops, kernels=len(events)))
            top = []
            for e in events[:8]:
                ms = getattr(e, key) / 1e3
                emit(dict(base, mode=task["mode"], shape=f"{shape}#{len(top)}"),
                     dict(status="ok", device_median_ms=ms if cuda else None, median_ms=None if cuda else ms,
                          calls=e.count, note=e.key[:200]))
                top.append(f"{e.key[:48]} {ms:.3f} ms x{e.count}")
            lines.append(f"{family} {task['provider']}: {total:.3f} ms in {len(events)} kernels; "
                         f"{'; '.join(top[:3])}")
    return True, f"{len(lines)} profiles", lines


def step_check(run: Run):
    """gpu_check.py's bench steps with the time left (rehearsal: its env step alone), its results packed into
    check.tar.gz."""
    out = run.work / "check-out"
    steps = "env" if run.rehearse else ",".join(CHECK_STEPS)
    if run.left() < 45:
        return False, "no time left (resume with --resume)"
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--steps", steps, "--work", str(run.work),
           "--out", str(out), "--resume", str(out), "--deadline-s", str(int(run.left() - 10))]
    if run.rehearse:
        cmd = [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--rehearse", "--steps", steps, "--work",
               str(run.work), "--out", str(out), "--deadline-s", "120"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    run.log(proc.stdout[-3000:])
    with tarfile.open(run.out / "check.tar.gz.tmp", "w:gz") as tar:
        if out.exists():
            tar.add(out, arcname="check")
    os.replace(run.out / "check.tar.gz.tmp", run.out / "check.tar.gz")
    summary = (out / "summary.txt").read_text().splitlines() if (out / "summary.txt").exists() else []
    goals = [ln.strip() for ln in summary if ln.startswith("  ")]
    return proc.returncode == 0, f"gpu_check --steps {steps}: rc {proc.returncode}", goals


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------

def resume_from(run: Run, folder: Path) -> None:
    """The ok steps of folder/steps.json and the rows of folder/rows.csv (rows cut by the deadline excluded)."""
    from spherekit.bench._harness import DEADLINE_NOTE
    from spherekit.bench.results import read_rows

    if (folder / "steps.json").exists():
        steps = json.loads((folder / "steps.json").read_text()).get("steps", {})
        run.records.update({k: v for k, v in steps.items() if v.get("status") == "ok"})
    rows_path = folder / "rows.csv"
    if rows_path.exists():
        if folder.resolve() != run.out.resolve():
            shutil.copy(rows_path, run.out / "rows.csv")
        for row in read_rows(run.out / "rows.csv"):
            if row.get("note", "").startswith(DEADLINE_NOTE) or "the run's deadline" in row.get("note", ""):
                continue
            run.rows.append(row)
            params = row.get("params", "")
            run.done.add((row["family"], row.get("provider", ""), row.get("mode", ""), row.get("dtype", ""), params))
    check = folder / "check.tar.gz"
    if check.exists():
        with tarfile.open(check) as tar:
            tar.extractall(run.work, filter="data")
        if (run.work / "check").exists():
            shutil.rmtree(run.work / "check-out", ignore_errors=True)
            (run.work / "check").rename(run.work / "check-out")
        if folder.resolve() != run.out.resolve():
            shutil.copy(check, run.out / "check.tar.gz")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rehearse", action="store_true", help="no GPU: CPU, tiny sizes, the Triton interpreter")
    ap.add_argument("--out", help="results folder (default: $OUT, else <work>/out)")
    ap.add_argument("--work", default=os.environ.get("GPU_CHECK_WORK", "/tmp/spherekit-gpu-check"),
                    help="build target and gpu_check's folders (default: %(default)s)")
    ap.add_argument("--steps", help=f"comma-separated subset of {','.join(STEPS)}")
    ap.add_argument("--resume", help="a previous call's results folder: skip its ok steps and measured rows")
    ap.add_argument("--deadline-s", type=float, default=DEADLINE_S, help="no measurement starts past this")
    args = ap.parse_args(argv)
    wanted = args.steps.split(",") if args.steps else [s for s in STEPS if not (args.rehearse and s in REHEARSAL_SKIPS)]
    unknown = sorted(set(wanted) - set(STEPS))
    if unknown:
        ap.error(f"unknown steps {unknown}; choose from {','.join(STEPS)}")
    if args.rehearse:  # before anything imports triton
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["SPHEREKIT_TRITON_INTERPRET"] = "1"
    else:  # on a GPU the interpreter must be off (triton 3.6.0's also fails with numpy >= 2.4)
        os.environ.pop("TRITON_INTERPRET", None)
        os.environ["SPHEREKIT_TRITON_INTERPRET"] = "0"
    run = Run(args)
    faulthandler.dump_traceback_later(max(args.deadline_s + 60, 60), exit=False, file=sys.__stderr__)  # a hang
    run.log(f"[gpu_run] steps {','.join(wanted)}; deadline {args.deadline_s:.0f} s; results in {run.out}")
    status = 0
    try:
        for name in STEPS:
            if name not in wanted or name in run.records:
                if name in run.records:
                    run.log(f"[gpu_run] {name}: ok in an earlier call")
                continue
            if name != "build" and run.settings is None:
                import_spherekit(run)
                if args.resume:
                    resume_from(run, Path(args.resume))
                    if name in run.records:
                        continue
            if run.left() < 20 and name != "check":
                run.record(name, "not run", 0.0, "no time left (resume with --resume)")
                continue
            run.log(f"[gpu_run] {name} ({run.left():.0f} s left) ...")
            t0 = time.time()
            try:
                ok, note, *lines = globals()[f"step_{name}"](run)
            except KeyboardInterrupt:
                run.record(name, "interrupted", time.time() - t0, "Ctrl-C")
                raise
            except Exception as exc:  # noqa: BLE001 - a step that raises is recorded, the run goes on
                ok, note, lines = False, f"{type(exc).__name__}: {exc}", [[traceback.format_exc()[-600:]]]
            run.record(name, "ok" if ok else "FAILED", time.time() - t0, note, lines[0] if lines else [])
            run.log(f"[gpu_run] {name}: {'ok' if ok else 'FAILED'} in {time.time() - t0:.0f} s: {note}")
            if name == "build" and not ok:
                break
    except KeyboardInterrupt:
        status = 130
    finally:
        if run.settings is not None:
            with contextlib.suppress(Exception):
                clocks_row(run, "end")
        run.publish()
        faulthandler.cancel_dump_traceback_later()
    print()
    print(run.summary(), end="")
    if status:
        return status
    return 0 if all(r["status"] == "ok" for r in run.records.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
