"""SINCERE / SoftCSE / CircularCSE on CPU: the materialising oracle vs spherekit's chunked path, side by side.

    python benches/bench_supervised.py [--sizes 4096 8192] [--d 384] [--out benches/results]

fwd+bwd of the scalar loss, fp32, with the same timing and peak-memory probe as
`spherekit bench contrastive` (spherekit.bench._harness.measure); rows are appended to
<out>/supervised.csv (provider = "<loss>:<reference|spherekit-cpu>").
"""

from __future__ import annotations

import argparse
import math
import os

import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.bench import _harness as H
from spherekit.bench.machine import machine_name, now, versions
from spherekit.bench.results import append_rows
from spherekit.ops import circular_cse, sincere

N_LABELS = 12
ANGLES = torch.deg2rad(torch.arange(N_LABELS) * 30.0)
SOFTCSE_BIAS = torch.log1p(-torch.cos(ANGLES[:, None] - ANGLES[None, :]))


def losses(e, y):
    """name -> (reference call, spherekit call), each returning a scalar loss of e."""
    return {
        "sincere": (lambda: reference.sincere(e, y), lambda: sincere(e, y, backend="cpu")),
        "softcse": (lambda: reference.sincere(e, y, label_bias=SOFTCSE_BIAS),
                    lambda: sincere(e, y, label_bias=SOFTCSE_BIAS, backend="cpu")),
        "circular_cse": (lambda: reference.circular_cse(e, y, ANGLES), lambda: circular_cse(e, y, ANGLES, backend="cpu")),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benches/results")
    args = ap.parse_args(argv)
    settings = H.Settings(repeats=args.repeats, warmup=1, budget_s=30.0, isolate="none")
    common = dict(run_id=now(), preset="supervised", machine=machine_name("cpu"), **versions(), family="supervised",
                  mode="fwd+bwd", d=args.d, k=0, dtype="float32")
    rows = []
    for B in args.sizes:
        gen = torch.Generator().manual_seed(0)
        e = F.normalize(torch.randn(B, args.d, generator=gen), dim=-1).requires_grad_()
        y = torch.randint(0, N_LABELS, (B,), generator=gen)
        for name, pair in losses(e, y).items():
            for provider, fn in zip(("reference", "spherekit-cpu"), pair):
                def step(fn=fn):
                    fn().backward()

                result = H.measure(step, settings, teardown=lambda: setattr(e, "grad", None))
                row = {**common, "provider": f"{name}:{provider}", "B": B, "N": B, **result, "timestamp": now()}
                append_rows(os.path.join(args.out, "supervised.csv"), [row])
                rows.append(row)
                print(f"{name:<13} {provider:<14} B={B:<6} {row['median_ms']:9.1f} ms "
                      f"({row['p20_ms']:.1f}-{row['p80_ms']:.1f})  peak extra {row['peak_extra_mib']:7.1f} MiB "
                      f"{row['note']}", flush=True)
    return 0 if all(math.isfinite(r["median_ms"]) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
