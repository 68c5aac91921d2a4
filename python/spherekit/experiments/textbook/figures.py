"""The textbook card's own tables (per section, what was measured on each backbone, the chapter's one number next
to ours, the mining rounds, the ANN sweep, the order examples) and its plots (cosine distributions, retrieval while
training, mining rounds, precision / recall against the threshold, ANN recall against speed-up, the role swaps'
cosines). The claims and departures are rendered by the core (spherekit.experiments.harness.card). Tables and plots that
read a run's details show the first seed's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...evaluation.plots import save_figure
from ..api import fmt
from ..api.claims import Scope
from ..api.plugin import slug
from ..api.printed import grid
from ..api.units import unit_runs
from .checks import (AT_TARGET, CORPORA, GAP_HARDEST, GAP_RANDOM, IN_RANGE, RELATIVE_ERROR, ROLE_SWAP_COSINE,
                     ROLE_SWAPS, STD_768)
from .paper import PRINTED
from .spec import LOSSES, POOLINGS, SECTIONS


def _by_section(results) -> dict[str, dict[str, dict]]:
    """{section: {backbone: unit}} in the card's order."""
    out: dict[str, dict[str, dict]] = {}
    for unit in results["units"].values():
        out.setdefault(unit["condition"], {})[slug(unit["backbone"])] = unit
    return out


def _details(unit) -> dict:
    """The details of the unit's first run (seed order)."""
    runs = unit_runs(unit) or [{}]
    return runs[0].get("details", {})


def _columns(section: str, cfg: dict, units: dict) -> list[tuple]:
    """(metric key, label[, digits]) of a section's table."""
    k = f"R@{cfg['eval_k']}"
    if section == "listings":
        return [("dimension", "dimension", 0), ("listing1/cosine (paraphrase)", "cos paraphrase", 4),
                ("listing1/cosine (closest unrelated pair)", "cos unrelated (closer pair)", 4),
                ("listing3/loss (random example)", "MNRL, random example", 4),
                ("listing4/positives returned", "positives mined", 0),
                ("paraphrases/cosine gap (mean)", "set: cos gap paraphrase - unrelated", 4),
                ("paraphrases/count", "set: sentences", 0)]
    if section == "concentration":
        return [(STD_768, "random std, d=768", 4), (RELATIVE_ERROR, "largest relative error", 4),
                ("passages/anisotropy", "passages: mean cos"), ("passages/cosine std", "passages: std of cos"),
                ("isotropic/cosine std", "isotropic std"), (GAP_RANDOM, "median gap (random)"),
                (IN_RANGE, "share in gap range"), (GAP_HARDEST, "median gap (hardest)"),
                ("cosine (best relevant passage, median)", "median cos relevant")]
    if section == "pooling":
        return [(f"{stage}/{p}/{k}", f"{stage} {p} {k}") for stage in ("frozen", "trained") for p in POOLINGS]
    if section == "losses":
        return [(f"start/{k}", f"start {k}")] + [c for x in LOSSES for c in (
            (f"{x}/{k}", f"{x} {k}"), (f"{x}/{k} (mean over the training curve)", f"{x} curve mean"))]
    if section == "mining":
        return [("count (test queries)", "test queries", 0), (f"start/{k}", f"start {k}")] + [
            (f"{chain}/round{r}/{k}", f"{chain} round {r}") for chain in ("hard", "random")
            for r in range(1, cfg["rounds"] + 1)]
    if section == "thresholds":
        p = cfg["target_precision"]
        return [("calibrated/threshold", f"t at precision {p}"), ("calibrated/recall", "its recall"),
                ("best F1/threshold", "best-F1 t"), ("best F1/F1", "best F1"),
                ("rule of thumb/precision", f"precision at {cfg['rule_of_thumb']}"),
                ("rule of thumb/recall", f"recall at {cfg['rule_of_thumb']}"),
                ("rule of thumb/F1", f"F1 at {cfg['rule_of_thumb']}"),
                ("sentences/best F1/F1", "sentences: best F1"),
                ("sentences/rule of thumb/F1", f"sentences: F1 at {cfg['rule_of_thumb']}")] + [
                    (f"{c}/threshold (best F1, calibration part)", f"{c}: calibrated t") for c in CORPORA] + [
                    (f"{c}/F1 (evaluation part, {src} threshold)", f"{c}: F1 at {src} t")
                    for c in CORPORA for src in CORPORA]
    if section == "ann":
        ks = sorted({_details(u).get("k", cfg["ann_k"]) for u in units.values()})
        return [c for x, param in (("ivf", "nprobe"), ("hnsw", "efSearch")) for c in (
            *((f"{x}/R@{n} (exact neighbours, best setting)", f"{x} best recall@{n}") for n in ks),
            (f"{x}/{param} {AT_TARGET}", f"{x} {param} at target", 0),
            (f"{x}/speed-up {AT_TARGET}", f"{x} speed-up at target", 2),
            (f"{x}/share scanned {AT_TARGET}", f"{x} share scanned at target", 4))]
    return [("chapter pair/cosine (role swap)", "cos role swap", 4),
            ("chapter pair/cosine (same meaning)", "cos same meaning", 4),
            ("examples/correct (pooled cosine)", "right first: cosine", 0),
            ("examples/correct (verifier re-rank)", "right first: re-rank", 0), ("examples/count", "examples", 0),
            ("near-misses/Acc (pooled cosine)", "near-miss Acc: cosine"),
            ("near-misses/Acc (verifier re-rank)", "near-miss Acc: re-rank"),
            ("role swaps/cosine (mean)", "set: cos role swap", 4), ("role swaps/count", "set: role swaps", 0)]


