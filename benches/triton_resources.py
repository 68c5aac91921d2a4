"""Compile every Triton kernel as the launchers launch it, for an NVIDIA target, WITHOUT a GPU, and check its resources.

    python benches/triton_resources.py [--arch 90] [--dtype bf16] [--check] [--csv PATH] [--jobs 2] [--coverage]
    bash scripts/triton_venv.sh 3.6.0 && /tmp/venv-triton3.6.0/bin/python benches/triton_resources.py --check
                                                      # the same under the GPU image's triton (3.6.0)

How: each scenario below calls a launcher of kernels/<op>.py (the GPU configuration: TRITON_INTERPRET unset) on small
CPU tensors; the kernel launches are recorded instead of run, and each distinct one is compiled with Triton's own
argument binder for GPUTarget("cuda", arch, 32). So a compile sees what a real launch gets: the launcher's block sizes,
warps, stages and flags, the all-pairs / swap variants, ints equal to 1 as constants and 16-byte alignment of pointers
and sizes. Reported per kernel: registers and stack frame (spill bytes: Triton kernels keep no local arrays) from
cuobjdump -res-usage, and the dynamic shared memory Triton requests at launch (metadata.shared; cuobjdump's static
figure is always 1,024 B on sm_90); and what the machine code does, counted in its SASS (cuobjdump -sass): wgmma
(HGMMA: Hopper's warpgroup tensor-core products), mma (HMMA: the pre-Hopper mma.sync path, slower on sm_90 for large
tiles), cp_async (LDGSTS: asynchronous global-to-shared copies, what Triton's software pipelining of num_stages > 1
emits), tma (UTMALDG / UBLKCP: the bulk tensor copy engine) and local (LDL + STL: local-memory traffic, i.e. spills).
pipelined: cp_async or tma present. The triton column says which compiler produced the row.

--check fails (exit 1) when a kernel passes the H100's limits (255 registers per thread, 64 K registers per block,
227 KB of shared memory per block), when a bf16 kernel spills on sm_90 beyond ALLOWED_SPILLS, or when a kernel of
spherekit.kernels (a JIT function named *_kernel) is launched by no scenario (so it was never compiled here). CI runs
it from scripts/gpu_check.sh --rehearse under the pinned triton and under 3.6.0 (the GPU image's): a kernel that does
not compile for the GPU fails there, which the CPU interpreter cannot see. Register counts are a proxy, not a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction, create_function_from_signature

H100 = dict(registers=255, block_registers=65536, shared_bytes=227 * 1024)
# (kernel, flags) -> why a spill on sm_90 bf16 is accepted; --check fails on any other bf16 spill
_TUNED = "measured faster with this spill on an H200 by scripts/gpu_tune.py (benches/results/gpu/h200_tune.csv)"
ALLOWED_SPILLS: dict[tuple[str, str], str] = {
    ("_info_nce_bwd_dq_kernel", "plain"): f"128 x 128 tiles: dq 5.0 ms vs 14.2 ms for 64 x 64 without spills; {_TUNED}",
    ("_info_nce_bwd_dc_kernel", "plain"): f"128 x 128 tiles: dc 5.1 ms vs 15.1 ms for 64 x 64 without spills; {_TUNED}",
    ("_info_nce_bwd_dq_kernel", "HAS_HN+HAS_BCE+NEED_DH"):
        f"128 x 128 tiles, one hard negative: dq 8.5 ms vs 28.3 ms for 64 x 64; {_TUNED}",
    ("_info_nce_bwd_dq_kernel", "HAS_HN+HN_SOFTMAX+NEED_DH"):
        f"128 x 128 tiles, one hard negative (its BCE variant was measured: 8.5 ms vs 28.3 ms); {_TUNED}",
}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
_LAUNCHES: list[tuple[str, JITFunction, tuple, dict]] = []
_scenario = ""


def _record(self, *args, grid, warmup, **kwargs):
    """Stands in for JITFunction.run: keep the launch, run nothing, and zero the tensors it would have read and
    written, so what runs after it (aten ops on its outputs: indices, lengths) sees defined values, never
    uninitialised memory (on a GPU a garbage index would trip a device-side assert)."""
    _LAUNCHES.append((_scenario, self, args, kwargs))
    for a in args:
        if isinstance(a, torch.Tensor) and a.numel():
            with contextlib.suppress(RuntimeError):  # an expanded (stride-0) view cannot be written
                a.data.zero_()  # .data: no version bump, so autograd never sees an in-place change


# ------------------------------------------------------------------------------------------------
# scenarios: the launches the ops make (training and inference paths)
# ------------------------------------------------------------------------------------------------

def _unit(*shape, dtype):
    return torch.nn.functional.normalize(torch.randn(*shape), dim=-1).to(dtype)


def _info_nce(dtype):
    from spherekit.kernels import info_nce as K

    B, D = 256, 768
    q, c = _unit(B, D, dtype=dtype), _unit(B, D, dtype=dtype)
    t, tau = torch.arange(B), torch.tensor(0.05)
    labels, bias = torch.arange(B) % 7, torch.randn(7, 7)
    cases = {"plain": (None, None, None, False, 0.0),
             "mnrl-hn": (_unit(B, 1, D, dtype=dtype), None, None, True, 0.0),
             "hn-bce": (_unit(B, 1, D, dtype=dtype), None, None, False, 0.5),
             "full": (_unit(B, 1, D, dtype=dtype), labels, bias, True, 0.5),
             "full k=5": (_unit(B, 5, D, dtype=dtype), labels, bias, True, 0.5)}
    for name, (h, ql, lb, softmax, bce) in cases.items():
        yield f"info_nce {name}", lambda: (
            K.info_nce_fwd(q, c, t, h, tau, ql, ql, lb, hn_softmax=softmax, bce_weight=bce, bce_scale=20.0,
                           bce_bias=0.0),
            K.info_nce_bwd(torch.ones(B), q, c, t, h, tau, ql, ql, lb, torch.zeros(B), hn_softmax=softmax,
                           bce_weight=bce, bce_scale=20.0, bce_bias=0.0, need_dq=True, need_dc=True,
                           need_dh=h is not None, need_dtau=True))


def _info_nce_rows(dtype):
    """The row kernel of the chunked one-pass InfoNCE at the GPU goal's chunk (1,024 rows of N = 16,384: its launch
    options depend on N), each feature combination the orchestrator launches."""
    from spherekit.kernels import info_nce_rows as K

    R, N = 1024, 16384
    t, tau = torch.arange(R), torch.tensor(0.05)
    labels, bias = torch.arange(N) % 7, torch.randn(7, 7)
    cases = {"plain": (None, None, None, False, 0.0, False), "dtau": (None, None, None, False, 0.0, True),
             "mnrl-hn tau": (torch.zeros(R, 1), None, None, True, 0.0, True),
             "hn-bce": (torch.zeros(R, 1), None, None, False, 0.5, False),
             "full k=5": (torch.zeros(R, 5), labels, bias, True, 0.5, True)}
    for name, (y, cl, lb, softmax, bce, stat) in cases.items():
        yield f"info_nce_rows {name}", lambda: K.info_nce_rows(
            torch.zeros(R, N, dtype=dtype), t, None if cl is None else cl[:R], cl, lb, tau, y, hn_softmax=softmax,
            bce_weight=bce, bce_scale=20.0, bce_bias=0.0, need_stat=stat)


def _gram_rows(dtype):
    """The row kernels of the chunked Gram losses at a chunk of 1,024 rows of B = 16,384."""
    from spherekit.kernels import gram_rows as K

    R, B = 1024, 16384
    labels, tau, npos = torch.arange(B) % 12, torch.tensor(0.05), torch.full((B,), 3)
    for name, lb in (("plain", None), ("bias", torch.randn(12, 12))):
        shift = None if lb is None else torch.zeros(B)
        yield f"sincere_rows {name}", lambda: K.sincere_rows(torch.zeros(R, B, dtype=dtype), slice(0, R), labels,
                                                             tau, lb, shift, npos, need_stat=True)
    yield "circular_cse_rows", lambda: K.circular_cse_rows(torch.zeros(R, B, dtype=dtype), slice(0, R), labels,
                                                           torch.zeros(B), torch.zeros(B), margin=0.1)


def _gram(dtype):
    from spherekit.kernels import circular_cse, sincere

    B, D = 256, 768
    e, labels, tau, v = _unit(B, D, dtype=dtype), torch.arange(B) % 5, torch.tensor(0.05), torch.zeros(B)
    for name, lb in (("plain", None), ("bias", torch.randn(5, 5))):
        shift = None if lb is None else torch.zeros(B)
        yield f"sincere {name}", lambda: (
            sincere.sincere_fwd(e, labels, tau, lb, shift),
            sincere.sincere_bwd(v, e, labels, tau, lb, shift, v, v, v, need_de=True, need_dtau=True))
    yield "circular_cse", lambda: (circular_cse.circular_cse_fwd(e, labels, v, v, margin=0.1),
                                   circular_cse.circular_cse_bwd(v, e, labels, v, v, margin=0.1))


def _ngpt(dtype):
    from spherekit.kernels import ngpt as K

    for D in (768, 4096, 8192, 16384):
        h, f, g = (torch.randn(8, D).to(dtype) for _ in range(3))
        alpha = torch.rand(D)
        yield f"ngpt d={D}", lambda: (
            K.geodesic_residual_fwd(h, f, alpha, eps=1e-6),
            K.geodesic_residual_bwd(g, h, f, alpha, torch.ones(8, 3), eps=1e-6),
            K.l2_normalize_fwd(h, eps=1e-6), K.l2_normalize_bwd(g, h, torch.ones(8), eps=1e-6))
    yield "ngpt renormalize", lambda: K.renormalize_([torch.randn(64, 4096, 1).to(dtype), torch.randn(1, 64, 4096)],
                                                     eps=1e-6)


def _tokens(dtype):
    from spherekit.kernels import maxsim, sim_map, soft_align

    for h in (128, 768):
        q, d, d4 = _unit(4, 32, h, dtype=dtype), _unit(4, 180, h, dtype=dtype), _unit(4, 3, 180, h, dtype=dtype)
        qm, dm, dm4 = torch.ones(4, 32, dtype=torch.bool), torch.ones(4, 180, dtype=torch.bool), \
            torch.ones(4, 3, 180, dtype=torch.bool)
        arg = torch.zeros(4, 3, 32, dtype=torch.int32)
        long4 = _unit(4, 3, 300, h, dtype=dtype)
        yield f"maxsim h={h}", lambda: (
            maxsim.maxsim_fwd(q, qm, d4, dm4, shared=False),  # training: mean, argmax stored
            maxsim.maxsim_fwd(q[:1], None, d4[:1], dm4[:1], shared=True, mean=False, store_argmax=False),  # rerank
            maxsim.maxsim_fwd(q, qm, long4, None, shared=False, store_argmax=False),  # n > 256: the tile loop
            maxsim.maxsim_bwd(torch.ones(4, 3), q, qm, d4, dm4, arg, shared=False))
        yield f"soft_align h={h}", lambda: (
            soft_align.soft_align_fwd(q, qm, d, dm, 0.1, 0.05),
            soft_align.soft_align_bwd(torch.ones(4), q, qm, d, dm, 0.1, 0.05, torch.zeros(4, 32), torch.zeros(4, 32)))
        channels = ("sim", "rowmax", "colmax")
        for all_pairs in (False, True):
            for patch in (None, 8):
                P = 16 if all_pairs else 4
                shape = (P, 32, 180, 3) if patch is None else (P, 4 * 23, 8 * 8 * 3)
                yield f"sim_map h={h} patch={patch} all_pairs={all_pairs}", lambda: (
                    sim_map.sim_map_fwd(q, qm, d, dm, patch=patch, channels=channels, clip=True, out_dtype=dtype,
                                        all_pairs=all_pairs),
                    sim_map.sim_map_bwd(torch.ones(shape, dtype=dtype), q, qm, d, dm, patch=patch, channels=channels,
                                        clip=True, all_pairs=all_pairs))


SCENARIOS = (_info_nce, _info_nce_rows, _gram_rows, _gram, _ngpt, _tokens)


def record_launches(calls) -> list[tuple[str, JITFunction, tuple, dict]]:
    """Every Triton kernel launch the (label, call) pairs make, recorded (JITFunction.run stands in, and
    InterpretedFunction.run under TRITON_INTERPRET=1: no kernel runs; aten ops around them do, on whatever device
    their tensors live). An interpreted kernel is recorded as the JITFunction of the same source (launch_spec)."""
    global _scenario
    _LAUNCHES.clear()
    originals = JITFunction.run, InterpretedFunction.run
    JITFunction.run = InterpretedFunction.run = _record
    try:
        for _scenario, call in calls:
            call()
    finally:
        JITFunction.run, InterpretedFunction.run = originals
    return [(label, jit_function(fn), args, kwargs) for label, fn, args, kwargs in _LAUNCHES]


def jit_function(fn) -> JITFunction:
    """fn itself, or for a kernel the interpreter wraps, a JITFunction of the same function (for binding its
    arguments; the compile itself runs where the interpreter is off)."""
    if isinstance(fn, JITFunction):
        return fn
    return JITFunction(fn.fn, **fn.kwargs)


def capture(dtype: torch.dtype) -> list[tuple[str, JITFunction, tuple, dict]]:
    """Every kernel launch of the scenarios, recorded (nothing runs)."""
    return record_launches(call for scenarios in SCENARIOS for call in scenarios(dtype))


# ------------------------------------------------------------------------------------------------
# compiling one recorded launch
# ------------------------------------------------------------------------------------------------

def _bind(fn: JITFunction, args: tuple, kwargs: dict, target: GPUTarget):
    """(signature, constexprs, attrs, options) exactly as JITFunction.run computes them for `target`."""
    from triton import knobs

    backend = make_backend(target)
    kwargs = dict(kwargs, debug=kwargs.get("debug", fn.debug) or knobs.runtime.debug)
    if hasattr(knobs.compilation, "instrumentation_mode"):
        kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    return signature, constexprs, attrs, options


def flags_of(fn: JITFunction, constexprs: dict) -> str:
    """The launch's boolean switches that are on (HAS_LABELS+HAS_BIAS+...), or 'plain'."""
    names = [p.name for p in fn.params]
    on = [names[path[0]] for path, v in constexprs.items() if v is True and names[path[0]].isupper()]
    return "+".join(on) or "plain"


