"""Plots from a family's long-format CSV: <out>/<family>_time.png and <out>/<family>_memory.png.

Time (median, with the 20-80% quantile band as error bars: the device time where a row has one, a GPU row, else
the wall time) and peak extra memory against B, one line per provider, log-log; one row of panels per mode, one
column per (d, hard negatives k, dtype). Only the machine of the newest row is plotted, and for each (provider,
mode, B, d, k, dtype) its newest row: "ok" rows as points, rows that could not run (out of memory, predicted above
the memory limit, timeout, error) listed in the panel's corner.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..evaluation.plots import save_figure
from ._harness import family_entry
from .results import read_rows

FAMILY = "plot"
PLOTTABLE = ("contrastive",)  # families whose rows are (provider, mode, B, d, k, dtype) over B
MODES = ("fwd", "bwd", "fwd+bwd")


def _latest(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(ok rows, rows that could not run) of the newest machine, newest row per configuration.

    Rows that could not run are out-of-memory, timeout and error rows, and rows skipped because their
    predicted memory was above the limit (not those skipped because a mode does not apply).
    """
    if not rows:
        return [], []
    machine = max(rows, key=lambda r: r["timestamp"])["machine"]
    best: dict[tuple, dict] = {}
    for r in rows:
        if r["machine"] != machine:
            continue
        key = (r["provider"], r["mode"], int(r["B"]), int(r["d"]), int(r["k"]), r["dtype"])
        if key not in best or r["timestamp"] >= best[key]["timestamp"]:
            best[key] = r
    latest = list(best.values())
    failed = [r for r in latest if r["status"] in ("oom", "timeout", "error")
              or (r["status"] == "skipped" and r["note"].startswith("predicted"))]
    return [r for r in latest if r["status"] == "ok"], failed


def _times(row: dict) -> tuple[float, float, float]:
    """(median, p20, p80) ms of a row: its device time where it has one, else its wall time."""
    prefix = "device_" if row.get("device_median_ms") not in (None, "") else ""
    return tuple(float(row[f"{prefix}{k}"]) for k in ("median_ms", "p20_ms", "p80_ms"))


def plot(family: str = "contrastive", out: str | Path = "results/bench") -> list[Path]:
    """Write the PNGs next to <out>/<family>.csv; returns their paths (none when nothing is plottable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    csv_path = out / f"{family}.csv"
    if not csv_path.exists():
        raise FileNotFoundError(f"{csv_path} does not exist: run `spherekit bench {family}` first")
    rows, failed = _latest(read_rows(csv_path))
    if not rows:
        return []
    machine = rows[0]["machine"]
    modes = sorted({r["mode"] for r in rows}, key=lambda m: (MODES.index(m) if m in MODES else 9, m))
    variants = sorted({(int(r["d"]), int(r["k"]), r["dtype"]) for r in rows})
    # one row of panels per mode, one column per (d, k, dtype)
    grid = [[(mode, *v) for v in variants] for mode in modes]
    try:  # the family's provider order gives stable colours across runs
        known = list(importlib.import_module(f"spherekit.bench.{family}").PROVIDERS)
    except (ImportError, AttributeError):
        known = []
    present = {r["provider"] for r in rows}
    providers = [p for p in known if p in present] + sorted(present - set(known))
    colors = {p: f"C{known.index(p) if p in known else len(known) + i}" for i, p in enumerate(providers)}
    paths = []
    for kind, label in (("time", "median time per call (ms; device time on a GPU)"),
                        ("memory", "peak extra memory (MiB)")):
        nrows, ncols = len(grid), len(variants)
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
        for ax, (mode, d, k, dtype) in zip(axes.flat, [panel for line in grid for panel in line]):
            for p in providers:
                panel = (p, mode, d, k, dtype)
                pts = sorted(((int(r["B"]), r) for r in rows
                              if (r["provider"], r["mode"], int(r["d"]), int(r["k"]), r["dtype"]) == panel),
                             key=lambda x: x[0])
                if kind == "time":
                    pts = [(b, r) for b, r in pts if _times(r)[0] > 0]
                    if not pts:
                        continue
                    xs = [b for b, _ in pts]
                    ys = [_times(r)[0] for _, r in pts]
                    lo = [max(0.0, y - _times(r)[1]) for y, (_, r) in zip(ys, pts)]
                    hi = [max(0.0, _times(r)[2] - y) for y, (_, r) in zip(ys, pts)]
                    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, color=colors[p], label=p)
                else:
                    pts = [(b, r) for b, r in pts if float(r["peak_extra_mib"]) > 0]
                    if not pts:
                        continue
                    ax.plot([b for b, _ in pts], [float(r["peak_extra_mib"]) for _, r in pts], marker="o", ms=3,
                            color=colors[p], label=p)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{mode}, d={d}, {'k=' + str(k) + ' hard neg.' if k else 'no hard neg.'}, {dtype}",
                         fontsize=9)
            ax.set_xlabel("batch size B")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            missing = sorted((int(r["B"]), r["provider"], r["status"]) for r in failed
                             if (r["mode"], int(r["d"]), int(r["k"]), r["dtype"]) == (mode, d, k, dtype))
            if missing:
                ax.text(0.98, 0.02, "\n".join(f"{p} B={b}: {st}" for b, p, st in missing), ha="right", va="bottom",
                        transform=ax.transAxes, fontsize=6, color="0.35")
        for ax in axes.flat:
            if not ax.has_data():
                ax.text(0.5, 0.5, "no ok rows", ha="center", va="center", transform=ax.transAxes, fontsize=8)
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=min(6, len(handles)),
                   fontsize=8, frameon=False)
        fig.suptitle(f"spherekit bench {family}: {kind} — {machine}", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 0.95))
        path = out / f"{family}_{kind}.png"
        paths.append(save_figure(fig, path, dpi=110, bbox_inches=None))
    return paths


def add_arguments(parser) -> None:
    """The options of `spherekit bench plot <family>`."""
    parser.add_argument("what", choices=PLOTTABLE)
    parser.add_argument("--out", default="results/bench")


def run_from_args(args) -> int:
    paths = plot(args.what, args.out)
    for path in paths:
        print(f"plot: {path}")
    return 0 if paths else 1


main = family_entry(__name__)
