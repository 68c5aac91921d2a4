"""The circumplex reproduction's card body (ours next to the paper's Table 1, claims) and its plots."""

from __future__ import annotations

from pathlib import Path

from ..base import slug
from .config import PRETRAINED, RUNS, parse_condition
from .paper import TABLE1, check_claims

ANGLE_FREE = ("v_measure", "cd_r", "ring_mae", "offdiag_mean_cosine", "pc12_explained", "alpha_mean", "alpha_max")
HEADERS = {"v_measure": "V-measure", "cd_r": "CD-r", "ring_mae": "ring MAE", "offdiag_mean_cosine":
           "mean off-diagonal cosine", "pc12_explained": "PC1+PC2 variance", "alpha_mean": "nGPT alpha mean",
           "alpha_max": "nGPT alpha max"}


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _groups(results) -> dict[tuple[str, str], dict[str, dict]]:
    """(backbone, regime) -> {run: unit result} for the main grid (all labels); Pretrained joins every regime."""
    groups: dict[tuple[str, str], dict[str, dict]] = {}
    pretrained = {}
    for unit in results["units"].values():
        run = parse_condition(unit["condition"])
        if run.run == PRETRAINED:
            pretrained[slug(unit["backbone"])] = unit
        elif run.labels is None:
            groups.setdefault((slug(unit["backbone"]), run.regime), {})[run.run] = unit
    for (backbone, _), runs in groups.items():
        if backbone in pretrained:
            runs[PRETRAINED] = pretrained[backbone]
    for backbone, unit in pretrained.items():  # a Pretrained-only card
        if not any(b == backbone for b, _ in groups):
            groups[(backbone, "frozen")] = {PRETRAINED: unit}
    return groups


def _vc(runs) -> dict[str, tuple[float, float]]:
    return {name: (u["metrics"]["v_measure"], u["metrics"]["cd_r"]) for name, u in runs.items()}


def _main_table(runs) -> str:
    lines = ["| run | " + " | ".join(HEADERS[k] for k in ANGLE_FREE) + " | train time |",
             "|---" * (len(ANGLE_FREE) + 2) + "|"]
    for name in RUNS:
        if name in runs:
            u = runs[name]
            train = u.get("seconds", {}).get("train")
            lines.append(f"| {name} | " + " | ".join(_f(u["metrics"].get(k)) for k in ANGLE_FREE)
                         + f" | {'-' if train is None else f'{train:.0f} s'} |")
    return "\n".join(lines)


