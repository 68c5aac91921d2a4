"""PNG figures for "Mapping the Circumplex of Affect" (Yamauchi & Aizawa): matplotlib, Agg backend.

    heatmap(label_cosine, label_order, path, title)        label x label AvgCosSim (paper Fig. 4)
    scatter_2d(points, labels, angles, path, title)        PCA / MDS of the texts (Fig. 1b-d, 6, 7)
    explained_variance(runs, path)                         first 10 PCA variance ratios per run (Fig. 1)
    sweep_curves(runs, x_key, path, title)                 V-measure and CD-r against PCA dims / label count (Fig. 5)
    grid_bars(rows, path)                                  V-measure and CD-r per (head, loss) run (Tables 1 / 4)

Labels are coloured by their circumplex angle with the cyclic HSV colormap (hue = angle / 360), so neighbours
on the circle get neighbouring colours; legends list labels in angle order. Each function writes one PNG
atomically and returns its Path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ...evaluation.plots import as_numpy, pyplot, save_figure


def angle_colors(label_order: Sequence[str], angles: Mapping[str, float]) -> dict:
    """{label: RGBA} with hue = (angle mod 360) / 360 on matplotlib's cyclic 'hsv' colormap."""
    plt = pyplot()
    cmap = plt.get_cmap("hsv")
    missing = [lab for lab in label_order if lab not in angles]
    if missing:
        raise ValueError(f"angles has no entry for the labels {missing}")
    return {lab: cmap((float(angles[lab]) % 360.0) / 360.0) for lab in label_order}


def heatmap(label_cosine, label_order: Sequence[str], path, title: str = "Label-pair mean cosine") -> Path:
    """E x E mean cosine (AvgCosSim, eq. 11), diverging colormap fixed to [-1, 1], each cell annotated."""
    m = as_numpy(label_cosine)
    e = len(label_order)
    if m.shape != (e, e):
        raise ValueError(f"label_cosine must have shape ({e}, {e}) to match label_order, got {m.shape}")
    plt = pyplot()
    size = max(4.0, 0.55 * e + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(m, cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="mean cosine similarity")
    ax.set_xticks(range(e), labels=list(label_order), rotation=45, ha="right")
    ax.set_yticks(range(e), labels=list(label_order))
    fs = 8 if e <= 12 else 6
    for i in range(e):
        for j in range(e):
            ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=fs,
                    color="white" if abs(m[i, j]) > 0.6 else "black")
    ax.set_title(title)
    return save_figure(fig, path)


def scatter_2d(points, labels: Sequence[str], angles: Mapping[str, float], path, title: str = "", *,
               xlabel: str = "component 1", ylabel: str = "component 2", explained: Sequence[float] | None = None,
               centroids: bool = True) -> Path:
    """2-D scatter of points (n, 2) coloured by label angle; label centroids drawn as ringed markers.
    explained (two variance ratios) is appended to the axis labels when given (PCA)."""
    xy = as_numpy(points)
    labels = [str(v) for v in labels]
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {xy.shape}")
    if len(labels) != xy.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries for {xy.shape[0]} points")
    order = sorted(set(labels), key=lambda lab: (float(angles.get(lab, np.inf)) % 360.0, lab))
    colors = angle_colors(order, angles)
    lab = np.asarray(labels)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 6))
    for name in order:
        sel = lab == name
        ax.scatter(xy[sel, 0], xy[sel, 1], s=9, alpha=0.6, color=colors[name],
                   label=f"{name} ({float(angles[name]):g}\N{DEGREE SIGN})")
        if centroids:
            cx, cy = xy[sel].mean(axis=0)
            ax.scatter([cx], [cy], s=140, color=colors[name], edgecolors="black", linewidths=1.2, zorder=3)
            ax.annotate(name, (cx, cy), xytext=(5, 5), textcoords="offset points", fontsize=8, weight="bold")
    if explained is not None and len(explained) >= 2:
        xlabel = f"{xlabel} ({100 * explained[0]:.1f}% variance)"
        ylabel = f"{ylabel} ({100 * explained[1]:.1f}% variance)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(title="label (angle)", fontsize=8, markerscale=2, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return save_figure(fig, path)


def explained_variance(runs: Mapping[str, Sequence[float]], path, title: str = "PCA explained variance ratio",
                       n_components: int = 10) -> Path:
    """Grouped bars: the first n_components PCA explained-variance ratios, one bar colour per run."""
    if not runs:
        raise ValueError("runs is empty")
    plt = pyplot()
    k = max(min(n_components, len(r)) for r in runs.values())
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * k + 3.0), 4))
    width = 0.8 / len(runs)
    for i, (name, ratios) in enumerate(runs.items()):
        r = as_numpy(ratios)[:k]
        ax.bar(np.arange(1, r.size + 1) + (i - (len(runs) - 1) / 2) * width, r, width=width,
               label=f"{name} (PC1+PC2 {r[:2].sum():.2f})")
    ax.set_xticks(range(1, k + 1))
    ax.set_xlabel("principal component")
    ax.set_ylabel("explained variance ratio")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def sweep_curves(runs: Mapping[str, Sequence[Mapping]], x_key: str, path, title: str = "") -> Path:
    """Two panels (V-measure, CD-r) against row[x_key] (e.g. "dim" or "count"), one line per run.
    Missing or None metric values are left out; the x axis is log2 when x spans more than a factor 16."""
    if not runs:
        raise ValueError("runs is empty")
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    xs_all = []
    for name, rows in runs.items():
        rows = sorted(rows, key=lambda r: r[x_key])
        xs_all += [r[x_key] for r in rows]
        for ax, key in zip(axes, ("v_measure", "cd_r")):
            pts = [(r[x_key], r[key]) for r in rows if r.get(key) is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=name)
    label = {"dim": "PCA dimensions", "count": "number of labels"}.get(x_key, x_key)
    log = bool(xs_all) and min(xs_all) > 0 and max(xs_all) / min(xs_all) > 16
    for ax, name in zip(axes, ("V-measure", "CD-r")):
        if log:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_ylabel(name)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1.02)
    axes[1].axhline(0.0, color="grey", linewidth=0.8)
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)


def grid_bars(rows: Sequence[Mapping], path, title: str = "V-measure and CD-r per run") -> Path:
    """Grouped bars: V-measure and CD-r side by side for each run (row["name"], e.g. "CircularCSE-nGPT");
    a CD-r of None gets no bar and an "n/a" mark."""
    if not rows:
        raise ValueError("rows is empty")
    plt = pyplot()
    names = [str(r["name"]) for r in rows]
    v = [float(r["v_measure"]) for r in rows]
    c = [np.nan if r.get("cd_r") is None else float(r["cd_r"]) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2.0), 4.5))
    ax.bar(x - 0.2, v, width=0.4, label="V-measure", color="tab:blue")
    ax.bar(x + 0.2, np.nan_to_num(c), width=0.4, label="CD-r", color="tab:orange")
    for xi, vi, ci in zip(x, v, c):
        ax.text(xi - 0.2, vi, f"{vi:.2f}", ha="center", va="bottom", fontsize=7)
        if np.isnan(ci):
            ax.text(xi + 0.2, 0.0, "n/a", ha="center", va="bottom", fontsize=7, color="grey")
        else:
            ax.text(xi + 0.2, ci, f"{ci:.2f}", ha="center", va="bottom" if ci >= 0 else "top", fontsize=7)
    ax.set_xticks(x, labels=names, rotation=30, ha="right")
    low = min([0.0] + [ci for ci in c if not np.isnan(ci)])
    ax.set_ylim(min(0.0, low - 0.1), 1.1)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)
