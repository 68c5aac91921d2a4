"""The DefSent+ card's own tables per backbone (ours next to the paper's Tables 1, 2, 8, 3/6 and 7, the ICA banks,
the bank geometry of Figures 1-7) and its plots (the banks' 2-D views, the proxies per condition). The claims and
departures are rendered by the core (spherekit.experiments.harness.card)."""

from __future__ import annotations

import math
from pathlib import Path

from ...evaluation.plots import save_figure
from ..api import fmt, learning
from ..api.printed import find
from . import noise
from .paper import PRINTED, STS_BEST, TABLE1, TABLE3, TABLE3_GAINS, TABLE7_PROMPT_STS
from .spec import CROSS_MRR, EXPERIMENT, POOLINGS, PROBE, SIM, STEP_OF, best_run, pooled, reverse_dictionary_key

RD = tuple(reverse_dictionary_key(k) for k in (1, 10, 100))
HEADLINE = ((pooled(SIM), "WordNet-sim Spearman"), (pooled(CROSS_MRR), "cross-dict MRR"), (RD[0], "RD Acc@1"),
            (RD[1], "RD Acc@10"), (RD[2], "RD Acc@100"), (pooled(PROBE), "probe Acc"))


def _n(x) -> str:
    return fmt.num(x, 2)


def _ms(scope, cond, key) -> str:
    """Mean ± std over the unit's seeds (the mean alone with one run)."""
    std = scope.unit(cond).get("spread", {}).get("std", {}).get(key)
    return fmt.pm(scope.get(cond, key), std, 2)


def _conditions(scope) -> list[str]:
    return [c for c in EXPERIMENT.conditions if scope.has(c)]


def _first_run(scope, cond) -> dict:
    runs = scope.runs(cond)
    return runs[0] if runs else {}


def _best(scope, cond) -> dict:
    return best_run(scope.runs(cond))


def _headline(scope) -> tuple:
    has_sts = any(scope.get(c, STS_BEST) is not None for c in scope.units)
    return (((STS_BEST, "STS avg"),) if has_sts else ()) + HEADLINE


def table1(scope) -> str:
    rows = ["| dictionary | ours: entries | definitions | held-out RD definitions | max (median) tokens "
            "| paper: entries | definitions | max (median) |", "|---|---|---|---|---|---|---|---|"]
    stats = {}
    for cond in _conditions(scope):
        if "dictionary" in _first_run(scope, cond):
            stats.setdefault(STEP_OF[cond].dictionary, _first_run(scope, cond)["dictionary"])
    for name in sorted(stats):
        s, p = stats[name], TABLE1[name]
        rows.append(f"| {name} | {fmt.count(s['entries'])} | {fmt.count(s['definitions'])} | {s['held_out']} | "
                    f"{s.get('max_tokens')} ({s.get('median_tokens')}) | {fmt.count(p[1])} | {fmt.count(p[0])} | "
                    f"{p[2]} ({p[3]}) |")
    return "\n".join(rows)


def _paper(cond, setting) -> str:
    p = find(PRINTED, cond, STS_BEST, setting)
    return fmt.pm(p.value, p.std, 2) if p else fmt.MISSING


def table2(scope) -> str:
    keys = _headline(scope)
    rows = [f"| condition | {' | '.join(label for _, label in keys)} | best run: {keys[0][1]} (seed) | paper BERT-base "
            "STS avg | paper RoBERTa-base |", "|---|" + "---|" * (len(keys) + 3)]
    for cond in _conditions(scope):
        best = _best(scope, cond)
        rows.append(f"| {cond} | " + " | ".join(_ms(scope, cond, k) for k, _ in keys) + f" | "
                    f"{_n(best['metrics'].get(keys[0][0]))} ({best['seed'] if best['seed'] is not None else '-'}) | "
                    f"{_paper(cond, 'BERT-base')} | {_paper(cond, 'RoBERTa-base')} |")
    untrained = [f"{c} " + " / ".join(_n(_first_run(scope, c)["rd_untrained"].get(k)) for k in RD)
                 for c in _conditions(scope) if _first_run(scope, c).get("rd_untrained")]
    if untrained:  # the base encoder has no trained pooler: its reverse dictionary against each 1st step's bank
        rows.append("\nbase (the starting encoder with its untrained pooler) against each 1st step's bank, RD Acc@1 / "
                    "@10 / @100: " + "; ".join(untrained) + ".")
    return "\n".join(rows)