def _cuobjdump(cubin: bytes, flag: str) -> str:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, flag, f.name], capture_output=True, text=True, check=True).stdout


def _usage(cubin: bytes) -> dict:
    out = _cuobjdump(cubin, "-res-usage")
    for line in out.splitlines():
        if "REG:" in line:
            return dict(item.split(":", 1) for item in line.split() if ":" in item)
    raise RuntimeError(f"cuobjdump printed no resource usage:\n{out}")


SASS_COUNTS = {  # row column -> SASS opcodes counted (whole words, any modifiers)
    "wgmma": ("HGMMA",), "mma": ("HMMA",), "cp_async": ("LDGSTS",), "tma": ("UTMALDG", "UBLKCP"),
    "local": ("LDL", "STL"),
}


def sass_counts(sass: str) -> dict:
    """{column: how many instructions of SASS_COUNTS[column]} in a cuobjdump -sass listing, and pipelined
    (cp_async or tma present)."""
    import re

    out = {col: sum(len(re.findall(rf"\b{op}\b", sass)) for op in ops) for col, ops in SASS_COUNTS.items()}
    out["pipelined"] = bool(out["cp_async"] or out["tma"])
    return out


def compile_launch(scenario: str, fn: JITFunction, args: tuple, kwargs: dict, dtype: str, arch: int) -> dict:
    target = GPUTarget("cuda", arch, 32)
    signature, constexprs, attrs, options = _bind(fn, args, kwargs, target)
    t0 = time.perf_counter()
    compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)
    seconds = time.perf_counter() - t0
    usage = _usage(compiled.asm["cubin"])
    names = [p.name for p in fn.params]
    sizes = {names[p[0]]: v for p, v in constexprs.items() if names[p[0]].startswith("BLOCK_")}
    return dict(kernel=fn.fn.__name__, flags=flags_of(fn, constexprs), scenario=scenario, dtype=dtype,
                arch=f"sm_{arch}", triton=triton.__version__, num_warps=compiled.metadata.num_warps,
                num_stages=compiled.metadata.num_stages, blocks=" ".join(f"{k[6:]}={v}" for k, v in sizes.items()),
                registers=int(usage["REG"]), spill_bytes=int(usage["STACK"]),
                shared_bytes=int(compiled.metadata.shared),
                **sass_counts(_cuobjdump(compiled.asm["cubin"], "-sass")), compile_s=round(seconds, 1))


