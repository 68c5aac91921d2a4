"""The compositional card's own tables (Table 1, Figures 1-3 as tables, training) and plots, per backbone. The paper
prints no numbers, so every cell is ours. The claims and departures are rendered by the core
(spherekit.experiments.harness.card).

Plots (matplotlib, Agg), per backbone: Figure 1 the 40-bin cosine histograms on [0, 1] of near-misses per family
and the reference pairs under Model A and Model B (first seed); Figure 2 nDCG@10 and Acc@1 after re-ranking with
F0-F4, frozen (blue) and end to end (orange), error bars the sample std over seeds, Model A/B as horizontal lines;
Figure 3 the mean near-miss score per family (lower is better, Model B's pooled cosine dotted) and the ROC-AUC of
positives vs near-misses.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...evaluation.plots import save_figure
from ..api import fmt
from ..api.learning import RULE, grade_training, trainings
from ..api.printed import grid
from .data import FAMILIES
from .paper import LOWERED_BY
from .readings import fig1_means, fig3_means, lowered_share, records, spread
from .spec import CONDITIONS, EXPERIMENT, METRICS, verifier_of
from .undertrained import RULE as UNDERTRAINED_RULE

COLUMNS = tuple((m, m) for m in METRICS)
STAGE1_COLUMNS = (("nDCG@10", "nDCG@10"), ("stage-1/nDCG@10", "stage 1 alone: nDCG@10"), ("Acc@1", "Acc@1"),
                  ("stage-1/Acc@1", "stage 1 alone: Acc@1"))
ENCODERS = ("base", "model_a", "model_b")
COLORS = {"positive": "tab:green", "negative": "tab:blue", "negation": "tab:red", "binding": "tab:purple",
          "spatial": "tab:orange"}
REGIME_COLORS = {"frozen": "tab:blue", "e2e": "tab:orange"}


def _verifiers(scope) -> list[str]:
    return [c for c in CONDITIONS if verifier_of(c) and scope.has(c)]


def _table1(scope) -> str:
    lines = [grid(scope, ENCODERS, COLUMNS, spread=True)]
    if scope.has("model_a", "model_b"):
        cells = []
        for m in METRICS:
            a, b = scope.metric("model_a", m), scope.metric("model_b", m)
            sa, sb = spread(scope.unit("model_a"), m), spread(scope.unit("model_b"), m)
            pm = f" ± {fmt.num(math.hypot(sa, sb))}" if sa is not None and sb is not None else ""
            cells.append(f"{fmt.signed(b - a)}{pm} ({fmt.num(100 * (a - b) / a, 1)}% drop)" if a else fmt.MISSING)
        lines.append("| B - A | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _figure1(scope) -> str:
    rows = ["| pairs | Model A mean | Model B mean | B - A | pairs lowered by B |", "|---|---|---|---|---|"]
    if not scope.has("model_a", "model_b"):
        return "(needs model_a and model_b)"
    a, b = fig1_means(scope.unit("model_a")), fig1_means(scope.unit("model_b"))
    for key in (*FAMILIES, "positive", "negative"):
        if key in a and key in b:
            share = lowered_share(scope.unit("model_a"), scope.unit("model_b"), key, LOWERED_BY)
            rows.append(f"| {key} | {fmt.num(a[key])} | {fmt.num(b[key])} | {fmt.signed(b[key] - a[key])} | "
                        f"{fmt.pct(share, 0)} |")
    return "\n".join(rows)


def _figure3(scope) -> str:
    f3 = fig3_means(scope.units)
    fams = [*FAMILIES, "overall"]
    rows = ["| verifier | " + " | ".join(f"{f}: mean / AUC" for f in fams) + " |", "|---" * (len(fams) + 1) + "|"]
    for cond in (c for c in _verifiers(scope) if c in f3):
        v = f3[cond]
        rows.append(f"| {cond} | " + " | ".join(f"{fmt.num(v[f]['mean'])} / {fmt.num(v[f]['auc'])}" if f in v
                                                else fmt.MISSING for f in fams) + " |")
    b = fig1_means(scope.units.get("model_b"))
    if b:
        fb = [f for f in FAMILIES if f in b]
        rows.append("| Model B pooled cosine (line) | " + " | ".join(fmt.num(b.get(f)) for f in FAMILIES)
                    + f" | {fmt.num(np.mean([b[f] for f in fb]) if fb else None)} |")
    return "\n".join(rows)


def _training(scope) -> str:
    """One row per condition and training: its steps and, per seed, the training seconds and what the gate reads of
    it (learning.grade_training: the probe, the logged curve or the start and final loss, and its grade)."""
    lines = ["| condition | training | steps | train seconds (per seed) | loss (per seed) |", "|---|---|---|---|---|"]
    for cond in (c for c in CONDITIONS if scope.has(c)):
        runs = [trainings(r) for r in scope.runs(cond)]
        for name in dict.fromkeys(n for t in runs for n in t):
            records = [t[name] for t in runs if name in t]
            steps = " / ".join(dict.fromkeys(str(r.get("steps")) for r in records))
            graded = [grade_training(r) for r in records]
            loss = " / ".join(fmt.MISSING if g is None else f"{g}: {why}" for g, why in graded)
            lines.append(f"| {cond} | {name} | {steps} | "
                         + " / ".join(fmt.num(r.get("train_seconds"), 1) for r in records) + f" | {loss} |")
    return "\n".join(lines) if len(lines) > 2 else "(nothing trained)"


def report(results: dict) -> str:
    parts = ["## Ours (the paper prints no table body and no figure values)", "",
             "Every number below is measured here; the claims of the text are checked on them below, each with a 95% "
             "two-level bootstrap interval (the seeds and the evaluation items resampled together: queries for "
             "retrieval, held-out pairs for Figures 1 and 3): a claim holds when the whole interval passes its rule, "
             "and is inconclusive when the interval straddles it or when a training it rests on did not learn "
             f"({RULE}), or, for a claim reading verifier runs, when {UNDERTRAINED_RULE}.", ""]
    if results.get("data"):
        parts += ["Data: " + ", ".join(f"{k} {v}" for k, v in results["data"].items()), ""]
    for scope in EXPERIMENT.scopes(results):
        verifiers = _verifiers(scope)
        parts += [f"### {scope.name}", "",
                  "Table 1 (mean over the suite's sets; mean ± sample std over seeds where there are several):", "",
                  _table1(scope), "",
                  "Figure 1 (mean pooled cosine of held-out near-misses and reference pairs, pooled over seeds):", "",
                  _figure1(scope), "",
                  "Figure 2 (re-ranking the top-K with each verifier, and its stage 1 alone: the untuned encoder "
                  "for frozen verifiers, the jointly trained one end to end; base / model_a / model_b: the encoders "
                  "alone, the figure's lines):", "",
                  grid(scope, [*verifiers, "base", "model_a", "model_b"], STAGE1_COLUMNS, spread=True) if verifiers
                  else "(no verifier ran)", "",
                  "Figure 3 (mean verifier score on held-out near-misses, lower is better / ROC-AUC of positives vs "
                  "near-misses, higher is better; mean over seeds):", "", _figure3(scope), "",
                  "Training (values per seed, in seed order; the loss as the gate reads it: the probe, the logged "
                  "curve's first and last quarters, or a verifier's loss at its first step and over its last 10%):",
                  "", _training(scope), ""]
    return "\n".join(parts)


# ---------------------------------------------------------------- plots

def plots(results: dict, folder: Path) -> list[str]:
    out = []
    for scope in EXPERIMENT.scopes(results):
        for name, plot in (("figure1", lambda p: _plot_figure1(scope, results["config"], p)),
                           ("figure2", lambda p: _plot_figure2(scope, p)),
                           ("figure3", lambda p: _plot_figure3(scope, p))):
            path = folder / f"{name}_{scope.name}.png"
            if plot(path):
                out.append(str(path))
    return out


def _plot_figure1(scope, cfg, path) -> bool:
    import matplotlib.pyplot as plt

    panels = [(c, label) for c, label in (("model_a", "Model A"), ("model_b", "Model B"))
              if records(scope.units.get(c), "figure1")]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    bins = np.linspace(0, 1, cfg["hist_bins"] + 1)
    for ax, (cond, label) in zip(axes[0], panels):
        fig1 = records(scope.unit(cond), "figure1")[0]
        for key in ("positive", "negative", *FAMILIES):
            if key in fig1:
                values = np.clip(fig1[key], 0, 1)
                ax.hist(values, bins=bins, density=True, alpha=0.45, color=COLORS[key],
                        label=f"{key} (n={len(values)}, mean {np.mean(fig1[key]):.2f})")
        ax.set_title(f"{label}: pooled cosine (first seed)")
        ax.set_xlabel("cosine")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches=None)
    return True


def _plot_figure2(scope, path) -> bool:
    import matplotlib.pyplot as plt

    conds = _verifiers(scope)
    if not conds:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("nDCG@10", "Acc@1")):
        for regime, marker in (("frozen", "o"), ("e2e", "s")):
            pts = sorted((verifier_of(c), scope.metric(c, metric), spread(scope.unit(c), metric) or 0.0)
                         for c in conds if c.startswith(regime + "_"))
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker=marker,
                            linestyle="", color=REGIME_COLORS[regime], label=regime)
        for cond, style in (("model_a", "--"), ("model_b", ":")):
            if scope.has(cond):
                ax.axhline(scope.metric(cond, metric), linestyle=style, color="gray", label=cond)
        ax.set_title(f"{metric} after re-ranking")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches=None)
    return True


def _plot_figure3(scope, path) -> bool:
    import matplotlib.pyplot as plt

    f3 = fig3_means(scope.units)
    if not f3:
        return False
    fams = [*FAMILIES, "overall"]
    b = fig1_means(scope.units.get("model_b"))
    fig, axes = plt.subplots(2, len(fams), figsize=(4 * len(fams), 7), squeeze=False)
    for j, fam in enumerate(fams):
        for row, key in ((0, "mean"), (1, "auc")):
            ax = axes[row][j]
            for regime, marker in (("frozen", "o"), ("e2e", "s")):
                pts = sorted((verifier_of(c), v[fam][key]) for c, v in f3.items()
                             if c.startswith(regime + "_") and fam in v)
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
