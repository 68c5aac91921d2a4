"""The card's own tables (Table 1: frozen pooling; Table 2: fine-tuned pooling, ours next to the paper's) and one
plot."""

from __future__ import annotations

from pathlib import Path

from spherekit.evaluation.plots import save_figure
from spherekit.experiments.api.printed import grid

from .paper import PRINTED
from .spec import EXPERIMENT, MRR, R1

TABLES = (("Table 1 (frozen encoder)", ("frozen-mean", "frozen-cls", "frozen-max")),
          ("Table 2 (fine-tuned with MNRL)", ("tuned-mean", "tuned-cls")))


def report(results: dict) -> str:
    parts = []
    for scope in EXPERIMENT.scopes(results):
        for title, conditions in TABLES:
            if not any(scope.has(c) for c in conditions):
                continue
            parts += [f"## {title} on {scope.name}: ours (the paper's)", "",
                      grid(scope, list(conditions), ((R1, "R@1"), (MRR, "MRR")), PRINTED, spread=True), ""]
    return "\n".join(parts)


def plots(results: dict, folder) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for scope in EXPERIMENT.scopes(results):
        names = [c for c in EXPERIMENT.conditions if scope.has(c)]
        if not names:
            continue
        fig, ax = plt.subplots(figsize=(5.5, 3.2))
        ax.bar(names, [scope.metric(c, MRR) for c in names],
               color=["#4477aa" if c.startswith("frozen") else "#ee6677" for c in names])
        ax.set_ylim(0, 1)
        ax.set_ylabel("MRR (mean over seeds)")
        ax.set_title(f"{scope.name}: term -> gloss retrieval by pooling", fontsize=10)
        ax.tick_params(axis="x", labelsize=8)
        fig.tight_layout()
        out.append(str(save_figure(fig, Path(folder) / f"{scope.name}_mrr.png", dpi=100, bbox_inches=None)))
    return out