def launch_spec(launch, arch: int) -> dict:
    """What triton.compile needs for one recorded launch, as plain picklable data (a compile in another process)."""
    _, fn, args, kwargs = launch
    signature, constexprs, attrs, options = _bind(fn, args, kwargs, GPUTarget("cuda", arch, 32))
    return dict(module=fn.fn.__module__, name=fn.fn.__name__, signature=signature, constexprs=constexprs, attrs=attrs,
                options=options.__dict__, arch=arch)


def compile_spec(spec: dict) -> dict:
    """Compile a launch_spec (imports the kernel's module); the result lands in Triton's cache, where a later launch
    with the same arguments finds it. Returns {kernel, seconds}."""
    import importlib

    fn = getattr(importlib.import_module(spec["module"]), spec["name"])
    t0 = time.perf_counter()
    triton.compile(ASTSource(fn, spec["signature"], spec["constexprs"], spec["attrs"]),
                   target=GPUTarget("cuda", spec["arch"], 32), options=spec["options"])
    return dict(kernel=spec["name"], seconds=time.perf_counter() - t0)


def _key(launch) -> str:
    _, fn, args, kwargs = launch
    signature, constexprs, attrs, options = _bind(fn, args, kwargs, GPUTarget("cuda", 90, 32))
    return f"{fn.fn.__name__} {signature} {constexprs} {attrs} {options}"


