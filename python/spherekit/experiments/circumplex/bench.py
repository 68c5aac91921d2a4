"""`spherekit bench reproduce circumplex`: the frozen-backbone grid trained two ways, side by side.

    cached        spherekit's path: each text runs through the frozen backbone once (TokenStateCache), then
                  every head of the grid trains on the cached token states
    per-step      the paper's recipe: the backbone runs on every step of every run (requires_grad off)

Both run the same experiment code (`spherekit reproduce circumplex`, preset's frozen regime, the six trained
runs) in fresh worker processes with the same seed and batches; the only difference is the config's
cache_states. Measured: wall time per epoch (median over runs), the whole grid's training time (the cache
build included), the peak extra memory of the grid (spherekit.bench.memory), and the largest difference of any
run's V-measure and of its CD-r between the two ("identical" when both are below 1e-5). The cached states
were computed in other batches than the training ones, so they differ from the per-step states in the last
float32 bits; CD-r (a smooth function of the embeddings) moves by about 1e-7, while k-means can flip a
point that sits on a cluster boundary, which moves a V-measure by a visible step on a weak model.
Goal on CPU: the grid at least 10x faster with identical metrics. Rows go to <out>/reproduce_circumplex.csv.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...bench import PresetBase
from ...bench.workers import spawn_worker, worker_main

RECIPES = {"cached": True, "per-step": False}


@dataclass(frozen=True)
class Preset(PresetBase):
    experiment_preset: str  # the reproduction's own preset (spherekit reproduce circumplex --preset)
    backbone: str | None = None  # the backbone when --backbone is not given (None: the preset's)


# gpu: the paper's schedule on one backbone that needs no hub access (the paper preset's own are four LLMs)
PRESETS = {"cpu-small": Preset("cpu", "cpu-small"), "gpu": Preset("cuda", "paper", "all-mpnet-base-v2"),
           "tiny": Preset("cpu", "tiny")}
COLUMNS = ["timestamp", "run_id", "preset", "machine", "torch", "spherekit", "recipe", "backbone", "runs", "epochs",
           "n_train", "epoch_median_s", "grid_train_s", "cache_build_s", "grid_peak_extra_mib", "v_max_diff",
           "cdr_max_diff", "metrics_identical", "status", "note"]


def worker(spec: dict) -> dict:
    """Run the frozen grid with or without the cache; returns timings, peak memory and per-run metrics."""
    import torch

    from ...bench.memory import PeakMemory
    from .. import reproduce
    from .spec import CD_R, TRAINED_RUNS, V

    overrides = {"cache_states": spec["cached"], "regimes": ("frozen",), "runs": TRAINED_RUNS, "pretrained": False,
                 "label_count_runs": (), "seeds": (42,)}  # one seed: a timing, not a claim
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as out, PeakMemory(device) as peak:
        res = reproduce("circumplex", spec["experiment_preset"], backbone=spec.get("backbone"), out=out,
                        progress=False, overrides=overrides, log=lambda msg: None)
    units = res["units"]
    epochs = res["config"]["epochs"]
    train = [u["seconds"]["train"] for u in units.values()]
    return {"epoch_median_s": statistics.median(t / epochs for t in train), "grid_train_s": sum(train),
            "cache_build_s": sum(u["seconds"].get("cache", 0.0) for u in units.values()),
            "grid_peak_extra_mib": peak.extra_bytes / (1 << 20), "epochs": epochs,
            "n_train": res["data"]["n_train"], "backbone": res["config"]["backbones"][0],
            "metrics": {k.split("/", 1)[1]: [u["metrics"][V], u["metrics"].get(CD_R)]
                        for k, u in units.items()}}


IDENTICAL = 1e-5


def _max_diff(a: dict, b: dict, which: int) -> float | None:
    """The largest |difference| of a metric (0: V-measure, 1: CD-r) over the runs of two ok results."""
    if not (a.get("status") == b.get("status") == "ok") or set(a["metrics"]) != set(b["metrics"]):
        return None
    pairs = [(a["metrics"][k][which], b["metrics"][k][which]) for k in a["metrics"]]
    if any((x is None) != (y is None) for x, y in pairs):
        return float("inf")
    return max((abs(x - y) for x, y in pairs if x is not None), default=0.0)


def run(preset: str = "cpu-small", out: str = "results/bench", backbone: str | None = None,
        timeout_s: float = 7200.0) -> int:
    import torch

    from ...bench.machine import machine_name, now, versions
    from ...bench.results import append_rows

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    run_id, device, ver = now(), ("cuda" if torch.cuda.is_available() else "cpu"), versions()
    results = {}
    for recipe, cached in RECIPES.items():
        print(f"bench reproduce circumplex: {recipe} ...", file=sys.stderr, flush=True)
        spec = {"experiment_preset": PRESETS[preset].experiment_preset, "cached": cached,
                "backbone": backbone or PRESETS[preset].backbone}
        results[recipe] = spawn_worker(__name__, spec, timeout_s)
    ours, plain = results["cached"], results["per-step"]
    diff_v, diff_cd = _max_diff(ours, plain, 0), _max_diff(ours, plain, 1)
    same = diff_v is not None and max(diff_v, diff_cd) < IDENTICAL
    rows = [{"timestamp": now(), "run_id": run_id, "preset": preset, "machine": machine_name(device),
             "torch": ver["torch"], "spherekit": ver["spherekit"], "recipe": recipe,
             "runs": len(r.get("metrics", {})) or "", "metrics_identical": same if r["status"] == "ok" else "",
             "v_max_diff": "" if diff_v is None else f"{diff_v:.2e}",
             "cdr_max_diff": "" if diff_cd is None else f"{diff_cd:.2e}",
             **{k: r.get(k, "") for k in ("backbone", "epochs", "n_train", "epoch_median_s", "grid_train_s",
                                           "cache_build_s", "grid_peak_extra_mib", "status")},
             "note": r.get("note", "")} for recipe, r in results.items()]
    append_rows(Path(out) / "reproduce_circumplex.csv", rows, COLUMNS)
    print(f"{'recipe':9} {'s/epoch':>9} {'grid train s':>13} {'cache s':>8} {'peak MiB':>9}  status")
    for recipe, r in results.items():
        if r["status"] != "ok":
            print(f"{recipe:9} {r['status']}: {r.get('note', '')}")
            continue
        print(f"{recipe:9} {r['epoch_median_s']:9.2f} {r['grid_train_s']:13.1f} {r['cache_build_s']:8.1f} "
              f"{r['grid_peak_extra_mib']:9.0f}  ok")
    if ours.get("status") == plain.get("status") == "ok":
        grid = (ours["grid_train_s"] + ours["cache_build_s"])
        print(f"cached vs per-step: grid {plain['grid_train_s'] / grid:.1f}x faster (cache build included), "
              f"epoch {plain['epoch_median_s'] / ours['epoch_median_s']:.1f}x; metrics identical: {same} "
              f"(largest difference: V-measure {diff_v:.1e}, CD-r {diff_cd:.1e})")
    print(f"rows appended to {Path(out) / 'reproduce_circumplex.csv'}")
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1


def add_arguments(parser) -> None:
    """The options of `spherekit bench reproduce circumplex`."""
    parser.add_argument("--preset", default="cpu-small", choices=sorted(PRESETS))
    parser.add_argument("--out", default="results/bench")
    parser.add_argument("--backbone", help="override the preset's backbone (a name or a local folder)")
    parser.add_argument("--timeout-s", type=float, default=7200.0)


def run_from_args(args) -> int:
    return run(args.preset, args.out, args.backbone, args.timeout_s)


if __name__ == "__main__":
    raise SystemExit(worker_main(worker, sys.argv[1:], lambda: 2))
