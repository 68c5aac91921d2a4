"""The DefSent+ card's body: ours next to the paper's printed numbers (Tables 1, 2, 8, 3/6, 7, 4), the bank
geometry of Figures 1-7, which claims hold, the departures; the plain summary; plots (plots.py)."""

from __future__ import annotations

from .config import condition
from .paper import TABLE1, TABLE2, TABLE3, TABLE4_DELTA_RANGE, TABLE7_PROMPT_STS, TABLE8, TEXT_2ND_ICA

HEADLINE = [("sim_avg/best", "WordNet-sim Spearman"), ("crossdict_mrr/best", "cross-dict MRR"),
            ("rd_acc@1", "RD acc@1"), ("rd_acc@10", "RD acc@10"), ("rd_acc@100", "RD acc@100"),
            ("probe_avg/best", "probe acc")]


def _units(results) -> dict[str, dict]:
    """condition -> unit result (the first backbone's; the presets run one)."""
    out = {}
    for u in results["units"].values():
        out.setdefault(u["condition"], u)
    return out


def _n(x, digits=2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ms(u, key) -> str:
    if "mean" not in u:
        return _n(u["metrics"].get(key))
    if key not in u["mean"]:
        return "-"
    return f"{u['mean'][key]:.2f} ± {u['std'][key]:.2f}"


def _headline(results) -> list[tuple[str, str]]:
    keys = list(HEADLINE)
    if any("sts_avg/best" in u["metrics"] for u in results["units"].values()):
        keys.insert(0, ("sts_avg/best", "STS avg"))
    return keys


def table1(units) -> str:
    rows = ["| dictionary | ours: entries | definitions | held-out RD definitions | max (median) tokens "
            "| paper: entries | definitions | max (median) |", "|---|---|---|---|---|---|---|---|"]
    stats = {}
    for name, u in units.items():
        if "dictionary" in u:
            stats.setdefault(condition(name).dictionary, u["dictionary"])
    for name in sorted(stats):
        s, p = stats[name], TABLE1[name]
        rows.append(f"| {name} | {s['entries']:,} | {s['definitions']:,} | {s['held_out']} | {s.get('max_tokens')} "
                    f"({s.get('median_tokens')}) | {p[1]:,} | {p[0]:,} | {p[2]} ({p[3]}) |")
    return "\n".join(rows)


def table2(units, keys) -> str:
    head = " | ".join(label for _, label in keys)
    rows = [f"| condition | {head} | best seed: {keys[0][1]} | paper BERT-base STS avg | paper RoBERTa-base |",
            "|---|" + "---|" * (len(keys) + 3)]
    for name, u in units.items():
        cells = ["see below" if name == "base" and key.startswith("rd_") else _ms(u, key) for key, _ in keys]
        paper = TABLE2.get("DefSent" if condition(name).word_bank else name, {})
        pb, pr = paper.get("BERT-base"), paper.get("RoBERTa-base")
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {_n(u['metrics'].get(keys[0][0]))} | "
                    f"{'-' if not pb else f'{pb[0]:.2f} ± {pb[1]:.2f}'} | "
                    f"{'-' if not pr else f'{pr[0]:.2f} ± {pr[1]:.2f}'} |")
    untrained = [f"{n} {' / '.join(_n(v['rd_untrained'].get(f'rd_acc@{k}')) for k in (1, 10, 100))}"
                 for n, v in units.items() if v.get("rd_untrained")]
    if untrained:  # the base encoder has no trained pooler: its reverse dictionary against each 1st step's bank
        rows.append("\nbase (the starting encoder with its untrained pooler) against each 1st step's bank, RD acc@1 / "
                    "@10 / @100: " + "; ".join(untrained) + ".")
    return "\n".join(rows)


def table8(units, cfg) -> str:
    """Every 1st step by its (pooling, bank); the paper's Table 8 is on dictionary a (other rows: '-')."""
    rows = ["| (pooling, bank) | condition | ours: WordNet-sim | RD acc@10 | paper BERT-base | paper RoBERTa-base |",
            "|---|---|---|---|---|---|"]
    for name, u in units.items():
        c = condition(name)
        if c.step != 1 or c.word_bank:
            continue
        combo = tuple(u.get("combination") or (cfg["training_pooling"], cfg["bank_kind"]))
        paper = [f"{TABLE8[e][combo]:.2f}" if c.dictionary == "a" else "-" for e in ("BERT-base", "RoBERTa-base")]
        rows.append(f"| ({combo[0]}, {combo[1]}) | {name} | {_ms(u, 'sim_avg/best')} | {_ms(u, 'rd_acc@10')} | "
                    f"{paper[0]} | {paper[1]} |")
    return "\n".join(rows)