def distinct(launches: list) -> list:
    """One launch per distinct compile (kernel, signature, constants, specialisations, options)."""
    seen, out = set(), []
    for launch in launches:
        key = _key(launch)
        if key not in seen:
            seen.add(key)
            out.append(launch)
    return out


def kernel_functions() -> dict:
    """Every Triton kernel of spherekit.kernels (a JIT function named *_kernel in one of its modules, interpreted
    under TRITON_INTERPRET=1), by name."""
    import importlib
    import pkgutil

    import spherekit.kernels as package

    out = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"spherekit.kernels.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, (JITFunction, InterpretedFunction)) and name.endswith("_kernel"):
                out[name] = value
    return out


def uncovered(launches: list) -> list[str]:
    """The kernels of spherekit.kernels that no scenario launched (they would never be compiled here)."""
    launched = {fn.fn.__name__ for _, fn, _, _ in launches}
    return sorted(set(kernel_functions()) - launched)


def problems(row: dict) -> list[str]:
    """What passes the H100's limits, or a bf16 spill on sm_90 that ALLOWED_SPILLS does not explain, or the compile
    error of a kernel that does not compile."""
    if row.get("error"):
        return [f"does not compile: {row['error']}"]
    out = []
    if row["registers"] > H100["registers"]:
        out.append(f"{row['registers']} registers > {H100['registers']}")
    if row["registers"] * row["num_warps"] * 32 > H100["block_registers"]:
        out.append(f"{row['registers']} registers x {row['num_warps'] * 32} threads > {H100['block_registers']}")
    if row["shared_bytes"] > H100["shared_bytes"]:
        out.append(f"{row['shared_bytes']} B shared memory > {H100['shared_bytes']}")
    if row["spill_bytes"] and row["dtype"] == "bf16" and row["arch"] == "sm_90" \
            and (row["kernel"], row["flags"]) not in ALLOWED_SPILLS:
        out.append(f"spills {row['spill_bytes']} B")
    return out


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------

