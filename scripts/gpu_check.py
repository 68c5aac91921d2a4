"""The GPU check (scripts/gpu_check.sh): build, tests and the bench families' gpu-lease presets on a lent GPU, and the
rehearsal of every step that needs none (--rehearse). On a GPU, scripts/gpu_run.py comes first (the in-process
measurements of the goals, sweeps and profiles) and calls this for its build and, with the time left, its bench steps.

Steps, in order, each a subprocess with its own time limit (STEPS; its log in <work>/logs/):
  env         GPU, driver, Python, torch, triton, numpy, transformers, nvcc, cmake (env.txt)
  build       pip install --no-deps --no-build-isolation --no-index --target <work>/site . with SPHEREKIT_WITH_CUDA=ON
              and only this GPU's architecture (sm_90 when rehearsing); the run stops at once when spherekit._C or
              spherekit._cuda does not load from there (every later step imports spherekit from <work>/site)
  tests       pytest -m gpu over tests/, the Triton interpreter off, SPHEREKIT_REQUIRE_CUDA=1 (a CUDA extension that
              does not load fails, never skips), a timeout per test; the junit file becomes tests.csv
  ceilings    device-to-device copy bandwidth and a bf16 matmul (spherekit.bench.ceilings)
  contrastive, sim_map, ngpt, verifier_train
              each family's gpu-lease preset, its providers side by side in one run, the goals as ratios (bench.csv)
  papers      scripts/gpu_papers.py: predicted GPU-hours of every paper's `paper` preset (paper_hours.csv)
--rehearse (CI, no GPU) runs env, build (a temporary target, sm_90), collect (the GPU test files collected with the
interpreter off), kernels (benches/triton_resources.py --check: every Triton kernel compiled for sm_90 as launched,
checked against the H100's limits, no bf16 spill, with the wgmma / cp.async use read from the machine code),
kernels36 (the same under triton 3.6.0, the GPU image's version, in its own venv: scripts/triton_venv.sh), lease
(spherekit.bench.lease: every gpu-lease grid against its step's limit), then the bench steps and papers with
--rehearse: the same commands on CPU at tiny sizes, and run (scripts/gpu_run.py --rehearse: the GPU run's in-process
steps on CPU through the Triton interpreter). The steps after build run in an environment without the packages the
GPU machine lacks (OPTIONAL), with <work>/site first on the path, as on the GPU.

Results (--out, default $OUT; at most 8 files, as a device call returns them): summary.txt (the table printed
last), steps.json (status, seconds and note per step), env.txt, tests.csv, ceilings.csv, bench.csv (every family's
rows), paper_hours.csv, logs.tar.gz (the logs, the junit file, the raw CSVs). They are rewritten after every step,
so a command killed at its limit still returns what was done.

Resume: --resume [DIR] copies DIR's results (default: --out's, else the work folder's) and skips the steps its
steps.json records as ok (build again when its target is gone); --steps a,b runs only those. --deadline-s stops
starting steps, and cuts the running one's limit, so the summary is printed before the device's 10-minute limit.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU_STEPS = ("env", "build", "tests", "ceilings", "contrastive", "sim_map", "ngpt", "verifier_train", "papers")
REHEARSAL_STEPS = ("env", "build", "collect", "kernels", "kernels36", "lease", "ceilings", "contrastive", "sim_map",
                   "ngpt", "verifier_train", "papers", "run")
LIMIT_S = dict(env=30, build=180, tests=150, collect=180, kernels=420, kernels36=600, lease=60, ceilings=40,
               contrastive=120, sim_map=80, ngpt=150, verifier_train=100, papers=150,
               run=600)  # bench limits: spherekit.bench.lease
REHEARSAL_LIMIT_S = dict(LIMIT_S, build=900, collect=300, kernels=600, kernels36=900, contrastive=300, sim_map=300,
                         ngpt=300, verifier_train=300, papers=300, run=900)  # 2 shared cores, cold caches
OPTIONAL = ("datasets", "faiss", "bm25s", "spacy", "nltk")  # absent on the GPU machine
RESULT_FILES = ("env.txt", "tests.csv", "ceilings.csv", "bench.csv", "paper_hours.csv")
BENCH = {"contrastive": "contrastive", "sim_map": "sim_map", "ngpt": "ngpt", "verifier_train": "verifier_throughput"}


class Check:
    """One run: the folders, the environment of its subprocesses, the steps' records."""

    def __init__(self, args):
        self.rehearse, self.started = args.rehearse, time.monotonic()
        self.deadline = self.started + args.deadline_s
        self.work = Path(args.work)
        self.out = Path(args.out or os.environ.get("OUT") or self.work / "out")
        self.site = self.work / "site"
        self.python = sys.executable
        self.records: dict[str, dict] = {}
        for d in (self.work / "logs", self.work / "bench", self.out):
            d.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- environment of the steps
    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
        paths = [str(self.site)] + ([str(self.work / "boot")] if self.rehearse else [])
        env.update(PYTHONPATH=os.pathsep.join(paths), SPHEREKIT_TRITON_INTERPRET="0", PYTHONUNBUFFERED="1")
        env.update(extra)
        return env

    def hide_optional(self) -> None:
        """<work>/boot/sitecustomize.py: every Python started with it on the path sees site-packages without
        OPTIONAL and without the editable spherekit (a symlink copy, <work>/pkgs), so <work>/site serves spherekit."""
        import site

        real = [p for p in site.getsitepackages() if Path(p).is_dir()]
        pkgs, boot = self.work / "pkgs", self.work / "boot"
        shutil.rmtree(pkgs, ignore_errors=True)
        pkgs.mkdir(parents=True)
        boot.mkdir(exist_ok=True)
        hidden = re.compile(rf"^(_?editable|__editable__|spherekit|{'|'.join(OPTIONAL)})", re.IGNORECASE)
        for folder in real:
            for entry in Path(folder).iterdir():
                if not hidden.match(entry.name) and not (pkgs / entry.name).exists():
                    (pkgs / entry.name).symlink_to(entry)
        (boot / "sitecustomize.py").write_text(
            '"""Written by scripts/gpu_check.py --rehearse: site-packages without the optional packages."""\n'
            "import sys\n"
            f"sys.path[:] = [p for p in sys.path if p not in {real!r}] + [{str(pkgs)!r}]\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__]\n")

    # ---------------------------------------------------------------- running a step
    def limit(self, name: str) -> float:
        """Seconds step `name` may run: its limit, cut to the deadline."""
        return min((REHEARSAL_LIMIT_S if self.rehearse else LIMIT_S)[name], self.deadline - time.monotonic() - 15)

    def run(self, name: str, cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[int, str]:
        """Run cmd with the step's limit (cut to the deadline); (exit code or -9 on timeout, log tail)."""
        limit = self.limit(name)
        log = self.work / "logs" / f"{name}.log"
        with open(log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n")
            f.flush()
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env or self.env(), cwd=cwd,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=max(limit, 1))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = -9
                f.write(f"\n[gpu_check] killed after {limit:.0f} s (the step's limit)\n")
        lines = log.read_text(errors="replace").splitlines()
        return rc, "\n".join(lines[-15:])

    # ---------------------------------------------------------------- results
    def publish(self) -> None:
        (self.out / "steps.json").write_text(json.dumps({"rehearse": self.rehearse, "steps": self.records}, indent=1))
        rows = []
        for path in sorted((self.work / "bench").glob("*.csv")):
            lines = path.read_text().splitlines()
            rows += lines if not rows else lines[1:]
        if rows:
            (self.out / "bench.csv").write_text("\n".join(rows) + "\n")
        with tarfile.open(self.out / "logs.tar.gz.tmp", "w:gz") as tar:
            for part in ("logs", "bench", "junit.xml", "kernels_bf16.csv", "kernels36_bf16.csv", "env.txt"):
                if (self.work / part).exists():
                    tar.add(self.work / part, arcname=part)
        os.replace(self.out / "logs.tar.gz.tmp", self.out / "logs.tar.gz")
        (self.out / "summary.txt").write_text(self.summary())

    def summary(self) -> str:
        lines = steps_table("spherekit gpu_check" + (" --rehearse (no GPU)" if self.rehearse else ""), self.records, 15)
        goals = [g for r in self.records.values() for g in r.get("goals", [])]
        if goals:
            lines += ["", "goals (ratios measured in this run) and predictions:"] + [f"  {g}" for g in goals]
        lines.append(f"\nresults in {self.out} ({time.monotonic() - self.started:.0f} s in all)")
        return "\n".join(lines) + "\n"


def steps_table(title: str, records: dict, width: int) -> list[str]:
    """The printed table of a run's steps: title, head, rule, one line per step (status, seconds, note)."""
    head = f"{'step':<{width}} {'status':<9} {'seconds':>7}  note"
    return [title, head, "-" * len(head)] + [f"{name:<{width}} {r['status']:<9} {r['seconds']:>7.0f}  {r['note']}"
                                             for name, r in records.items()]


# ------------------------------------------------------------------------------------------------
# the steps: each returns (ok, note[, goal lines])
# ------------------------------------------------------------------------------------------------

def step_env(c: Check):
    code = ("import sys, torch, triton, numpy, transformers\n"
            "print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda)\n"
            "print('triton', triton.__version__); print('numpy', numpy.__version__)\n"
            "print('transformers', transformers.__version__)\n"
            "if torch.cuda.is_available():\n"
            "    p = torch.cuda.get_device_properties(0)\n"
            "    print('gpu', p.name, 'sm_%d%d' % (p.major, p.minor), p.multi_processor_count, 'SMs',"
            " round(p.total_memory / 2**30, 1), 'GiB')\n"
            "else:\n    print('gpu none')\n")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cmds = [[c.python, "-c", code], [nvcc, "--version"], [c.python, "-m", "pip", "list"]]
    if shutil.which("nvidia-smi"):
        cmds.insert(0, ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv"])
    rc = 0
    for cmd in cmds:
        if Path(cmd[0]).exists() or shutil.which(cmd[0]):
            rc |= c.run("env", cmd, env=os.environ.copy())[0]
    text = (c.work / "logs" / "env.log").read_text()
    (c.work / "env.txt").write_text(text)
    shutil.copy(c.work / "env.txt", c.out / "env.txt")
    gpu = re.search(r"^gpu (.*)$", text, re.M)
    return rc == 0, gpu.group(1) if gpu else "no python summary"


def _arch(c: Check) -> str:
    if c.rehearse:
        return "90"
    out = subprocess.run([c.python, "-c", "import torch; print('%d%d' % torch.cuda.get_device_capability())"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "90"


LOAD = ("import spherekit, spherekit._C as C, spherekit._cuda as G, torch\n"
        "assert spherekit.__file__.startswith({site!r}), spherekit.__file__\n"
        "info = G.build_info(); print('spherekit._cuda', info, 'devices', G.device_count())\n"
        "assert not torch.cuda.is_available() or G.device_count() > 0, 'spherekit._cuda sees no device'\n")


def built(c: Check) -> bool:
    return c.site.is_dir() and any(c.site.glob("spherekit/_cuda*")) and any(c.site.glob("spherekit/_C*"))


def build_dir(c: Check) -> Path:
    """CMake's folder, one per checkout (a CMake cache belongs to one source folder): incremental on a rerun."""
    return c.work / f"build-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]}"


def step_build(c: Check):
    arch = _arch(c)
    shutil.rmtree(c.site, ignore_errors=True)
    env = dict(os.environ, SPHEREKIT_WITH_CUDA="ON", SPHEREKIT_CUDA_ARCHS=arch)
    env.pop("PYTHONPATH", None)
    rc, tail = c.run("build", [c.python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                               "--no-compile", "--target", str(c.site), "--config-settings", f"build-dir={build_dir(c)}", "."],
                     env=env)
    if rc != 0:
        return False, f"pip install failed (rc {rc}): {tail.splitlines()[-1] if tail else ''}"
    if not built(c):
        return False, "built without spherekit._cuda (nvcc not found?): see logs/build.log"
    rc, tail = c.run("build", [c.python, "-c", LOAD.format(site=str(c.site))], cwd=c.work)
    return rc == 0, f"sm_{arch}: " + (tail.splitlines()[-1] if rc == 0 else f"does not load: {tail[-300:]}")


def _plugins(c: Check) -> list[str]:
    """pytest-timeout and pytest-xdist options where the plugins exist (the GPU machine has both)."""
    out, have = [], subprocess.run([c.python, "-c", "import pytest_timeout, xdist"], capture_output=True).returncode
    if have == 0:
        out = ["--timeout", "120", "-n", "4"]
    return out


def junit_rows(path: Path) -> list[dict]:
    """tests.csv rows from a junit file: nodeid, outcome (passed / failed / error / skipped), seconds, message."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = " ".join((child.get("message") or child.text or "").split())[:300]
        node = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        rows.append(dict(nodeid=node, outcome=outcome, seconds=case.get("time", ""), message=message))
    return rows


def step_tests(c: Check):
    junit = c.work / "junit.xml"
    junit.unlink(missing_ok=True)
    cmd = [c.python, "-m", "pytest", "-m", "gpu", "tests", "-p", "no:cacheprovider", "-q", "-rfE",
           f"--junitxml={junit}"] + _plugins(c)
    rc, tail = c.run("tests", cmd, env=c.env(SPHEREKIT_REQUIRE_CUDA="1"))
    if junit.exists():
        rows = junit_rows(junit)
        with open(c.out / "tests.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["nodeid", "outcome", "seconds", "message"])
            writer.writeheader()
            writer.writerows(rows)
    last = [ln for ln in tail.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    return rc == 0, (last[-1].strip("= ") if last else f"pytest rc {rc}: {tail.splitlines()[-1] if tail else ''}")


def step_collect(c: Check):
    rc, tail = c.run("collect", [c.python, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "tests", "-p",
                                 "no:cacheprovider"], env=c.env(SPHEREKIT_REQUIRE_CUDA="1"))
    last = [ln for ln in tail.splitlines() if "collected" in ln or "error" in ln.lower()]
    return rc == 0, (last[-1] if last else f"pytest rc {rc}") + f" without {', '.join(OPTIONAL)}"


def step_kernels(c: Check):
    csv_path = c.work / "kernels_bf16.csv"
    rc, tail = c.run("kernels", [c.python, "benches/triton_resources.py", "--arch", "90", "--dtype", "bf16", "--check",
                                 "--csv", str(csv_path)])
    return rc == 0, tail.splitlines()[-1] if tail else f"rc {rc}"


GPU_TRITON = "3.6.0"  # the GPU image's triton


def step_kernels36(c: Check):
    """benches/triton_resources.py --check under the GPU image's triton, in a venv beside the project's (the venv is
    made by scripts/triton_venv.sh from PyPI on first use, then reused)."""
    venv = c.work / f"venv-triton{GPU_TRITON}"
    rc, tail = c.run("kernels36", ["bash", "scripts/triton_venv.sh", GPU_TRITON, str(venv)],
                     env=dict(os.environ, PYTHON=c.python))
    if rc != 0:
        return False, f"no triton {GPU_TRITON} venv: {tail.splitlines()[-1] if tail else rc}"
    csv_path = c.work / "kernels36_bf16.csv"
    rc, tail = c.run("kernels36", [str(venv / "bin" / "python"), "benches/triton_resources.py", "--arch", "90",
                                   "--dtype", "bf16", "--check", "--csv", str(csv_path)])
    return rc == 0, tail.splitlines()[-1] if tail else f"rc {rc}"


def step_lease(c: Check):
    rc, tail = c.run("lease", [c.python, "-m", "spherekit.bench.lease"])
    return rc == 0, "every gpu-lease grid fits its step's limit" if rc == 0 else tail


def step_ceilings(c: Check):
    sizes = ["--device", "cpu", "--copy-mib", "16", "--n", "256"] if c.rehearse else []
    rc, tail = c.run("ceilings", [c.python, "-m", "spherekit.bench.ceilings", "--out", str(c.work)] + sizes)
    if (c.work / "ceilings.csv").exists():
        shutil.copy(c.work / "ceilings.csv", c.out / "ceilings.csv")
    return rc == 0, "; ".join(" ".join(ln.split()[:3]) for ln in tail.splitlines()[-3:])  # copy, triad, matmul


GOAL = re.compile(r"^\s*(PASS|FAIL|N/A)\s|^\s+B=\s*\d+: spherekit")


def step_bench(c: Check, family: str):
    cmd = [c.python, "-m", f"spherekit.bench.{BENCH[family]}", "--preset", "gpu-lease", "--out", str(c.work / "bench"),
           "--timeout-s", "90"]
    if family != "verifier_train":
        cmd.append("--no-progress")
    if family == "contrastive":
        cmd.append("--no-plot")
    if c.rehearse:
        cmd.append("--rehearse")
    table = c.work / "bench" / f"{family}.csv"
    before = len(list(csv.DictReader(open(table)))) if table.exists() else 0
    rc, _ = c.run(family, cmd)
    rows = list(csv.DictReader(open(table)))[before:] if table.exists() else []
    counts = {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})}
    log = (c.work / "logs" / f"{family}.log").read_text(errors="replace").splitlines()
    goals = [f"{family}: {ln.strip()}" for ln in log if GOAL.search(ln)]
    bad = {"error"} | ({"oom", "timeout"} if c.rehearse else set())  # GPU-only providers skip when rehearsing
    note = f"{len(rows)} rows: " + ", ".join(f"{n} {s}" for s, n in counts.items()) if rows else f"no rows (rc {rc})"
    return rc == 0 and bool(rows) and not bad & set(counts), note, goals


def step_papers(c: Check):
    cmd = [c.python, "scripts/gpu_papers.py", "--out", str(c.work)] + (["--rehearse"] if c.rehearse else [])
    rc, tail = c.run("papers", cmd)
    if (c.work / "paper_hours.csv").exists():
        shutil.copy(c.work / "paper_hours.csv", c.out / "paper_hours.csv")
    totals = [ln for ln in tail.splitlines() if "paper preset:" in ln]
    return rc == 0, f"{len(totals)} papers predicted", [f"papers: {' '.join(t.split())}" for t in totals]


def step_run(c: Check):
    """scripts/gpu_run.py --rehearse: the GPU run's in-process steps on CPU at tiny sizes through the Triton interpreter
    (build and check are this script's own); its results go into logs.tar.gz (the results folder holds 8 files)."""
    out = c.work / "logs" / "gpu_run"
    shutil.rmtree(out, ignore_errors=True)
    steps = "env,precompile,correctness,ceilings,goals,sweeps,profile"
    rc, tail = c.run("run", [c.python, "scripts/gpu_run.py", "--rehearse", "--steps", steps, "--out", str(out),
                             "--work", str(c.work / "gpu_run"), "--deadline-s", str(max(c.limit("run") - 20, 10))])
    state = json.loads((out / "steps.json").read_text()).get("steps", {}) if (out / "steps.json").exists() else {}
    bad = sorted(name for name, r in state.items() if r.get("status") != "ok")
    note = f"{len(state)} steps, {len(bad)} not ok" + (f" ({', '.join(bad)})" if bad else "")
    return rc == 0 and bool(state) and not bad, note


def dispatch(c: Check, name: str):
    if name in BENCH:
        return step_bench(c, name)
    return globals()[f"step_{name}"](c)


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------

def resume_from(c: Check, folder: Path) -> dict:
    """The ok steps recorded in folder/steps.json (its result files copied into c.out)."""
    state = folder / "steps.json"
    if not state.exists():
        return {}
    if folder.resolve() != c.out.resolve():
        for name in RESULT_FILES + ("logs.tar.gz",):
            if (folder / name).exists():
                shutil.copy(folder / name, c.out / name)
    done = json.loads(state.read_text()).get("steps", {})
    return {k: v for k, v in done.items() if v.get("status") == "ok"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rehearse", action="store_true", help="the steps that need no GPU (CI)")
    ap.add_argument("--out", help="results folder (default: $OUT, else <work>/out)")
    ap.add_argument("--work", default=os.environ.get("GPU_CHECK_WORK", "/tmp/spherekit-gpu-check"),
                    help="build target, logs, raw results (default: %(default)s)")
    ap.add_argument("--steps", help="comma-separated subset of the steps, in their order")
    ap.add_argument("--resume", nargs="?", const="", default=None,
                    help="skip the steps recorded ok in DIR/steps.json (default DIR: the results folder, else work)")
    ap.add_argument("--deadline-s", type=float,
                    help="no step starts or runs past this many seconds (default 560; rehearsal 1800)")
    args = ap.parse_args(argv)
    args.deadline_s = args.deadline_s or (1800.0 if args.rehearse else 560.0)
    c = Check(args)
    order = REHEARSAL_STEPS if args.rehearse else GPU_STEPS
    wanted = args.steps.split(",") if args.steps else list(order)
    unknown = sorted(set(wanted) - set(order))
    if unknown:
        ap.error(f"unknown steps {unknown}; choose from {','.join(order)}")
    done = {}
    if args.resume is not None:
        for folder in ([Path(args.resume)] if args.resume else [c.out, c.work / "out"]):
            done = resume_from(c, folder)
            if done:
                break
    if args.rehearse:
        c.hide_optional()
    c.records.update(done)
    stop = None
    for name in order:
        if name not in wanted or (name in done and not (name == "build" and not built(c))):
            continue
        if name not in ("env", "build") and not built(c):
            stop = stop or "no build: run the build step first"
        if stop or time.monotonic() > c.deadline - 30:
            why = stop or "no time left (resume with --resume)"
            c.records[name] = dict(status="not run", seconds=0.0, note=why)
            continue
        print(f"[gpu_check] {name} ...", flush=True)
        (c.work / "logs" / f"{name}.log").unlink(missing_ok=True)  # a log (and its tail, the notes) of this run only
        t0 = time.monotonic()
        ok, note, *goals = dispatch(c, name)
        c.records[name] = dict(status="ok" if ok else "FAILED", seconds=round(time.monotonic() - t0, 1),
                               note=" ".join(str(note).split())[:160], goals=goals[0] if goals else [])
        print(f"[gpu_check] {name}: {c.records[name]['status']} in {c.records[name]['seconds']:.0f} s: "
              f"{c.records[name]['note']}", flush=True)
        if not ok and name == "build":
            stop = "build failed"
        c.publish()
    c.publish()
    print()
    print(c.summary(), end="")
    return 0 if all(r["status"] == "ok" for r in c.records.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
