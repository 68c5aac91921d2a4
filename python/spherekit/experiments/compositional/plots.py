"""Figures 1-3 of the card (matplotlib, Agg): per backbone, Figure 1 the 40-bin cosine histograms on [0, 1] of
near-misses per family and the reference pairs under Model A and Model B; Figure 2 nDCG@10 and Acc@1 after
re-ranking with F0-F4, frozen (blue) and end to end (orange), Model A/B as horizontal lines; Figure 3 the mean
near-miss score per family (lower is better, Model B's pooled cosine dotted) and the ROC-AUC of positives vs
near-misses."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...evaluation.plots import save_figure
from .claims import _fig1_means, _fig3
from .data import FAMILIES

COLORS = {"positive": "tab:green", "negative": "tab:blue", "negation": "tab:red", "binding": "tab:purple",
          "spatial": "tab:orange"}
REGIME_COLORS = {"frozen": "tab:blue", "e2e": "tab:orange"}


def _figure1(units, cfg, path) -> bool:
    import matplotlib.pyplot as plt

    panels = [(c, lbl) for c, lbl in (("model_a", "Model A"), ("model_b", "Model B")) if c in units]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    bins = np.linspace(0, 1, cfg["hist_bins"] + 1)
    for ax, (cond, label) in zip(axes[0], panels):
        fig1 = units[cond]["seeds"][0]["figure1"]
        for key in ("positive", "negative", *FAMILIES):
            if key in fig1:
                values = np.clip(fig1[key], 0, 1)
                ax.hist(values, bins=bins, density=True, alpha=0.45, color=COLORS[key],
                        label=f"{key} (n={len(values)}, mean {np.mean(fig1[key]):.2f})")
        ax.set_title(f"{label}: pooled cosine")
        ax.set_xlabel("cosine")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches=None)
    return True


def _figure2(units, path) -> bool:
    import matplotlib.pyplot as plt

    conds = [c for c in units if "_F" in c]
    if not conds:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("nDCG@10", "Acc@1")):
        for regime, marker in (("frozen", "o"), ("e2e", "s")):
            pts = sorted((c.split("_")[1], units[c]["metrics"][metric], units[c]["metrics"][metric + "_std"])
                         for c in conds if c.startswith(regime))
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker=marker,
                            linestyle="", color=REGIME_COLORS[regime], label=regime)
        for cond, style in (("model_a", "--"), ("model_b", ":")):
            if cond in units:
                ax.axhline(units[cond]["metrics"][metric], linestyle=style, color="gray", label=cond)
        ax.set_title(f"{metric} after re-ranking")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches=None)
    return True


def _figure3(units, path) -> bool:
    import matplotlib.pyplot as plt

    f3 = _fig3(units)
    if not f3:
        return False
    fams = [*FAMILIES, "overall"]
    b = _fig1_means(units.get("model_b"))
    fig, axes = plt.subplots(2, len(fams), figsize=(4 * len(fams), 7), squeeze=False)
    for j, fam in enumerate(fams):
        for row, key in ((0, "mean"), (1, "auc")):
            ax = axes[row][j]
            for regime, marker in (("frozen", "o"), ("e2e", "s")):
                pts = sorted((c.split("_")[1], v[fam][key]) for c, v in f3.items() if c.startswith(regime) and fam in v)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, linestyle="",
                            color=REGIME_COLORS[regime], label=regime)
            if row == 0 and b:
                line = b.get(fam, np.mean([b[f] for f in FAMILIES if f in b]))
                ax.axhline(line, linestyle=":", color="gray", label="Model B cosine")
            ax.set_title(f"{fam}: {'mean near-miss score' if key == 'mean' else 'ROC-AUC'}")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches=None)
    return True


def make_plots(by_backbone: dict, cfg: dict, folder) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for backbone, units in by_backbone.items():
        for name, fn in (("figure1", lambda p: _figure1(units, cfg, p)), ("figure2", lambda p: _figure2(units, p)),
                         ("figure3", lambda p: _figure3(units, p))):
            path = folder / f"{name}_{backbone}.png"
            if fn(path):
                out.append(str(path))
    return out
