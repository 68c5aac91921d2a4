"""The toy card's own table (ours next to the paper's) and one plot."""

from __future__ import annotations

from pathlib import Path

from ...evaluation.plots import save_figure
from ..api.printed import grid
from .paper import PRINTED
from .spec import EXPERIMENT, MRR, R1


def report(results: dict) -> str:
    parts = []
    for scope in EXPERIMENT.scopes(results):
        parts += [f"## Table 1 on {scope.name}: ours (the paper's)", "",
                  grid(scope, list(EXPERIMENT.conditions), ((R1, "R@1"), (MRR, "MRR")), PRINTED, spread=True), ""]
    return "\n".join(parts)


def plots(results: dict, folder: Path) -> list[str]:
    import matplotlib.pyplot as plt

    out = []
    for scope in EXPERIMENT.scopes(results):
        names = [c for c in EXPERIMENT.conditions if scope.has(c)]
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.bar(names, [scope.metric(c, MRR) for c in names], color="#4477aa")
        ax.set_ylim(0, 1)
        ax.set_ylabel("MRR (mean over seeds)")
        ax.set_title(f"{scope.name}: term -> gloss retrieval", fontsize=10)
        fig.tight_layout()
        out.append(str(save_figure(fig, folder / f"{scope.name}_mrr.png", dpi=100, bbox_inches=None)))
    return out