_WORK: list = []


def _compile_index(job: tuple[int, str, int]) -> dict:
    """compile_launch of the index-th launch; a kernel that does not compile becomes a row with its error (and no
    resources), so every other launch is still compiled and reported."""
    index, dtype, arch = job
    try:
        return compile_launch(*_WORK[index], dtype=dtype, arch=arch)
    except Exception as exc:  # noqa: BLE001 - the compiler's error is the finding
        scenario, fn, _, _ = _WORK[index]
        message = " ".join(str(exc).split())
        cause = message.rfind("Error(")  # the compiler's own message (e.g. AssertionError("Loop-carried ...")), not
        start = message.rfind(" ", 0, cause) + 1 if cause > 0 else max(0, len(message) - 300)  # the source excerpt
        return dict(kernel=fn.fn.__name__, flags="?", scenario=scenario, dtype=dtype, arch=f"sm_{arch}",
                    triton=triton.__version__, error=f"{type(exc).__name__}: {message[start:][:300]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--check", action="store_true", help="exit 1 past the H100's limits or on a bf16 sm_90 spill")
    ap.add_argument("--csv", default=None, help="write the table here (overwritten atomically)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="compiles in parallel")
    ap.add_argument("--coverage", action="store_true",
                    help="only list the kernels no scenario launches (exit 1 if any); nothing is compiled")
    args = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        sys.exit("run without TRITON_INTERPRET=1: the interpreter replaces the compiler")
    t0 = time.perf_counter()
    _WORK[:] = distinct(capture(DTYPES[args.dtype]))
    missing = uncovered(_WORK)
    if args.coverage:
        print(f"{len(_WORK)} distinct launches of {len(kernel_functions())} kernels; launched by no scenario: "
              f"{', '.join(missing) or 'none'}")
        return 1 if missing else 0
    jobs = [(i, args.dtype, args.arch) for i in range(len(_WORK))]
    if args.jobs > 1:
        import multiprocessing

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            rows = list(pool.map(_compile_index, jobs))
    else:
        rows = [_compile_index(job) for job in jobs]
    bad = 0
    for row in rows:
        issues = problems(row)
        bad += bool(issues)
        if row.get("error"):
            print(f"{row['kernel']:<32} {row['arch']} {row['dtype']} [{row['scenario']}]  <-- {issues[0]}", flush=True)
            continue
        ops = " ".join(f"{k}={row[k]}" for k in SASS_COUNTS if row[k])
        print(f"{row['kernel']:<32} {row['flags']:<52} {row['arch']} {row['dtype']} w{row['num_warps']} "
              f"s{row['num_stages']} REG {row['registers']:>3} spill {row['spill_bytes']:>4} B "
              f"shared {row['shared_bytes']:>6} B  {row['blocks']}  {ops or 'no products, no async copies'}  "
              f"[{row['scenario']}]" + (f"  <-- {'; '.join(issues)}" if issues else ""), flush=True)
    for name in missing:
        print(f"{name:<32} launched by no scenario: add one to SCENARIOS", flush=True)
    bad += len(missing)
    print(f"{len(rows)} distinct launches compiled for sm_{args.arch} {args.dtype} with triton {triton.__version__} in "
          f"{time.perf_counter() - t0:.0f} s; {bad} past the limits or not compiled")
    if args.csv:
        tmp = args.csv + ".tmp"
        fields = list(next((r for r in rows if not r.get("error")), rows[0])) + ["error"]
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(fields)), restval="")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, args.csv)
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