def _section_table(section: str, units: dict, cfg: dict) -> str:
    """The section's metrics, one row per backbone (mean ± std over seeds), with the chapter's number in brackets;
    the columns without a value on any backbone are named below it."""
    columns = _columns(section, cfg, units)
    printed = [dataclasses.replace(p, condition=b) for p in PRINTED if p.condition == section for b in units]
    table = grid(Scope(section, units), list(units), columns, printed, spread=True, row_label="backbone")
    empty = [c[1] for c in columns if all(u["metrics"].get(c[0]) is None for u in units.values())]
    note = ("\n\nNo value on any backbone (the target is not reached, or this preset does not measure it): "
            + ", ".join(empty)) if empty else ""
    return table + note


def _mining_table(units, cfg) -> str:
    """One row per (chain, round) of the first seed: the miner, retrieval, random top-ups (of all negatives
    drawn: queries x num_negatives) and the overlap with the previous round's negatives."""
    k = cfg["eval_k"]
    rows = [f"Queries: {cfg.get('mining_queries', 'terms')}; first seed's rounds.", "",
            f"| backbone | chain | round | negatives from | R@{k} | MRR@{k} | random top-ups | overlap with the "
            "previous round |", "|---|---|---|---|---|---|---|---|"]
    for backbone, u in units.items():
        d = _details(u)
        start = d["start"]
        rows.append(f"| {backbone} | - | 0 | (the backbone) | {fmt.num(start[f'R@{k}'])} | "
                    f"{fmt.num(start[f'MRR@{k}'])} | - | - |")
        for chain, records in d["chains"].items():
            for r in records:
                m = r["metrics"]
                rows.append(f"| {backbone} | {chain} | {r['round']} | {r['miner']} | {fmt.num(m[f'R@{k}'])} | "
                            f"{fmt.num(m[f'MRR@{k}'])} | {_top_ups(r)} | "
                            f"{fmt.num(r['overlap_with_previous'])} |")
    return "\n".join(rows)


def _top_ups(record) -> str:
    """Random top-ups of a round: the count, and its share of the negatives drawn where the record has it."""
    drawn = record.get("negatives_drawn")
    share = f" ({fmt.pct(record['topped_up'] / drawn, 0)})" if drawn else ""
    return fmt.count(record["topped_up"]) + share


def _ann_table(unit) -> str:
    d = _details(unit)
    rows = [f"| method | setting | recall@{d['k']} | speed-up | corpus scanned |", "|---|---|---|---|---|"]
    for r in d["rows"]:
        name = "nprobe" if r["method"] == "ivf" else "efSearch"
        rows.append(f"| {r['method']} | {name} {r['param']} | {fmt.num(r['recall'])} | {fmt.num(r['speedup'], 1)}x | "
                    f"{fmt.pct(r['fraction_scanned'])} |")
    return "\n".join(rows)


def _order_table(unit) -> str:
    rows = ["| query | same-meaning passage | role swap | cos same / swap | verifier same / swap |",
            "|---|---|---|---|---|"]
    for e in _details(unit)["examples"]:
        cos, ver = e["cosine"], e["verifier"]
        rows.append(f"| {e['query']} | {e['same_meaning']} | {e['role_swap']} | {fmt.num(cos['same_meaning'], 4)} / "
                    f"{fmt.num(cos['role_swap'], 4)} | {fmt.num(ver['same_meaning'])} / {fmt.num(ver['role_swap'])} |")
    return "\n".join(rows)


def report(results: dict) -> str:
    cfg = results["config"]
    lines = ["## What was measured", "",
             "The chapter prints no outputs and trains nothing at scale: every number below is measured here, on the "
             "offline data (WordNet: a held-out term retrieves its glosses, headwords masked; see the data section of "
             "results.json), except the chapter's one number, in brackets. Per section, one row per backbone (mean ± "
             "std over seeds where several ran).", ""]
    data = results.get("data") or {}
    if data:
        lines += ["Data: " + ", ".join(f"{k} {v}" for k, v in data.items()), ""]
    sections = _by_section(results)
    for name, what in SECTIONS.items():
        if name not in sections:
            continue
        units = sections[name]
        lines += [f"### {name}: {what}", "", _section_table(name, units, cfg), ""]
        if name == "listings":
            for backbone, unit in units.items():
                sims = _details(unit)["similarities"]
                lines += [f"{backbone}: listing 1 similarities (" + ", ".join(f"{k}: {fmt.num(v, 4)}"
                                                                              for k, v in sims.items()) + ")", ""]
        if name == "mining":
            lines += [_mining_table(units, cfg), ""]
        for backbone, unit in units.items():
            if name == "ann":
                lines += [f"{backbone}:", "", _ann_table(unit), ""]
            if name == "order":
                lines += [f"{backbone}:", "", _order_table(unit), ""]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- plots

