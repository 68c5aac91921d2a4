"""Compile every Triton kernel for an NVIDIA target WITHOUT a GPU and report its resource usage.

    python benches/triton_resources.py [--arch 90] [--dtype bf16] [--csv benches/results/triton_resources.csv]

Each kernel is compiled at the launcher's GPU configuration (kernels/<op>.py:_config with
TRITON_INTERPRET unset) with the specialisation a real launch gets (unit last-dim strides as
constexpr 1, other ints as i32). cuobjdump (shipped with Triton) reads registers, spill stack and
shared memory off the cubin. CI runs it as a build check: a kernel that does not compile for the GPU
fails, which the CPU interpreter cannot see. Register counts are a proxy, not a timing.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import inspect
import os
import subprocess
import sys
import tempfile
import time

if os.environ.get("TRITON_INTERPRET", "0") == "1":
    sys.exit("run without TRITON_INTERPRET=1: the interpreter replaces the compiler")

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

# (module, kernel, feature flags) - every flag combination a launcher can pick should compile.
FULL_HN = dict(HAS_LABELS=True, HAS_BIAS=True, HAS_HN=True, HN_SOFTMAX=True, HAS_BCE=True)
PLAIN_HN = dict(HAS_LABELS=False, HAS_BIAS=False, HAS_HN=False, HN_SOFTMAX=False, HAS_BCE=False)
KERNELS = [
    ("info_nce", "_info_nce_fwd_kernel", PLAIN_HN),
    ("info_nce", "_info_nce_fwd_kernel", FULL_HN),
    ("info_nce", "_info_nce_bwd_dq_kernel", dict(PLAIN_HN, NEED_DH=False)),
    ("info_nce", "_info_nce_bwd_dq_kernel", dict(FULL_HN, NEED_DH=True)),
    ("info_nce", "_info_nce_bwd_dc_kernel", dict(HAS_LABELS=False, HAS_BIAS=False)),
    ("info_nce", "_info_nce_bwd_dc_kernel", dict(HAS_LABELS=True, HAS_BIAS=True)),
    ("sincere", "_sincere_fwd_kernel", dict(HAS_BIAS=False)),
    ("sincere", "_sincere_fwd_kernel", dict(HAS_BIAS=True)),
    ("sincere", "_sincere_bwd_kernel", dict(HAS_BIAS=True, NEED_DE=True, NEED_DTAU=True)),
    ("circular_cse", "_circular_cse_fwd_kernel", {}),
    ("circular_cse", "_circular_cse_bwd_kernel", {}),
]
# nGPT row kernels: one row per program in registers, so compile at the common widths and at MAX_D
# (an optional 4th entry holds the sizes handed to compile_one).
KERNELS += [("ngpt", k, {}, dict(D=D)) for D in (768, 4096, 8192, 16384) for k in (
    "_geodesic_residual_fwd_kernel", "_geodesic_residual_bwd_kernel", "_l2_normalize_fwd_kernel",
    "_l2_normalize_bwd_kernel")] + [("ngpt", "_renormalize_kernel", {}, dict(D=4096))]
# token-similarity kernels at h = 128 and 768 (pointer types from each module's PTR_TYPES table)
_MASKS = dict(HAS_QMASK=True, HAS_DMASK=True)
_MAP = dict(CH_SIM=0, CH_ROW=1, CH_COL=2, CLIP=True, HAS_QMASK=True, HAS_DMASK=True)
_XY = dict(CLIP=True, HAS_XMASK=True, HAS_YMASK=True)
KERNELS += [(mod, k, flags, dict(D=D)) for D in (128, 768) for mod, k, flags in (
    ("maxsim", "_maxsim_fwd_kernel", dict(_MASKS, STORE_MAX=False)),
    ("maxsim", "_maxsim_fwd_kernel", dict(_MASKS, STORE_MAX=True)),
    ("maxsim", "_maxsim_bwd_kernel", dict(NEED_DQ=True, NEED_DD=True)),
    ("soft_align", "_soft_align_fwd_kernel", _MASKS),
    ("soft_align", "_soft_align_bwd_dq_kernel", _MASKS),
    ("soft_align", "_soft_align_bwd_dd_kernel", _MASKS),
    ("sim_map", "_sim_map_fwd_kernel", dict(_MAP, P=1)),
    ("sim_map", "_sim_map_fwd_kernel", dict(_MAP, P=8)),
    ("sim_map", "_sim_map_chansum_kernel", dict(_XY, P=8)),
    ("sim_map", "_sim_map_bwd_kernel", dict(_XY, P=8, CH_SIM=0, HAS_ROW=True, HAS_COL=True)),
)]
EMBEDDING_PTRS = {"q_ptr", "c_ptr", "h_ptr", "e_ptr", "x_ptr"}
INDEX_PTRS = {"t_ptr", "ql_ptr", "cl_ptr", "labels_ptr", "y_ptr"}
EMBEDDING_PTRS |= {"f_ptr", "out_ptr", "dout_ptr", "gh_ptr", "gf_ptr", "gx_ptr"}  # ngpt
INDEX_PTRS |= {"meta_ptr", "starts_ptr"}  # ngpt renormalize_ descriptor tables
UNIT_STRIDES_SUFFIX = ("d", "dv")  # stride over the embedding dimension: contiguous at launch


def _signature(fn, constexprs: dict, dtype: str) -> tuple[dict, dict]:
    sig, const = {}, dict(constexprs)
    for name, param in inspect.signature(fn.fn).parameters.items():
        if name.startswith("stride_") and name.rsplit("_", 1)[1].endswith(UNIT_STRIDES_SUFFIX) and \
                name not in ("stride_lb0", "stride_lb1"):
            const.setdefault(name, 1)
        if name in const:
            sig[name] = "constexpr"
        elif name.endswith("_ptr") and name in getattr(sys.modules[fn.fn.__module__], "PTR_TYPES", {}):
            sig[name] = sys.modules[fn.fn.__module__].PTR_TYPES[name] or "*" + dtype  # module's own table
        elif name.endswith("_ptr"):
            sig[name] = "*" + dtype if name in EMBEDDING_PTRS else ("*i64" if name in INDEX_PTRS else "*fp32")
        elif name.isupper() or name in ("B", "N", "D", "K") or name.startswith("stride_"):
            sig[name] = "i32"
        else:
            sig[name] = "fp32"  # float scalars (bce_weight, margin, ...)
    return sig, const


def compile_one(module: str, kernel: str, flags: dict, dtype: str, arch: int, D: int = 768, K: int | None = None):
    if K is None:
        K = 2 if flags.get("HAS_HN") else 0  # the launcher's config depends on whether hard negatives exist
    mod = importlib.import_module(f"spherekit.kernels.{module}")
    fn = getattr(mod, kernel)
    config = getattr(mod, "_config", None) or importlib.import_module("spherekit.kernels._common").gram_config
    wanted = inspect.signature(config).parameters
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    cfg = dict(config(**{k: v for k, v in dict(D=D, K=K, dtype=torch_dtype).items() if k in wanted}))
    options = dict(num_warps=cfg.pop("num_warps", 4), num_stages=cfg.pop("num_stages", 2))
    params = inspect.signature(fn.fn).parameters
    constexprs = {k: v for k, v in {**cfg, **flags}.items() if k in params}
    if "PRECISION" in params:
        constexprs["PRECISION"] = "ieee" if dtype == "fp32" else "tf32"
    sig, const = _signature(fn, constexprs, dtype)
    names = list(params)
    src = ASTSource(fn=fn, signature=sig, constexprs={(names.index(k),): v for k, v in const.items()})
    t0 = time.perf_counter()
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    seconds = time.perf_counter() - t0
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    usage = {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        out = subprocess.run([cuobjdump, "-res-usage", f.name], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "REG:" in line:
            usage = dict(item.split(":", 1) for item in line.split() if ":" in item)
    return dict(module=module, kernel=kernel, flags="+".join(k for k, v in flags.items() if v is True) or "plain",
                dtype=dtype, arch=f"sm_{arch}", num_warps=options["num_warps"], registers=usage.get("REG"),
                spill_stack_bytes=usage.get("STACK"), shared_bytes=usage.get("SHARED"),
                compile_s=round(seconds, 1), D=D)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--csv", default=None, help="write the table here (overwritten atomically)")
    args = ap.parse_args(argv)
    rows = []
    for module, kernel, flags, *sizes in KERNELS:
        row = compile_one(module, kernel, flags, args.dtype, args.arch, **(sizes[0] if sizes else {}))
        rows.append(row)
        print(f"{row['kernel']:<36} {row['flags']:<48} D={row['D']:<5} {row['arch']} w{row['num_warps']} "
              f"REG {row['registers']:>4} spill {row['spill_stack_bytes']:>5} B  shared {row['shared_bytes']:>6} B  "
              f"({row['compile_s']} s)", flush=True)
    if args.csv:
        tmp = args.csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
