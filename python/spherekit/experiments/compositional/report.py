"""The compositional card's body: Table 1, Figures 1-3 as tables, the paper's claims held / not held (numbers from
the runs), departures and the released code's slips; the plain summary printed after a run; plots (plots.py)."""

from __future__ import annotations

import numpy as np

from ..base import slug
from .claims import _fig1_means, _fig3, _lowered_share, check
from .data import FAMILIES
from .evaluate import METRICS

NOTES = """### Departures and the released code's slips (documented, not copied)

- Data: offline analogues (WordNet/GCIDE triplets, spherekit's near-miss generator, a NanoBEIR-like suite of
  WordNet/GCIDE sets); `--data-dir` runs the released layouts (NQ triplets, near-miss CSVs, NanoBEIR) through the
  same code. Backbones: all-MiniLM-L6-v2 is one of the paper's four; all-mpnet-base-v2 stands in for the larger one.
- Steps: fixed per preset on CPU (the paper sets them from a 4-minute budget and measured throughput, at least
  500; `steps=0` does that here). Maps of `map_size` tokens (64 or 32 on CPU instead of 128) where the preset says.
- The released code's verifier "Acc@1" averaged Acc@1 and Acc@10 (a substring match of metric names): here Acc@1
  is Acc@1, and Acc@10 is reported on its own.
- Its Figure 2 evaluated two of the thirteen NanoBEIR sets: here every set of the suite is used ("mean"), and
  the mean of the first two is kept as "mean2" for comparison.
- Its early stopping (patience counted in evaluation rounds of 10,000 steps) never triggered: no early stopping
  here; the final model is evaluated, as happened there.
- Its Figure 2/3 baselines were hard-coded constants: here the Model A/B lines come from this run's Table 1.
- Stage 1 is exact pooled-cosine top-K (the paper says ANN; the code searched exactly).
"""


def by_backbone(results) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for unit in results["units"].values():
        out.setdefault(slug(unit["backbone"]), {})[unit["condition"]] = unit
    return out


def _pm(m, key) -> str:
    return f"{m[key]:.3f} +- {m.get(key + '_std', 0.0):.3f}"


def _table1(units) -> list[str]:
    rows = ["| model | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for cond, label in (("base", "base (untuned)"), ("model_a", "Model A"), ("model_b", "Model B")):
        if cond in units:
            rows.append(f"| {label} | " + " | ".join(_pm(units[cond]["metrics"], k) for k in METRICS) + " |")
    if "model_a" in units and "model_b" in units:
        a, b = units["model_a"]["metrics"], units["model_b"]["metrics"]
        cells = [f"{b[k] - a[k]:+.3f} +- {np.hypot(a[k + '_std'], b[k + '_std']):.3f} "
                 f"({100 * (a[k] - b[k]) / a[k]:.1f}% drop)" if a[k] else "-" for k in METRICS]
        rows.append("| B - A | " + " | ".join(cells) + " |")
    return rows


def _figure1(units) -> list[str]:
    rows = ["| pairs | Model A mean | Model B mean | B - A | pairs lowered by B |", "|---|---|---|---|---|"]
    a, b = _fig1_means(units.get("model_a")), _fig1_means(units.get("model_b"))
    for key in (*FAMILIES, "positive", "negative"):
        if key in a and key in b:
            share = _lowered_share(units["model_a"], units["model_b"], key)
            rows.append(f"| {key} | {a[key]:.3f} | {b[key]:.3f} | {b[key] - a[key]:+.3f} | {100 * share:.0f}% |")
    return rows


def _figure2(units) -> list[str]:
    rows = ["| verifier | regime | " + " | ".join(METRICS) + " | steps |", "|---" * (len(METRICS) + 3) + "|"]
    for cond, u in units.items():
        if "_F" in cond:
            regime, name = cond.split("_")
            steps = u["seeds"][0]["train"]["steps"]
            rows.append(f"| {name} | {regime} | " + " | ".join(_pm(u["metrics"], k) for k in METRICS) + f" | {steps} |")
    for cond, label in (("model_a", "Model A (line)"), ("model_b", "Model B (line)")):
        if cond in units:
            rows.append(f"| {label} | encoder only | " + " | ".join(_pm(units[cond]["metrics"], k) for k in METRICS)
                        + " | - |")
    return rows


def _figure3(units) -> list[str]:
    f3 = _fig3(units)
    fams = [*FAMILIES, "overall"]
    rows = ["| verifier | " + " | ".join(f"{f}: mean / AUC" for f in fams) + " |", "|---" * (len(fams) + 1) + "|"]
    for cond, v in f3.items():
        rows.append(f"| {cond} | " + " | ".join(f"{v[f]['mean']:.3f} / {v[f]['auc']:.3f}" if f in v else "-"
                                                for f in fams) + " |")
    b = _fig1_means(units.get("model_b"))
    if b:
        rows.append("| Model B pooled cosine (line) | " + " | ".join(
            f"{b[f]:.3f}" if f in b else "-" for f in FAMILIES) + f" | {np.mean([b[f] for f in FAMILIES if f in b]):.3f} |")
    return rows


def _verdict(holds) -> str:
    return "n/a" if holds is None else ("holds" if holds else "does not hold")


def report_body(results) -> str:
    lines = ["## Ours vs the paper", "",
             "The paper prints no table body and no figure values: every number below is measured here; each claim "
             "of the text is followed by the measurement and whether it holds (rules in "
             "spherekit.experiments.compositional.claims).", ""]
    first = next(iter(results["units"].values()), {})
    if first.get("data"):
        lines += ["Data: " + ", ".join(f"{k} {v}" for k, v in first["data"].items()), ""]
    for backbone, units in by_backbone(results).items():
        lines += [f"### {backbone}", "", "Claims:", ""]
        lines += [f"- **{_verdict(h)}**: {c}. Measured: {m}." for c, m, h in check(units)]
        lines += ["", "Table 1 (mean over the suite's sets; mean +- population std over seeds):", "", *_table1(units), ""]
        lines += ["Figure 1 (mean pooled cosine of held-out near-misses and reference pairs):", "", *_figure1(units), ""]
        lines += ["Figure 2 (re-ranking the top-K with each verifier; Model A/B lines from Table 1):", "",
                  *_figure2(units), ""]
        lines += ["Figure 3 (mean verifier score on held-out near-misses, lower is better / ROC-AUC of positives vs "
                  "near-misses, higher is better):", "", *_figure3(units), ""]
    return "\n".join(lines) + "\n" + NOTES


def summary(results) -> str:
    out = []
    for backbone, units in by_backbone(results).items():
        for claim, measured, holds in check(units):
            out.append(f"[{_verdict(holds):>13}] {backbone}: {claim[:60]} | {measured[:70]}")
    return "\n".join(out)


def make_plots(results, folder) -> list[str]:
    from .plots import make_plots as plots

    return plots(by_backbone(results), results["config"], folder)
