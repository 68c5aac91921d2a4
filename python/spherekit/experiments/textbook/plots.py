"""The card's plots: cosine distributions (concentration), retrieval vs training examples (losses), retrieval
per mining round, precision / recall against the threshold, ANN recall against speed-up."""

from __future__ import annotations

from pathlib import Path


def _save(fig, folder: Path, name: str) -> str:
    import io

    import matplotlib.pyplot as plt

    from ..._atomic import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    path = folder / name
    atomic_write_bytes(path, buf.getvalue())
    return str(path)


def _grid(n: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 3.8), squeeze=False)
    return fig, axes[0]


def concentration(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        bins = u["details"]["bins"]
        centers = [(a + b) / 2 for a, b in zip(bins[:-1], bins[1:])]
        for label, counts in u["details"]["histograms"].items():
            total = sum(counts) or 1
            ax.plot(centers, [c / total for c in counts], label=label)
        ax.set(title=f"{backbone}: cosine of random pairs", xlabel="cosine", ylabel="fraction")
        ax.legend(fontsize=7)
    return _save(fig, folder, "concentration.png")


def losses(units, cfg, folder):
    key = f"recall@{cfg['eval_k']}"
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        for loss, curve in u["details"]["curves"].items():
            ax.plot([c["examples"] for c in curve], [c[key] for c in curve], marker="o", label=loss)
        ax.set(title=f"{backbone}: {key} while training", xlabel="training rows seen", ylabel=key)
        ax.legend()
    return _save(fig, folder, "losses.png")


def mining(units, cfg, folder):
    key = f"recall@{cfg['eval_k']}"
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        start = u["details"]["start"][key]
        for chain, records in u["details"]["chains"].items():
            ax.plot([0] + [r["round"] for r in records], [start] + [r["metrics"][key] for r in records], marker="o",
                    label=f"{chain}: " + " -> ".join(r["miner"] for r in records))
        ax.set(title=f"{backbone}: mining rounds", xlabel="round", ylabel=key, xticks=range(cfg["rounds"] + 1))
        ax.legend(fontsize=8)
    return _save(fig, folder, "mining.png")


def thresholds(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        c = u["details"]["curve"]
        ax.plot(c["threshold"], [float("nan") if p is None else p for p in c["precision"]], label="precision")
        ax.plot(c["threshold"], c["recall"], label="recall")
        ax.axvline(cfg["rule_of_thumb"], color="red", ls="--", label="0.7 rule of thumb")
        t = u["metrics"]["calibrated_threshold"]
        if t is not None:
            ax.axvline(t, color="green", ls=":", label=f"precision {cfg['target_precision']} at {t:.2f}")
        ax.set(title=f"{backbone}: cos >= t on labelled pairs", xlabel="threshold t")
        ax.legend(fontsize=8)
    return _save(fig, folder, "thresholds.png")


def ann(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        for method in ("ivf", "hnsw"):
            rows = [r for r in u["details"]["rows"] if r["method"] == method]
            ax.plot([r["speedup"] for r in rows], [r["recall"] for r in rows], marker="o", label=method)
        ax.axhline(cfg["target_recall"], color="grey", ls="--")
        ax.set(title=f"{backbone}: recall@{u['details']['k']} vs speed-up", xlabel="speed-up over exact", xscale="log",
               ylabel="recall")
        ax.legend()
    return _save(fig, folder, "ann.png")


PLOTS = {"concentration": concentration, "losses": losses, "mining": mining, "thresholds": thresholds, "ann": ann}


def make_plots(by_section: dict, cfg: dict, folder) -> list[str]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [fn(by_section[name], cfg, folder) for name, fn in PLOTS.items() if name in by_section]