def table3(units) -> str:
    base = units.get("base")
    if not base:
        return "(no base unit)"
    rows = ["| condition | base WordNet-sim | best of seeds | mean ± std | gain (best) | base probe | probe (best) |",
            "|---|---|---|---|---|---|---|"]
    for name, u in units.items():
        if name == "base":
            continue
        b, s = base["metrics"]["sim_avg/best"], u["metrics"]["sim_avg/best"]
        rows.append(f"| {name} | {b:.2f} | {s:.2f} | {_ms(u, 'sim_avg/best')} | {s - b:+.2f} | "
                    f"{base['metrics']['probe_avg/best']:.2f} | {u['metrics']['probe_avg/best']:.2f} |")
    gains = [after - before for before, after in TABLE3.values()]
    rows.append(f"\nPaper, Table 3 (best of 10, STS avg): DefSent+ on a sentence-trained start gains "
                f"{min(gains):+.2f} to {max(gains):+.2f} points in 10 of 10 rows "
                "(SynCSE-partial RoBERTa-large only after a 2nd step).")
    return "\n".join(rows)


def _probe_best(u) -> str:
    return max(("cls", "mean", "prompt"), key=lambda p: u["metrics"].get(f"probe_avg/{p}", -1))


def table7(units) -> str:
    pools = ("cls", "mean", "prompt")
    rows = ["| condition | best pooling, WordNet-sim (dev) | best pooling, probes | "
            + " | ".join(f"WordNet-sim {p}" for p in pools) + " | " + " | ".join(f"probe {p}" for p in pools) + " |",
            "|---|---|---|" + "---|" * 6]
    for name, u in units.items():
        cells = [_ms(u, f"sim_avg/{p}") for p in pools] + [_ms(u, f"probe_avg/{p}") for p in pools]
        rows.append(f"| {name} | {u.get('best_pooling')} | {_probe_best(u)} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + (f"\n\nPaper, Table 7: Prompt is the best STS pooling for {TABLE7_PROMPT_STS[0]} of "
                              f"{TABLE7_PROMPT_STS[1]} released encoders (chosen on the test sets).")


def geometry_table(units) -> str:
    rows = ["| bank | entries | SVD-2D corr | top-1 energy | mean cosine | outside r=3 (2-D whitened; Gaussian 1.1%) "
            "| outside chi2 99% (full) | mean abs skew | mean excess kurtosis | ICA |", "|---|" + "---|" * 9]
    banks = [(f"{n} (built by {u['bank']['source']})", u["bank"]) for n, u in units.items() if "bank" in u]
    for name, g in banks:
        ica = g.get("ica")
        ica_s = "-" if not ica else (f"{ica['whiten']}, {ica['n_iter']} it, "
                                     + ("converged" if ica["converged"] else "NOT converged"))
        rows.append(f"| {name} | {g['entries']:,} | {g['svd_corr']:+.3f} | {g['svd_top1_share']:.3f} | "
                    f"{g['mean_cosine']:.3f} | {100 * g['outside_2d']:.2f}% | {100 * g['outside_full']:.2f}% | "
                    f"{g['abs_skew']:.2f} | {g['excess_kurtosis']:.2f} | {ica_s} |")
    return "\n".join(rows)


def geometry_claims(units) -> list[tuple[str, str, bool]]:
    """Figures 1-3 and appendix A on the banks: PST turns the anisotropic bank quasi-isotropic step by step (the
    mean pairwise cosine of the bank each step trains against and the share sigma_1^2 / sum_k sigma_k^2 of its top
    singular direction, the narrow cone's axis, both fall), and ICA gives the bank heavy, asymmetric
    tails (larger mean |skewness| and excess kurtosis than the quasi-isotropic bank it came from)."""
    out = []
    for d in "abc":
        steps = [(s, units[f"{s}-{d}"]["bank"]) for s in ("1st", "2nd", "3rd") if "bank" in units.get(f"{s}-{d}", {})]
        if len(steps) > 1:
            cos, top1 = ([g[k] for _, g in steps] for k in ("mean_cosine", "svd_top1_share"))
            out.append((f"Figures 1-2: each PST step trains against a more isotropic bank (dictionary {d}: the "
                        "bank's mean pairwise cosine and the top singular direction's share of its energy both "
                        "fall from step to step)",
                        ", ".join(f"{s} bank {c:.3f} / {t:.3f}" for (s, _), c, t in zip(steps, cos, top1)),
                        all(x > y for x, y in zip(cos, cos[1:])) and all(x > y for x, y in zip(top1, top1[1:]))))
        for s in ("2nd", "3rd"):
            ica, plain = (units.get(n, {}).get("bank") for n in (f"{s}-{d}-ica", f"{s}-{d}"))
            if ica and plain:
                out.append((f"Appendix A, Figure 3: the ICA-transformed bank has heavier, more asymmetric tails than "
                            f"the quasi-isotropic one ({s} step, {d})",
                            f"|skew| {ica['abs_skew']:.2f} vs {plain['abs_skew']:.2f}, excess kurtosis "
                            f"{ica['excess_kurtosis']:.2f} vs {plain['excess_kurtosis']:.2f}",
                            ica["abs_skew"] > plain["abs_skew"] and ica["excess_kurtosis"] > plain["excess_kurtosis"]))
    return out