def table8(scope, cfg) -> str:
    """Every 1st step by its (pooling, bank); the paper's Table 8 is on dictionary a (other rows: '-')."""
    rows = ["| (pooling, bank) | condition | ours: WordNet-sim | RD Acc@10 | paper BERT-base | paper RoBERTa-base |",
            "|---|---|---|---|---|---|"]
    for cond in _conditions(scope):
        s = STEP_OF[cond]
        if s.step != 1 or s.word_bank or s.printed or s.lr is not None:  # a sweep unit: the 1st step's cell
            continue
        pool, bank = _first_run(scope, cond).get("combination") or (cfg["training_pooling"], cfg["bank_kind"])
        paper = [find(PRINTED, f"1st-a-{pool}-{bank}", STS_BEST, e) if s.dictionary == "a" else None
                 for e in ("BERT-base", "RoBERTa-base")]
        rows.append(f"| ({pool}, {bank}) | {cond} | {_ms(scope, cond, pooled(SIM))} | {_ms(scope, cond, RD[1])} | "
                    + " | ".join(_n(p.value) if p else fmt.MISSING for p in paper) + " |")
    return "\n".join(rows)


def objective_table(scope) -> str | None:
    """Each trained unit's objective against the uniform softmax and its reverse dictionary: did eq. 1 (or DefSent's
    vocabulary softmax) learn, by the core's rule with the ceiling the run recorded (noise.ceiling)?"""
    rows = ["| condition | pooler | classes E | ln E | start loss | final loss | learned (seeds) | h norm at start "
            "| logit std at start | RD Acc@1 | RD Acc@10 | RD Acc@100 |", "|---|" + "---|" * 11]
    for cond in _conditions(scope):
        runs = [r for r in scope.runs(cond) if learning.curve_of(r) and (r.get("bank") or {}).get("entries")]
        if not runs:
            continue
        first, classes = runs[0], runs[0]["bank"]["entries"]
        curves = [learning.curve_of(r) for r in runs]
        start = sum(c[0] for c in curves) / len(curves)
        final = sum(sum(c[-max(1, len(c) // 4):]) / max(1, len(c) // 4) for c in curves) / len(curves)
        grades = [learning.grade_training(learning.trainings(r)[learning.ENCODER])[0] for r in runs]
        begin = first.get("start") or {}
        rows.append(f"| {cond} | {first.get('pooler', 'backbone')} | {fmt.count(classes)} | {_n(math.log(classes))} | "
                    f"{_n(start)} | {_n(final)} | {grades.count(learning.LEARNED)} of {len(runs)} | "
                    f"{_n(begin.get('h_norm'))} | {_n(begin.get('logit_std'))} | "
                    + " | ".join(_ms(scope, cond, k) for k in RD) + " |")
    if len(rows) == 2:
        return None
    return "\n".join(rows) + (f"\n\nStart loss: the first logged loss; final loss: the mean of the last quarter of the "
                              f"logged curve. Learned: {learning.RULE}; the ceiling here is {noise.CEILING_FRACTION:g} "
                              "x ln E (the uniform softmax's loss).")


def table3(scope) -> str:
    if not scope.has("base"):
        return "(no base unit)"
    b, bp = scope.get("base", pooled(SIM)), scope.get("base", pooled(PROBE))
    rows = ["| condition | base WordNet-sim | best run | mean ± std | gain (best run) | base probe "
            "| probe (best run) |",
            "|---|---|---|---|---|---|---|"]
    for cond in _conditions(scope):
        if cond == "base":
            continue
        best = _best(scope, cond)["metrics"]
        rows.append(f"| {cond} | {_n(b)} | {_n(best[pooled(SIM)])} | {_ms(scope, cond, pooled(SIM))} | "
                    f"{fmt.signed(best[pooled(SIM)] - b, 2)} | {_n(bp)} | {_n(best[pooled(PROBE)])} |")
    rows.append(f"\nPaper, Table 3 (best of 10, STS avg): DefSent+ on a sentence-trained start gains "
                f"{fmt.signed(TABLE3_GAINS[0], 2)} to {fmt.signed(TABLE3_GAINS[1], 2)} points in {len(TABLE3)} of "
                f"{len(TABLE3)} rows (SynCSE-partial RoBERTa-large only after a 2nd step).")
    return "\n".join(rows)


def table7(scope) -> str:
    rows = ["| condition | best pooling, WordNet-sim (dev) | best pooling, probes | "
            + " | ".join(f"WordNet-sim {p}" for p in POOLINGS) + " | " + " | ".join(f"probe {p}" for p in POOLINGS)
            + " |", "|---|---|---|" + "---|" * 2 * len(POOLINGS)]
    for cond in _conditions(scope):
        best = _best(scope, cond)
        probe = max(POOLINGS, key=lambda p: best["metrics"].get(pooled(PROBE, p), -1))
        cells = [_ms(scope, cond, pooled(k, p)) for k in (SIM, PROBE) for p in POOLINGS]
        rows.append(f"| {cond} | {best.get('best_pooling')} | {probe} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + (f"\n\nThe best poolings are those of each unit's best run. Paper, Table 7: Prompt is "
                              f"the best STS pooling for {TABLE7_PROMPT_STS[0]} of {TABLE7_PROMPT_STS[1]} released "
                              "encoders (chosen on the test sets).")


def ica_table(scope) -> str | None:
    """The ICA bank against the quasi-isotropic bank of the same step: reported, not judged (the paper's own
    differences go both ways)."""
    rows = ["| step | ours: ICA bank | quasi-isotropic bank | difference | paper (STS avg): "
            + " / ".join(("BERT-base", "BERT-large", "RoBERTa-base", "RoBERTa-large")) + " |", "|---|---|---|---|---|"]
    for cond in _conditions(scope):
        plain = cond.removesuffix("-ica")
        if cond == plain or not scope.has(plain):
            continue
        ica, base = scope.get(cond, pooled(SIM)), scope.get(plain, pooled(SIM))
        paper = []
        for e in ("BERT-base", "BERT-large", "RoBERTa-base", "RoBERTa-large"):
            p, q = find(PRINTED, cond, STS_BEST, e), find(PRINTED, plain, STS_BEST, e)
            paper.append(fmt.signed(p.value - q.value, 2) if p and q else fmt.MISSING)
        rows.append(f"| {cond} vs {plain} | {_n(ica)} | {_n(base)} | {fmt.signed(ica - base, 2)} | "
                    + " / ".join(paper) + " |")
    return "\n".join(rows) if len(rows) > 2 else None


def _banked(scope) -> list[str]:
    """The conditions with a bank record, but the LR sweep's (their bank is the plain 1st step's)."""
    return [c for c in _conditions(scope) if _first_run(scope, c).get("bank") and STEP_OF[c].lr is None]


def geometry_table(scope) -> str:
    rows = ["| bank | entries | SVD-2D corr | top-1 energy | mean cosine | outside r=3 (2-D whitened; Gaussian 1.1%) "
            "| outside chi2 99% (full) | mean abs skew | mean excess kurtosis | ICA |", "|---|" + "---|" * 9]
    for cond in _banked(scope):
        g = _first_run(scope, cond)["bank"]
        ica = g.get("ica")
        ica_s = fmt.MISSING if not ica else (f"{ica['whiten']}, {ica['n_iter']} it, "
                                             + ("converged" if ica["converged"] else "NOT converged"))
        rows.append(f"| {cond} (built by {g['source']}) | {fmt.count(g['entries'])} | {fmt.signed(g['svd_corr'])} | "
                    f"{fmt.num(g['svd_top1_share'])} | {fmt.num(g['mean_cosine'])} | {fmt.pct(g['outside_2d'], 2)} | "
                    f"{fmt.pct(g['outside_full'], 2)} | {_n(g['abs_skew'])} | {_n(g['excess_kurtosis'])} | {ica_s} |")
    return "\n".join(rows)


def report(results: dict) -> str:
    data = results.get("data") or {}
    parts = ["## What ran", "",
             f"Evaluation: {data.get('evaluation', 'offline proxies')}. Held-out sets: "
             + ", ".join(f"{k} {v}" for k, v in data.items() if k != "evaluation") + ". Ours are proxies (Spearman x "
             "100 / MRR x 100 / accuracy %), the paper's are STS averages: compare directions, not values."]
    for scope in EXPERIMENT.scopes(results):
        parts += ["", f"## Results on {scope.name}", "",
                  "### Table 1: dictionaries", "", table1(scope), "",
                  "### Table 2: PST steps and dictionaries (mean ± std over seeds; best pooling chosen on dev)", "",
                  table2(scope), ""]
        objective = objective_table(scope)
        if objective:
            parts += ["### Objective: eq. 1 against the uniform softmax (per unit, mean over seeds)", "", objective, ""]
        parts += ["### Table 8: (training pooling, bank) grid at the 1st step", "", table8(scope, results["config"]),
                  "", "### Tables 3 and 6: further training a sentence-trained encoder", "", table3(scope), "",
                  "### Table 7: pooling chosen at evaluation", "", table7(scope)]
        ica = ica_table(scope)
        if ica:
            parts += ["", "### ICA bank vs quasi-isotropic bank (appendix A; WordNet-sim Spearman)", "",
                      "The paper's differences go both ways (BERT gains, RoBERTa loses at the 3rd step); claim "
                      "T2-ICA judges the BERT direction (MiniLM is a BERT-architecture encoder).", "", ica]
        parts += ["", "### Figures 1-7: geometry of the banks", "", geometry_table(scope)]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- plots

def plots(results: dict, folder: Path) -> list[str]:
    paths = []
    for scope in EXPERIMENT.scopes(results):
        for plot in (_banks, _proxies):
            path = plot(scope, folder)
            if path is not None:
                paths.append(str(path))
    return paths


def _banks(scope, folder):
    """The banks' 2-D SVD (non-centred) and whitened 2-D PCA views (Figures 1, 2, 4-7, with the ideal unit circle
    of radius 3)."""
    import matplotlib.pyplot as plt
    import numpy as np

    banks = [(c, _first_run(scope, c)["bank"]) for c in _banked(scope)]
    if not banks:
        return None
    fig, axes = plt.subplots(2, len(banks), figsize=(3.2 * len(banks), 6.4), squeeze=False)
    for j, (name, g) in enumerate(banks):
        svd, white = np.asarray(g["points_svd"]), np.asarray(g["points_white"])
        axes[0, j].scatter(svd[:, 0], svd[:, 1], s=2, alpha=0.5)
        axes[0, j].set_title(f"{name}\nSVD, corr {fmt.signed(g['svd_corr'], 2)}", fontsize=8)
        axes[1, j].scatter(white[:, 0], white[:, 1], s=2, alpha=0.5, color="tab:orange")
        axes[1, j].add_patch(plt.Circle((0, 0), 3, fill=False, ls=":", color="k"))
        axes[1, j].set_aspect("equal")
        axes[1, j].set_title(f"whitened PCA, {fmt.pct(g['outside_2d'])} outside r=3", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, folder / f"{scope.name}_banks.png", dpi=110, bbox_inches=None)


def _proxies(scope, folder):
    """The proxies per condition: mean over seeds, the spread as error bars."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = _conditions(scope)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (key, label) in zip(axes, [(pooled(SIM), "WordNet-sim Spearman x100"),
                                       (pooled(CROSS_MRR), "cross-dictionary MRR x100"),
                                       (pooled(PROBE), "probe accuracy %")]):
        mean = [scope.get(n, key, np.nan) for n in names]
        std = [scope.unit(n).get("spread", {}).get("std", {}).get(key, 0.0) for n in names]
        ax.bar(range(len(names)), mean, yerr=std, capsize=3)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        finite = [v for v in mean if np.isfinite(v)]
        if finite:
            ax.set_ylim(min(finite) - 3, max(finite) + 3)
        ax.set_title(label, fontsize=9)
    fig.suptitle(f"{scope.name}: proxies per condition (mean ± std over seeds)", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, folder / f"{scope.name}_proxies.png", dpi=110, bbox_inches=None)
