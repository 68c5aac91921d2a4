"""Benchmark of the supervised-contrastive family: SINCERE / SoftCSE / CircularCSE, the materialising oracle
vs spherekit's chunked CPU path, side by side.

Providers are "<loss>:<implementation>":
    loss            sincere       spherekit.ops.sincere over B embeddings with N_LABELS=12 class labels
                    softcse       sincere with a label bias log(1 - cos(angle_i - angle_j)) (12 labels, 30 deg apart)
                    circular_cse  spherekit.ops.circular_cse over the same 12 angles
    implementation  reference     spherekit.reference (materialises the B x B similarities, fp32)
                    spherekit-cpu spherekit.ops.<loss>(..., backend="cpu"): chunked torch

Measured: fwd+bwd of the scalar loss over unit-normalised embeddings (B, d), fp32, with the harness's timing and
peak-memory probe (spherekit.bench._harness). Rows go to <out>/supervised.csv.

Presets: cpu (B = 4,096 and 8,192, d = 384: the sizes of the former benches/bench_supervised.py), tiny (tests).
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from . import _harness as H
from .results import timing_table

FAMILY = "supervised"
MODULE = "spherekit.bench.supervised"
N_LABELS = 12
LOSSES = ("sincere", "softcse", "circular_cse")
IMPLEMENTATIONS = ("reference", "spherekit-cpu")
PARAMS = ("B", "d")  # the params cell: embeddings, width
PROVIDERS = tuple(f"{loss}:{impl}" for loss, impl in itertools.product(LOSSES, IMPLEMENTATIONS))


@dataclass(frozen=True)
class Preset(H.PresetBase):
    dtype: str
    B: tuple[int, ...]
    d: int


PRESETS = {
    "tiny": Preset("cpu", "float32", (64, 128), 16, repeats=1, warmup=1, min_repeats=1, budget_s=5.0),
    "cpu": Preset("cpu", "float32", (4096, 8192), 384, repeats=5, warmup=1, budget_s=30.0),
}


def build_tasks(preset: Preset, providers: list[str] | None = None) -> list[dict]:
    """Tasks of a preset, grouped by provider (one worker each), then by B."""
    return [dict(family=FAMILY, provider=p, mode="fwd+bwd", B=B, d=preset.d, dtype=preset.dtype)
            for p in PROVIDERS if not providers or p in providers for B in preset.B]


# ------------------------------------------------------------------------------------------------
# the family interface used by the harness: static_skip, predict_bytes, run_task
# ------------------------------------------------------------------------------------------------


def static_skip(task: dict, settings: H.Settings) -> str | None:
    return None


def predict_bytes(task: dict) -> int:
    """Rough upper bound of the worker's memory (the whole process), for skipping."""
    B, d = task["B"], task["d"]
    work = 6 * B * B * 4 if task["provider"].endswith(":reference") else 64 << 20
    return 4 * B * d * 4 + work + (512 << 20)


def _angles():
    import torch

    return torch.deg2rad(torch.arange(N_LABELS) * 30.0)


def make_loss(task: dict, e, y):
    """The provider's loss of (e, y) as a closure returning a scalar."""
    import torch

    from .. import reference
    from ..ops import circular_cse, sincere

    loss, impl = task["provider"].split(":")
    angles = _angles()
    bias = torch.log1p(-torch.cos(angles[:, None] - angles[None, :]))
    ref = impl == "reference"
    if loss == "sincere":
        return (lambda: reference.sincere(e, y)) if ref else (lambda: sincere(e, y, backend="cpu"))
    if loss == "softcse":
        return (lambda: reference.sincere(e, y, label_bias=bias)) if ref else \
            (lambda: sincere(e, y, label_bias=bias, backend="cpu"))
    if loss == "circular_cse":
        return (lambda: reference.circular_cse(e, y, angles)) if ref else \
            (lambda: circular_cse(e, y, angles, backend="cpu"))
    raise ValueError(f"unknown provider {task['provider']!r}; choose from {PROVIDERS}")


def inputs(task: dict):
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    e = F.normalize(torch.randn(task["B"], task["d"], generator=gen), dim=-1).requires_grad_()
    y = torch.randint(0, N_LABELS, (task["B"],), generator=gen)
    return e, y


def run_task(task: dict, settings: H.Settings) -> dict:
    e, y = inputs(task)
    fn = make_loss(task, e, y)
    return H.measure(lambda: fn().backward(), settings, teardown=lambda: setattr(e, "grad", None))


# ------------------------------------------------------------------------------------------------
# reporting and entry points
# ------------------------------------------------------------------------------------------------


def format_table(rows: list[dict]) -> str:
    order = {p: i for i, p in enumerate(PROVIDERS)}
    rows = sorted(rows, key=lambda r: (int(r["B"]), order.get(r["provider"], 99)))
    return timing_table(f"{'B':>6} {'provider':<28}", rows, lambda r: f"{r['B']:>6} {r['provider']:<28}")


def run(preset: str = "cpu", out: str | Path = "results/bench", repeats: int | None = None,
        providers: list[str] | None = None, isolate: str = "provider", mem_limit_gib: float | None = None,
        budget_s: float | None = None, timeout_s: float = 1800.0, progress: bool = True,
        sizes: list[int] | None = None, d: int | None = None) -> int:
    """Run a preset (sizes / d override its B / d); rows appended to <out>/supervised.csv; prints the table.
    Returns 0 when every measurement ran ok, else 1."""
    prepared = H.prepare_run(PRESETS, preset, providers, PROVIDERS, repeats=repeats, budget_s=budget_s,
                             timeout_s=timeout_s, isolate=isolate, mem_limit_gib=mem_limit_gib)
    if prepared is None:
        return 2
    spec, settings = prepared
    spec = replace(spec, B=tuple(sizes or spec.B), d=d or spec.d)
    tasks = build_tasks(spec, providers)
    csv_path, rows, emit = H.start_run(FAMILY, preset, spec, settings, tasks, out, params=PARAMS)
    H.run_and_report(MODULE, tasks, settings, emit, rows, csv_path, table=format_table, progress=progress)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `spherekit bench supervised` (run_from_args passes them to run)."""
    H.add_run_arguments(parser, PRESETS, "cpu", PROVIDERS)
    parser.add_argument("--sizes", type=int, nargs="+", help="batch sizes B (default: the preset's)")
    parser.add_argument("--d", type=int, help="embedding width (default: the preset's)")


def run_from_args(args: argparse.Namespace) -> int:
    return run(**H.run_options(args), sizes=args.sizes, d=args.d)


main = H.family_entry(__name__)

if __name__ == "__main__":
    raise SystemExit(main())
