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