def _grid(n: int):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 3.8), squeeze=False)
    return fig, axes[0]


def _concentration(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        d = _details(u)
        bins = d["bins"]
        centers = [(a + b) / 2 for a, b in zip(bins[:-1], bins[1:])]
        for label, counts in d["histograms"].items():
            total = sum(counts) or 1
            ax.plot(centers, [c / total for c in counts], label=label)
        ax.set(title=f"{backbone}: cosine of random pairs", xlabel="cosine", ylabel="fraction")
        ax.legend(fontsize=7)
    return save_figure(fig, folder / "concentration.png", dpi=110)


def _losses(units, cfg, folder):
    key = f"R@{cfg['eval_k']}"
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        for loss, curve in _details(u)["curves"].items():
            ax.plot([c["examples"] for c in curve], [c[key] for c in curve], marker="o", label=loss)
        ax.set(title=f"{backbone}: {key} while training", xlabel="training rows seen", ylabel=key)
        ax.legend()
    return save_figure(fig, folder / "losses.png", dpi=110)


def _mining(units, cfg, folder):
    key = f"R@{cfg['eval_k']}"
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        d = _details(u)
        start = d["start"][key]
        for chain, records in d["chains"].items():
            ax.plot([0] + [r["round"] for r in records], [start] + [r["metrics"][key] for r in records], marker="o",
                    label=f"{chain}: " + " -> ".join(r["miner"] for r in records))
        ax.set(title=f"{backbone}: mining rounds", xlabel="round", ylabel=key, xticks=range(cfg["rounds"] + 1))
        ax.legend(fontsize=8)
    return save_figure(fig, folder / "mining.png", dpi=110)


def _thresholds(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        c = _details(u)["curve"]
        ax.plot(c["threshold"], [float("nan") if p is None else p for p in c["precision"]], label="precision")
        ax.plot(c["threshold"], c["recall"], label="recall")
        ax.axvline(cfg["rule_of_thumb"], color="red", ls="--", label="0.7 rule of thumb")
        t = u["metrics"].get("calibrated/threshold")
        if t is not None:
            ax.axvline(t, color="green", ls=":", label=f"precision {cfg['target_precision']} at {t:.2f}")
        ax.set(title=f"{backbone}: cos >= t on labelled pairs", xlabel="threshold t")
        ax.legend(fontsize=8)
    return save_figure(fig, folder / "thresholds.png", dpi=110)


def _ann(units, cfg, folder):
    fig, axes = _grid(len(units))
    for ax, (backbone, u) in zip(axes, units.items()):
        d = _details(u)
        for method in ("ivf", "hnsw"):
            rows = [r for r in d["rows"] if r["method"] == method]
            ax.plot([r["speedup"] for r in rows], [r["recall"] for r in rows], marker="o", label=method)
        ax.axhline(cfg["target_recall"], color="grey", ls="--")
        ax.set(title=f"{backbone}: recall@{d['k']} vs speed-up", xlabel="speed-up over exact", xscale="log",
               ylabel="recall")
        ax.legend()
    return save_figure(fig, folder / "ann.png", dpi=110)


def _order(units, cfg, folder):
    """Histogram of cos(sentence, its role swap) over the set order-1 reads, the rule's 0.9 and the chapter's pair
    marked; None when no run kept the set (cards measured before it)."""
    swaps = {b: (unit_runs(u) or [{}])[0].get("per_item", {}).get(ROLE_SWAPS) for b, u in units.items()}
    swaps = {b: v for b, v in swaps.items() if v}
    if not swaps:
        return None
    fig, axes = _grid(len(swaps))
    for ax, (backbone, values) in zip(axes, swaps.items()):
        ax.hist(values, bins=30, color="tab:blue", alpha=0.8)
        ax.axvline(ROLE_SWAP_COSINE, color="red", ls="--", label=f"order-1's threshold {ROLE_SWAP_COSINE}")
        chapter = units[backbone]["metrics"].get("chapter pair/cosine (role swap)")
        if chapter is not None:
            ax.axvline(chapter, color="black", ls=":", label=f"the chapter's pair {chapter:.3f}")
        ax.set(title=f"{backbone}: {len(values)} role swaps", xlabel="cos(sentence, its subject-object swap)",
               ylabel="pairs")
        ax.legend(fontsize=8)
    return save_figure(fig, folder / "order.png", dpi=110)


PLOTS = {"concentration": _concentration, "losses": _losses, "mining": _mining, "thresholds": _thresholds,
         "ann": _ann, "order": _order}


def plots(results: dict, folder: Path) -> list[str]:
    sections = _by_section(results)
    paths = (fn(sections[name], results["config"], folder) for name, fn in PLOTS.items() if name in sections)
    return [str(p) for p in paths if p is not None]