def _verdict(holds) -> str:
    return "n/a" if holds is None else ("holds" if holds else "does not hold")


def claims(units) -> list[tuple[str, str, bool | None]]:
    """(paper's claim, what was measured, holds?) on the WordNet-similarity proxy (mean over seeds)."""
    def m(name, key="sim_avg/best"):
        u = units.get(name)
        return None if u is None else (u.get("mean") or u["metrics"]).get(key)

    out = []
    sizes = [(d, m(f"1st-{d}")) for d in "cba" if m(f"1st-{d}") is not None]
    if len(sizes) > 1:
        vals = [v for _, v in sizes]
        out.append(("Table 2: a bigger dictionary trains a better encoder (c < b < a at the 1st step)",
                    ", ".join(f"{d} {v:.2f}" for d, v in sizes), all(x < y for x, y in zip(vals, vals[1:]))))
    base = m("base")
    for name in units:
        if name != "base" and condition(name).step == 1 and base is not None and condition(name).combination is None:
            out.append((f"Table 3: DefSent+ improves a sentence-trained encoder ({name} vs base)",
                        f"{m(name):.2f} vs {base:.2f}", m(name) > base))
    for d in "abc":
        steps = [(s, m(f"{s}-{d}")) for s in ("1st", "2nd", "3rd") if m(f"{s}-{d}") is not None]
        if len(steps) > 1:
            out.append((f"Table 2: each PST step improves on the previous one (dictionary {d})",
                        ", ".join(f"{s} {v:.2f}" for s, v in steps),
                        all(x[1] < y[1] for x, y in zip(steps, steps[1:]))))
        for s in ("2nd", "3rd"):
            if m(f"{s}-{d}-ica") is not None and m(f"{s}-{d}") is not None:
                paper = "+0.23 / +0.22 for BERT, -0.50 / -0.17 for RoBERTa" if s == "3rd" else \
                    f"BERT-base {TEXT_2ND_ICA['BERT-base']} vs 78.40"
                out.append((f"ICA bank vs quasi-isotropic bank at the {s} step ({d}; paper: {paper})",
                            f"{m(f'{s}-{d}-ica'):.2f} vs {m(f'{s}-{d}'):.2f}", None))
    out += geometry_claims(units)
    gains = [TABLE2["1st-c"][e][0] - TABLE2["DefSent"][e][0] for e in TABLE2["DefSent"]]
    first_c = units.get("1st-c")
    word_units = [n for n in units if condition(n).word_bank]
    for name in word_units:  # DefSent+ vs DefSent on dictionary c with the same training pooling
        if first_c and first_c["combination"][0] == condition(name).combination[0]:
            out.append((f"Table 2: on the same data (c), DefSent+'s entry-embedding bank beats DefSent's "
                        f"word-embedding bank (paper: {min(gains):+.2f} to {max(gains):+.2f} STS avg)",
                        f"1st-c {m('1st-c'):.2f} vs {name} {m(name):.2f}", m("1st-c") > m(name)))
    grid = {tuple(u["combination"]): m(n) for n, u in units.items()  # Table 8: 1st steps on a, by (pooling, bank)
            if condition(n).step == 1 and condition(n).dictionary == "a" and n not in word_units and m(n) is not None}
    pairs = [p for p in ("cls", "mean") if (p, "amp") in grid and (p, "ac") in grid]
    if pairs:
        bert = TABLE8["BERT-base"]
        out.append(("Table 8: AMP banks beat AC banks for BERT with either training pooling (dictionary a; paper "
                    "BERT-base " + " / ".join(f"{p} {bert[(p, 'amp')] - bert[(p, 'ac')]:+.2f}" for p in pairs) + ")",
                    ", ".join(f"({p}, amp) {grid[(p, 'amp')]:.2f} vs ({p}, ac) {grid[(p, 'ac')]:.2f}" for p in pairs),
                    all(grid[(p, "amp")] > grid[(p, "ac")] for p in pairs)))
    pools = [u.get("best_pooling") for n, u in units.items()]
    out.append(("Table 7: Prompt is the best similarity pooling for most encoders",
                f"best pooling per unit: {', '.join(map(str, pools))}", pools.count("prompt") > len(pools) / 2))
    pb = m("base", "probe_avg/best")
    lo, hi = TABLE4_DELTA_RANGE
    for name in units:
        if name != "base" and pb is not None:
            delta = m(name, "probe_avg/best") - pb
            out.append((f"Table 4: transfer stays comparable ({name} vs base; paper {lo:+.2f} to {hi:+.2f})",
                        f"{delta:+.2f} points", lo - 1 <= delta <= hi + 1))
    return [(s, measured, None if "nan" in measured else holds) for s, measured, holds in out]  # NaN: undecided


