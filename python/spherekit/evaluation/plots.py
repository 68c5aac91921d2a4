"""PNG plots of evaluation results (matplotlib, Agg backend; nothing is shown on screen).

    plot_layer_curves({"MRR": [...], ...}, layers, path)         per-layer curves (Figure 3 of "Principles of
                                                                 Concept Representation in Sentence Encoders",
                                                                 arXiv:2606.06994)
    plot_cosine_distributions({"true pairs": t, ...}, path)      histograms of cosine similarities
    plot_projection(coords (n, 2), labels, path)                 PCA / MDS scatter coloured by label
Every function writes the file atomically (temporary file + rename) and returns its Path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .._atomic import atomic_path


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, *, dpi: int = 120, bbox_inches: str | None = "tight") -> Path:
    """Write fig as a PNG at path atomically (a reader never sees half a file) and close it."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, bbox_inches=bbox_inches, format="png")
    finally:
        pyplot().close(fig)
    return path


def as_numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def plot_layer_curves(series: Mapping[str, Sequence[float]], layers: Sequence[int], path, *,
                      ylabel: str = "", title: str = "") -> Path:
    """One line per series over the layer indices (e.g. {"B0 MRR": [...]})."""
    if not series:
        raise ValueError("series is empty")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in series.items():
        if len(values) != len(layers):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(layers)} layers")
        ax.plot(list(layers), list(values), marker="o", label=name)
    ax.set_xlabel("layer index")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, path)


def plot_cosine_distributions(groups: Mapping[str, object], path, *, title: str = "", bins: int = 50) -> Path:
    """Overlaid histograms (densities) of cosine similarities, one per group."""
    if not groups:
        raise ValueError("groups is empty")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in groups.items():
        v = as_numpy(values)
        if v.size:
            ax.hist(v, bins=bins, range=(-1.0, 1.0), density=True, alpha=0.5, label=f"{name} (mean {v.mean():.3f})")
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, path)


def plot_projection(coords, labels: Sequence, path, *, title: str = "", explained: Sequence[float] | None = None,
                    max_legend: int = 20) -> Path:
    """2-D scatter of coords (n, 2) coloured by label; axis titles carry explained variance when given."""
    xy = as_numpy(coords)
    if xy.ndim != 2 or xy.shape[1] < 2:
        raise ValueError(f"coords must have shape (n, 2), got {xy.shape}")
    labels = list(labels)
    if len(labels) != xy.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries for {xy.shape[0]} points")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 6))
    names = sorted(set(labels), key=str)
    cmap = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    lab = np.array([str(x) for x in labels])
    for i, name in enumerate(names):
        sel = lab == str(name)
        ax.scatter(xy[sel, 0], xy[sel, 1], s=10, alpha=0.7, color=cmap(i % cmap.N), label=str(name))
    if explained is not None and len(explained) >= 2:
        ax.set_xlabel(f"component 1 ({100 * explained[0]:.1f}% variance)")
        ax.set_ylabel(f"component 2 ({100 * explained[1]:.1f}% variance)")
    ax.set_title(title)
    if len(names) <= max_legend:
        ax.legend(markerscale=2, fontsize=8)
    return save_figure(fig, path)
