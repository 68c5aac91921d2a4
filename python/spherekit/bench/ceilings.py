"""The two ceilings a GPU's kernels are judged against, measured on the machine itself (never a datasheet figure):
device-to-device copy bandwidth (bytes read + written per second, one large copy) and a large bf16 matrix product
(random operands, 2 n^3 FLOP per product). Warm-up first, then `repeats` timed calls (CUDA events on a GPU), median
and 20/80% quantiles. Rows go to <out>/ceilings.csv; the contrastive goal takes the matmul rate, the nGPT goal its
own copy measurement.

    python -m spherekit.bench.ceilings [--out DIR] [--device cuda] [--copy-mib 1024] [--n 8192] [--repeats 10]

On CPU (--device cpu, the rehearsal of scripts/gpu_check.sh) the same code runs at the sizes given.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from ._harness import quantile
from .machine import machine_name, now, versions

COLUMNS = ["timestamp", "machine", "device", "torch", "ceiling", "value", "unit", "median_ms", "p20_ms", "p80_ms",
           "params"]


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
    """[copy row, matmul row]: value in GB/s (bytes read + written) and TFLOP/s."""
    import torch

    src = torch.rand(copy_mib << 18, device=device)  # fp32: MiB * 2^20 / 4 elements
    dst = torch.empty_like(src)
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty_like(a)
    rows = []
    for name, fn, work, unit, scale, params in (
            ("copy", lambda: dst.copy_(src), 2 * src.numel() * 4, "GB/s", 1e9, f"bytes={src.numel() * 4}"),
            ("bf16_matmul", lambda: torch.mm(a, b, out=c), 2 * n ** 3, "TFLOP/s", 1e12, f"n={n}")):
        ms = _times_ms(fn, device, repeats)
        med = quantile(ms, 0.5)
        rows.append(dict(ceiling=name, value=float(f"{work / (med * 1e-3) / scale:.4g}"), unit=unit,
                         median_ms=round(med, 4), p20_ms=round(quantile(ms, 0.2), 4),
                         p80_ms=round(quantile(ms, 0.8), 4), params=params))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench", help="folder of ceilings.csv (default: %(default)s)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--copy-mib", type=int, default=1024, help="size of the copied fp32 buffer")
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
