"""The textbook card's body: per section, the chapter's statements next to what was measured and whether each
holds, then a few tables; the plain summary printed at the end of a run; plots (plots.py)."""

from __future__ import annotations

from ..base import slug
from .claims import check
from .config import SECTIONS


def _verdict(holds) -> str:
    return "n/a" if holds is None else ("holds" if holds else "does not hold")


def _by_section(results) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for unit in results["units"].values():
        out.setdefault(unit["condition"], {})[slug(unit["backbone"])] = unit
    return out


def _ann_table(unit) -> str:
    d = unit["details"]
    rows = ["| method | setting | recall@%d | speed-up | corpus scanned |" % d["k"], "|---|---|---|---|---|"]
    for r in d["rows"]:
        name = "nprobe" if r["method"] == "ivf" else "efSearch"
        rows.append(f"| {r['method']} | {name} {r['param']} | {r['recall']:.3f} | {r['speedup']:.1f}x | "
                    f"{100 * r['fraction_scanned']:.1f}% |")
    return "\n".join(rows)


def _order_table(unit) -> str:
    rows = ["| query | same-meaning passage | role swap | cos same / swap | verifier same / swap |", "|---|---|---|---|---|"]
    for e in unit["details"]["examples"]:
        rows.append(f"| {e['query']} | {e['same_meaning']} | {e['role_swap']} | {e['cosine']['same_meaning']:.4f} / "
                    f"{e['cosine']['role_swap']:.4f} | {e['verifier']['same_meaning']:.3f} / {e['verifier']['role_swap']:.3f} |")
    return "\n".join(rows)


def _thresholds_table(units, cfg) -> str:
    rows = [f"| backbone | t at precision {cfg['target_precision']} | its recall | best-F1 t | best F1 | "
            f"at {cfg['rule_of_thumb']}: precision / recall / F1 |", "|---|---|---|---|---|---|"]
    for backbone, u in units.items():
        m = u["metrics"]
        rows.append(f"| {backbone} | {_n(m['calibrated_threshold'])} | {_n(m['calibrated_recall'])} | "
                    f"{_n(m['best_f1_threshold'])} | {_n(m['best_f1'])} | {_n(m['rule_precision'])} / "
                    f"{_n(m['rule_recall'])} / {_n(m['rule_f1'])} |")
    return "\n".join(rows)


def _mining_table(units, cfg) -> str:
    key, mrr = f"recall@{cfg['eval_k']}", f"mrr@{cfg['eval_k']}"
    rows = [f"| backbone | chain | round | negatives from | {key} | MRR@{cfg['eval_k']} | random top-ups | "
            "overlap with the previous round |", "|---|---|---|---|---|---|---|---|"]
    for backbone, u in units.items():
        start = u["details"]["start"]
        rows.append(f"| {backbone} | - | 0 | (the backbone) | {_n(start[key])} | {_n(start[mrr])} | - | - |")
        for chain, records in u["details"]["chains"].items():
            for r in records:
                rows.append(f"| {backbone} | {chain} | {r['round']} | {r['miner']} | {_n(r['metrics'][key])} | "
                            f"{_n(r['metrics'][mrr])} | {r['topped_up']} | {_n(r['overlap_with_previous'])} |")
    return "\n".join(rows)


def _n(x) -> str:
    return "-" if x is None else f"{x:.3f}"


TABLES = {"thresholds": _thresholds_table, "mining": _mining_table}


def report_body(results) -> str:
    cfg = results["config"]
    lines = ["## The chapter's statements, measured", "",
             "The chapter prints no outputs and trains nothing at scale: every number below is measured here, on the "
             "offline data (WordNet: a held-out term retrieves its glosses, headwords masked; see the data section of "
             "results.json). Each statement is followed by the measurement and the rule that decides whether it holds.",
             ""]
    data = results.get("data") or {}
    if data:
        lines += ["Data: " + ", ".join(f"{k} {v}" for k, v in data.items()), ""]
    sections = _by_section(results)
    for name, what in SECTIONS.items():
        if name not in sections:
            continue
        lines += [f"### {name}: {what}", ""]
        for backbone, unit in sections[name].items():
            for statement, measured, holds in check(name, unit, cfg):
                lines.append(f"- **{_verdict(holds)}** ({backbone}): {statement}. Measured: {measured}.")
        lines.append("")
        first = next(iter(sections[name].values()))
        if name in TABLES:
            lines += [TABLES[name](sections[name], cfg), ""]
        if name == "ann":
            for backbone, unit in sections[name].items():
                lines += [f"{backbone}:", "", _ann_table(unit), ""]
        if name == "order":
            for backbone, unit in sections[name].items():
                lines += [f"{backbone}:", "", _order_table(unit), ""]
        if name == "listings":
            lines += ["Listing 1 similarities (" + ", ".join(f"{k}: {v:.4f}" for k, v in first["details"]["similarities"].items())
                      + ")", ""]
    return "\n".join(lines) + "\n"


def summary(results) -> str:
    cfg = results["config"]
    out = []
    for name, units in _by_section(results).items():
        for backbone, unit in units.items():
            for statement, measured, holds in check(name, unit, cfg):
                out.append(f"[{_verdict(holds):>13}] {name} ({backbone}): {statement[:70]}")
    return "\n".join(out)


def make_plots(results, folder) -> list[str]:
    from .plots import make_plots as plots

    return plots(_by_section(results), results["config"], folder)
