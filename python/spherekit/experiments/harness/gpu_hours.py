"""Predicted GPU-hours of each paper's `paper` preset, read from the committed GPU measurements.

`scripts/gpu_papers.py` times training and encoding steps of each paper's backbones on a lent GPU and multiplies
them by the steps of the `paper` preset; `gpu_check.sh` commits its rows as
benches/results/gpu/<gpu>_paper_hours.csv (one row per work item and a `total` row per paper). This module reads the
total rows of a source checkout, so that `reproduce list` and a `paper` card can state the prediction next to what
the card measured. A prediction is never a run: the line says which GPU timed the steps and what was not counted.
Installed without the source tree there are no rows, and nothing is claimed.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

GPU_RESULTS = Path("benches/results/gpu")
SUFFIX = "_paper_hours.csv"
GPU_NAMES = {"h100": "NVIDIA H100", "h200": "NVIDIA H200"}


@dataclass(frozen=True)
class Prediction:
    paper: str
    gpu: str       # the GPU whose steps were timed, e.g. "NVIDIA H200"
    hours: float   # sum over the paper's work items of steps x the median timed step
    source: str    # the CSV it comes from, relative to the repository root


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[4]  # <root>/python/spherekit/experiments/harness/gpu_hours.py


def predictions(paper: str, root: Path | None = None) -> list[Prediction]:
    """Every committed prediction for `paper` (one per GPU that timed it), sorted by GPU name; [] when none."""
    root = _repo_root() if root is None else Path(root)
    out = []
    for path in sorted((root / GPU_RESULTS).glob(f"*{SUFFIX}")):
        tag = path.name.removesuffix(SUFFIX)
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["paper"] == paper and row["kind"] == "total" and row["status"] == "ok":
                    out.append(Prediction(paper, GPU_NAMES.get(tag, tag), float(row["hours"]),
                                          str(path.relative_to(root))))
    return sorted(out, key=lambda p: p.gpu)


def describe(paper: str, root: Path | None = None) -> str | None:
    """One line for a card or a listing, or None when no GPU has timed this paper's steps."""
    found = predictions(paper, root)
    if not found:
        return None
    hours = "; ".join(f"{hours_text(p.hours)} on an {p.gpu}" for p in found)
    return (f"predicted GPU time of the `paper` preset: {hours} (a prediction, not a run: training and encoding "
            f"steps of the paper's backbones timed on that GPU by scripts/gpu_papers.py, times the preset's step "
            f"counts; an item not timed says so in its row; data preparation, loading and most evaluation not "
            f"counted; {', '.join(p.source for p in found)})")


def hours_text(h: float) -> str:
    """2.34 h, or < 0.01 h."""
    return "< 0.01 h" if h < 0.01 else f"{h:.2f} h"


__all__ = ["Prediction", "describe", "hours_text", "predictions"]