DEPARTURES = [
    "Backbone: a sentence-trained MiniLM (all-MiniLM-L6-v2) stands in for raw BERT/RoBERTa (no raw MLM checkpoint "
    "offline); it plays the role of Table 3's data-augmented starting points. It has BERT's pretrained pooler, "
    "so the training path is the paper's (pooler dense + tanh over CLS or mean, no Normalize).",
    "Dictionaries: GCIDE and WordNet 3.0 stand in for Oxford (Ishiwatari et al. 2019) and the paper's WordNet; "
    "a = GCIDE + WordNet, b = GCIDE, c = GCIDE's single-token entries of the backbone's vocabulary.",
    "Held out of every dictionary: the evaluation glosses and terms, and one definition of some entries (reverse "
    "dictionary); the paper trains on every definition.",
    "Evaluation: without SentEval's files the STS and transfer numbers are offline proxies (module "
    "spherekit.experiments.defsent.heldout); the paper's absolute numbers are not comparable, only directions.",
    "Seed and pooling selection on a dev half of the similarity proxy; the paper selected on the STS test sets.",
    "Presets below `paper` subsample entries / definitions and run fewer seeds (see the configuration table).",
]


def report_body(results) -> str:
    units = _units(results)
    keys = _headline(results)
    data = results.get("data") or {}
    lines = ["## What ran", "",
             f"Evaluation: {data.get('evaluation', 'offline proxies')}. Held-out sets: "
             + ", ".join(f"{k} {v}" for k, v in data.items() if k not in ("evaluation",)), "",
             "## Table 1: dictionaries", "", table1(units), "",
             "## Table 2: PST steps and dictionaries (mean ± std over seeds; best pooling chosen on dev)", "",
             "Ours are proxies (Spearman x 100 / MRR x 100 / accuracy %), the paper's are STS averages: compare "
             "directions, not values.", "", table2(units, keys), "",
             "## Table 8: (training pooling, bank) grid at the 1st step", "", table8(units, results["config"]), "",
             "## Tables 3 and 6: further training a sentence-trained encoder", "", table3(units), "",
             "## Table 7: pooling chosen at evaluation", "", table7(units), "",
             "## Figures 1-7: geometry of the banks", "", geometry_table(units), "",
             "## Claims", ""]
    for statement, measured, holds in claims(units):
        lines.append(f"- **{_verdict(holds)}**: {statement}. Measured: {measured}.")
    lines += ["", "## Departures from the paper", ""] + [f"- {d}" for d in DEPARTURES]
    departs = [c for c in results.get("config_sources", []) if str(c["source"]).startswith("departs")]
    lines += [f"- `{c['field']}` = {c['value']} ({c['source']})" for c in departs]
    return "\n".join(lines) + "\n"


def summary(results) -> str:
    units = _units(results)
    keys = _headline(results)
    out = ["condition    " + "  ".join(f"{label:>22}" for _, label in keys)]
    for name, u in units.items():
        out.append(f"{name:12} " + "  ".join(f"{_ms(u, k):>22}" for k, _ in keys))
    for statement, measured, holds in claims(units):
        out.append(f"[{_verdict(holds):>13}] {statement[:80]}: {measured}")
    return "\n".join(out)


def make_plots(results, folder) -> list[str]:
    from .plots import make_plots as plots

    return plots(_units(results), folder)
