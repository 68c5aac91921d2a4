"""The ceilings a GPU's kernels are judged against, measured on the machine itself (never a datasheet figure), each
named apart:

    copy         dst = src over one large fp32 buffer: bytes read + written per second (GB/s)
    triad        a = b + s * c over three fp32 buffers: 3 arrays moved per element (GB/s); higher than copy on an
                 H200 (4,276 vs 4,106 GB/s), so a bandwidth goal says which one it divides by
    bf16_matmul  one n x n x n bf16 product of random operands: 2 n^3 FLOP per product (TFLOP/s)

Warm-up first, then `repeats` timed calls (CUDA events on a GPU, the host clock on CPU), median and 20/80%
quantiles. Rows go to <out>/ceilings.csv. The bench families measure the ceilings their goals need in the same run
with the same functions (`ceiling_step`: a "peak" provider whose rows come first), so a goal line never divides by a
figure from another run.

    python -m spherekit.bench.ceilings [--out DIR] [--device cuda] [--copy-mib 1024] [--n 8192] [--repeats 10]

On CPU (--device cpu, the rehearsal of scripts/gpu_check.sh) the same code runs at the sizes given.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Callable

from ._harness import quantile
from .machine import machine_name, now, versions

COLUMNS = ["timestamp", "machine", "device", "torch", "ceiling", "value", "unit", "median_ms", "p20_ms", "p80_ms",
           "params"]
CEILINGS = {"copy": "GB/s", "triad": "GB/s", "bf16_matmul": "TFLOP/s"}  # name -> unit
STREAMS = {"copy": 2, "triad": 3}  # fp32 arrays that move per element


def ceiling_step(name: str, device: str, size: int) -> tuple[Callable[[], object], float, str]:
    """(the timed call, its work: bytes moved or FLOP, the params text) of ceiling `name`; size = fp32 elements
    per array (copy, triad) or n (bf16_matmul). The buffers are allocated here, once."""
    import torch

    if name in STREAMS:
        a, b, *c = (torch.rand(size, device=device) for _ in range(STREAMS[name]))
        fn = (lambda: a.copy_(b)) if name == "copy" else (lambda: torch.add(b, c[0], alpha=1.5, out=a))
        return fn, float(STREAMS[name] * size * 4), f"elements={size}"
    if name == "bf16_matmul":
        x, y = (torch.randn(size, size, device=device, dtype=torch.bfloat16) for _ in range(2))
        z = torch.empty_like(x)
        return (lambda: torch.mm(x, y, out=z)), 2.0 * size ** 3, f"n={size}"
    raise ValueError(f"ceiling must be one of {sorted(CEILINGS)}, got {name!r}")


def rate(name: str, work: float, ms: float) -> float:
    """The ceiling's value (GB/s or TFLOP/s) of `work` done in `ms` milliseconds."""
    return work / (ms * 1e-3) / (1e12 if CEILINGS[name] == "TFLOP/s" else 1e9)


# ------------------------------------------------------------------------------------------------
# the "peak" provider of the bench families: the same ceilings as rows of their own run
# ------------------------------------------------------------------------------------------------

METRIC = {"GB/s": "gb_per_s", "TFLOP/s": "tflops"}  # the metrics-cell name of a peak row's value
SIZE_KEY = {"copy": "elements", "triad": "elements", "bf16_matmul": "n"}  # the params name of its size


def peak_task(family: str, name: str, size: int) -> dict:
    """A bench family's task measuring ceiling `name` (provider "peak", mode = the ceiling's name)."""
    dtype = "bfloat16" if name == "bf16_matmul" else "float32"
    return {"family": family, "provider": "peak", "mode": name, SIZE_KEY[name]: size, "dtype": dtype}


def run_peak(task: dict, settings) -> dict:
    """Time a peak task with the harness (device time on CUDA) and add its value (gb_per_s or tflops)."""
    from . import _harness as H

    name = task["mode"]
    fn, work, _ = ceiling_step(name, settings.device, task[SIZE_KEY[name]])
    result = H.measure(fn, settings)
    ms = result.get("device_median_ms") or result["median_ms"]
    result[METRIC[CEILINGS[name]]] = rate(name, work, ms)
    return result


def peak_value(rows: list[dict], name: str) -> float | None:
    """The value of this run's ok peak row of ceiling `name` (GB/s or TFLOP/s), or None when there is none."""
    from .results import number

    values = [number(r, METRIC[CEILINGS[name]]) for r in rows
              if r.get("provider") == "peak" and r.get("mode") == name and r.get("status") == "ok"]
    return values[-1] if values else None


def peak_lines(rows: list[dict]) -> list[str]:
    """One line per ceiling measured in this run ('ceilings measured in this run: copy 4106 GB/s, ...')."""
    parts = [f"{name} {value:,.4g} {CEILINGS[name]}" for name in CEILINGS
             if (value := peak_value(rows, name)) is not None]
    return [f"ceilings measured in this run: {', '.join(parts)}"] if parts else []


def _times_ms(fn, device: str, repeats: int, warmup: int = 3) -> list[float]:
    import torch

    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    return out


def measure(device: str = "cuda", copy_mib: int = 1024, n: int = 8192, repeats: int = 10) -> list[dict]:
    """[copy row, triad row, bf16_matmul row]: value in GB/s (bytes read + written) and TFLOP/s."""
    import torch

    rows = []
    for name in CEILINGS:
        fn, work, params = ceiling_step(name, device, n if name == "bf16_matmul" else copy_mib << 18)
        ms = _times_ms(fn, device, repeats)
        med = quantile(ms, 0.5)
        rows.append(dict(ceiling=name, value=float(f"{rate(name, work, med):.4g}"), unit=CEILINGS[name],
                         median_ms=round(med, 4), p20_ms=round(quantile(ms, 0.2), 4),
                         p80_ms=round(quantile(ms, 0.8), 4), params=params))
        del fn
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench", help="folder of ceilings.csv (default: %(default)s)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--copy-mib", type=int, default=1024, help="size of each fp32 buffer of copy and triad")
    ap.add_argument("--n", type=int, default=8192, help="the bf16 product is n x n x n")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    common = dict(timestamp=now(), machine=machine_name(args.device), device=args.device,
                  torch=versions()["torch"])
    rows = [dict(common, **r) for r in measure(args.device, args.copy_mib, args.n, args.repeats)]
    path = Path(args.out) / "ceilings.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerows(rows)
    for r in rows:
        print(f"{r['ceiling']:<12} {r['value']:>10.4g} {r['unit']:<8} (median {r['median_ms']:.3f} ms, {r['params']}) "
              f"on {r['machine']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
