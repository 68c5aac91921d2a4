"""Plots of the DefSent+ card: the banks' 2-D SVD (non-centred) and whitened 2-D PCA views (Figures 1, 2, 4-7 of
arXiv:2405.16153, with the ideal unit circle of radius 3 drawn), and the proxy scores per condition."""

from __future__ import annotations

from pathlib import Path

from ...evaluation.plots import save_figure


def _banks(units) -> list[tuple[str, dict]]:
    return [(name, u["bank"]) for name, u in units.items() if "bank" in u]


def make_plots(units, folder) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    banks = _banks(units)
    if banks:
        fig, axes = plt.subplots(2, len(banks), figsize=(3.2 * len(banks), 6.4), squeeze=False)
        for j, (name, g) in enumerate(banks):
            svd, white = np.asarray(g["points_svd"]), np.asarray(g["points_white"])
            axes[0, j].scatter(svd[:, 0], svd[:, 1], s=2, alpha=0.5)
            axes[0, j].set_title(f"{name}\nSVD, corr {g['svd_corr']:+.2f}", fontsize=8)
            axes[1, j].scatter(white[:, 0], white[:, 1], s=2, alpha=0.5, color="tab:orange")
            axes[1, j].add_patch(plt.Circle((0, 0), 3, fill=False, ls=":", color="k"))
            axes[1, j].set_aspect("equal")
            axes[1, j].set_title(f"whitened PCA, {100 * g['outside_2d']:.1f}% outside r=3", fontsize=8)
        fig.tight_layout()
        paths.append(folder / "banks.png")
        save_figure(fig, paths[-1], dpi=110, bbox_inches=None)
    names = list(units)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (key, label) in zip(axes, [("sim_avg/best", "WordNet-sim Spearman x100"),
                                       ("crossdict_mrr/best", "cross-dictionary MRR x100"),
                                       ("probe_avg/best", "probe accuracy %")]):
        mean = [(units[n].get("mean") or units[n]["metrics"]).get(key, np.nan) for n in names]
        std = [(units[n].get("std") or {}).get(key, 0.0) for n in names]
        ax.bar(range(len(names)), mean, yerr=std, capsize=3)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        finite = [v for v in mean if np.isfinite(v)]
        if finite:
            ax.set_ylim(min(finite) - 3, max(finite) + 3)
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    paths.append(folder / "proxies.png")
    save_figure(fig, paths[-1], dpi=110, bbox_inches=None)
    return [str(p) for p in paths]