def _paper_table() -> str:
    names = list(TABLE1)
    lines = ["| run | " + " | ".join(f"{n}: V, CD-r" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    for run in RUNS:
        lines.append(f"| {run} | " + " | ".join(f"{TABLE1[n][run][0]:.3f}, {TABLE1[n][run][1]:.3f}"
                                                for n in names) + " |")
    return "\n".join(lines)


def _claims(runs) -> str:
    lines = []
    for claim, evidence, holds in check_claims(_vc(runs)):
        verdict = "n/a (runs missing)" if holds is None else ("holds" if holds else "does not hold")
        lines.append(f"- **{verdict}**: {claim}. Paper: {evidence}.")
    return "\n".join(lines)


def _label_count_table(results) -> str | None:
    rows: dict[tuple[str, str], dict[int, dict]] = {}
    for unit in results["units"].values():
        run = parse_condition(unit["condition"])
        if run.labels:
            rows.setdefault((slug(unit["backbone"]), run.run), {})[run.labels] = unit["metrics"]
    if not rows:
        return None
    groups = _groups(results)
    regime = results["config"].get("label_count_regime", "frozen")
    counts = sorted({k for r in rows.values() for k in r} | {12})
    lines = ["| backbone | run | " + " | ".join(f"{k} labels: V, CD-r" for k in counts) + " |",
             "|---" * (len(counts) + 2) + "|"]
    for (backbone, name), by_count in rows.items():
        full = groups.get((backbone, regime), {}).get(name)
        if full is not None:
            by_count = {**by_count, 12: full["metrics"]}
        cells = [f"{_f(by_count[k]['v_measure'])}, {_f(by_count[k]['cd_r'])}" if k in by_count else "-"
                 for k in counts]
        lines.append(f"| {backbone} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _departures(results) -> list[str]:
    cfg, data = results["config"], results.get("data", {})
    out = [f"backbones: {', '.join(cfg['backbones'])} (the paper: multilingual-e5-large, mxbai-embed-large-v1, "
           "Qwen3-Embedding-4B, llama-embed-nemotron-8b, Llama-3.2-3B, OLMo-3-7B)"]
    if data.get("source") == "offline":
        per = data.get("train_per_label", {})
        out.append(f"data: the offline 12-label set (WordNet, GCIDE, NRC lexicon texts; "
                   f"{min(per.values()) if per else '?'} train and {cfg['n_test_per_label']} test texts per label) "
                   "instead of Emolit, Empathetic Dialogue, SuperEmotion and PersonaGen (500 / 100 per label); "
                   "one dataset, so no average over four")
    if (cfg["epochs"], cfg["batch_size"]) != (15, 128):
        out.append(f"schedule: {cfg['epochs']} epochs x batch {cfg['batch_size']} (the paper: 15 x 128)")
    if results.get("device") != "cuda":
        out.append("precision: fp32 on a CPU (the paper: bf16)")
    out.append("frozen backbones stay in eval mode (no dropout inside them) so their states can be cached; the "
               "authors' trainer leaves them in train mode")
    out.append(f"CD-r over label pairs {cfg['cd_pairs']} and polarity classes by valence (surprise and calmness "
               "neutral): the paper's Fig. 3 and pair set are not in its text")
    return out


def report_body(results: dict) -> str:
    parts = ["## What ran and where it departs from the paper\n", *[f"- {d}" for d in _departures(results)], ""]
    for (backbone, regime), runs in _groups(results).items():
        parts += [f"## {backbone}, {regime} backbone\n", _main_table(runs), "", "Claims:\n", _claims(runs), ""]
    parts += ["## The paper's Table 1 (average over its four datasets)\n", _paper_table(), ""]
    count_table = _label_count_table(results)
    if count_table:
        parts += ["## Label-count study (Fig. 5b; label subsets with evenly spread angles, ours)\n", count_table,
                  "", "Paper: CircularCSE matches SINCERE and SoftCSE at 2-4 labels and falls behind towards 12.", ""]
    parts += ["Metrics: V-measure of spherical k-means (k = labels, 10 initialisations); CD-r = Pearson(circumplex "
              "distance, 1 - mean cosine) over label pairs; ring MAE = mean |label-pair cosine - cos(angle gap)| "
              "(0 for a perfect circle); PC1+PC2 = variance in the first two principal components; nGPT alpha = the "
              "trained geodesic step sizes |alpha_A|, |alpha_M| (init 0.05): each residual turns a token state by at "
              "most about 2 alpha, so an nGPT head whose alphas stay near 0.05 stays close to its input.", ""]
    return "\n".join(parts)


def summary(results: dict) -> str:
    lines = []
    for (backbone, regime), runs in _groups(results).items():
        lines += [f"{backbone}, {regime} backbone: ours (V-measure, CD-r)", _main_table(runs)]
        for claim, _, holds in check_claims(_vc(runs)):
            lines.append(f"  [{'n/a' if holds is None else 'holds' if holds else 'does not hold'}] {claim}")
    return "\n".join(lines)


def make_plots(results: dict, folder) -> list[str]:
    from . import plots

    folder = Path(folder)
    out: list[str] = []
    angles = results.get("data", {}).get("angles", {})
    for (backbone, regime), runs in _groups(results).items():
        tag = f"{backbone}_{regime}"
        rows = [{"name": n, **runs[n]["metrics"]} for n in RUNS if n in runs]
        out.append(str(plots.grid_bars(rows, folder / f"{tag}_grid.png", f"{backbone} ({regime}): V and CD-r")))
        out.append(str(plots.explained_variance(
            {n: runs[n]["details"]["pca_explained_variance_ratio"] for n in RUNS if n in runs},
            folder / f"{tag}_pca_variance.png", f"{backbone} ({regime}): PCA explained variance")))
        out.append(str(plots.sweep_curves({n: runs[n]["details"]["pca_sweep"] for n in RUNS if n in runs}, "dim",
                                          folder / f"{tag}_pca_dims.png", f"{backbone} ({regime}): PCA dimensions")))
        if not angles:
            continue
        for name in (PRETRAINED, "SINCERE-nGPT", "SoftCSE-nGPT", "CircularCSE-nGPT"):
            if name not in runs:
                continue
            d = runs[name]["details"]
            out.append(str(plots.heatmap(d["label_cosine"], d["label_order"], folder / f"{tag}_{name}_cosine.png",
                                         f"{backbone} ({regime}) {name}: label-pair mean cosine")))
            out.append(str(plots.scatter_2d(d["pca_points"], d["pca_labels"], angles, folder / f"{tag}_{name}_pca.png",
                                            f"{backbone} ({regime}) {name}: PCA of the test texts",
                                            explained=d["pca_explained_variance_ratio"][:2])))
            out.append(str(plots.scatter_2d(d["mds_points"], d["mds_labels"], angles, folder / f"{tag}_{name}_mds.png",
                                            f"{backbone} ({regime}) {name}: MDS (cosine distance)")))
    out += _label_count_plot(results, folder)
    return out


def _label_count_plot(results, folder) -> list[str]:
    from . import plots

    series: dict[str, list[dict]] = {}
    groups = _groups(results)
    regime = results["config"].get("label_count_regime", "frozen")
    for unit in results["units"].values():
        run = parse_condition(unit["condition"])
        if run.labels:
            key = f"{slug(unit['backbone'])} {run.run}"
            series.setdefault(key, []).append({"labels": run.labels, **unit["metrics"]})
            full = groups.get((slug(unit["backbone"]), regime), {}).get(run.run)
            if full is not None and not any(r["labels"] == 12 for r in series[key]):
                series[key].append({"labels": 12, **full["metrics"]})
    if not series:
        return []
    series = {k: sorted(v, key=lambda r: r["labels"]) for k, v in series.items()}
    return [str(plots.sweep_curves(series, "labels", Path(folder) / "label_count.png", "Number of labels"))]
