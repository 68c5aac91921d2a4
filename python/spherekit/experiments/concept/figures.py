"""The concept card's own tables (ours next to the paper's printed numbers, stress tests, source-holdout,
training) and its plots. The claims and departures are rendered by the core (spherekit.experiments.harness.card)."""

from __future__ import annotations

from pathlib import Path

from ...evaluation.plots import save_figure
from ..api import fmt
from ..api.learning import ENCODER, RULE, curve_of, trainings
from ..api.printed import find, grid, notes
from ..api.units import unit_runs
from .paper import (ANISOTROPY, D2T_R10, DBPEDIA_R10, HH_T2D_R10, NEGATION, NP_R10, PAIR_HARD, PAIR_RANDOM,
                    PAPER_BACKBONE, PRINTED, RANK, T2D_MRR, T2D_R10, TYPE_SWAP)
from .data import NEAREST_SPLIT
from .spec import B1_FORM_GROUPS, B1_FORMS, EXPERIMENT, OURS, SETUPS, SH_SUFFIX

MAIN_COLUMNS = ((T2D_R10, "t2d R@10"), (T2D_MRR, "t2d MRR"), (D2T_R10, "d2t R@10"), (HH_T2D_R10, "HH t2d R@10"),
                (PAIR_HARD, "pair ROC-AUC (hard negatives)"), (PAIR_RANDOM, "pair ROC-AUC (random negative)"),
                (NEGATION, "negation ROC-AUC"), (TYPE_SWAP, "type-swap ROC-AUC"), (ANISOTROPY, "anisotropy"),
                (RANK, "effective rank", 1), (NP_R10, "NP R@10"), (DBPEDIA_R10, "DBpedia R@10"))
STRESS_COLUMNS = (("in-domain/ROC-AUC (antonym flip)", "antonym ROC-AUC"), (NEGATION, "negation ROC-AUC"),
                  ("in-domain/ROC-AUC (same-POS random swap)", "POS-swap ROC-AUC"),
                  ("in-domain/ROC-AUC (same-POS prefix swap)", "prefix-swap ROC-AUC"),
                  (TYPE_SWAP, "type-swap ROC-AUC"),
                  *((f"in-domain/{NEAREST_SPLIT}/ROC-AUC ({title})", f"{short} ROC-AUC, nearest swaps") for title, short
                    in (("same-POS random swap", "POS-swap"), ("same-POS prefix swap", "prefix-swap"),
                        ("ontological type swap", "type-swap"))))


def _conditions(scope) -> list[str]:
    return [c for c in SETUPS if scope.has(c)]


SH_COLUMNS = tuple((f"source-holdout/{k}", label) for k, label in (
    ("R@10 (term to definition)", "t2d R@10"), ("MRR (term to definition)", "t2d MRR"),
    ("R@10 (definition to term)", "d2t R@10"), ("pair ROC-AUC (hard negatives)", "pair ROC-AUC (rule negatives)"),
    ("ROC-AUC (lexical negation)", "negation ROC-AUC"), ("ROC-AUC (ontological type swap)", "type-swap ROC-AUC")))


def _source_holdout_table(scope) -> str | None:
    held = {c: scope.units[c + SH_SUFFIX] for c in SETUPS if scope.has(c + SH_SUFFIX)}
    if not held:
        return None
    from ..api.claims import Scope

    return grid(Scope(scope.name, held), list(held), SH_COLUMNS, row_label="condition (source-holdout model)")


RULE_LABELS = (("antonym_flip", "antonym flip"), ("negation", "lexical negation"), ("pos_swap", "same-POS swap"),
               ("prefix_swap", "prefix swap"), ("type_swap", "type swap"))


def _rule_counts(data: dict) -> str:
    """Per rule: how often it applied to the distinct training definitions, the slots it fills in the rows, and
    its negatives in each evaluated split."""
    hn = data.get("hard_negatives", {})
    gen, slots, evals = hn.get("generation", {}), hn.get("row_slots", {}), data.get("eval", {})
    if not gen:
        return ""
    splits = list(evals)
    lines = ["| rule | training definitions it applied to | of which the random draw stood in | row slots | "
             + " | ".join(f"{k} test negatives (of {fmt.count(v['pairs'])} pairs)" for k, v in evals.items()) + " |",
             "|---" * (4 + len(splits)) + "|"]
    for rule, label in RULE_LABELS:
        g = gen.get(rule, {})
        applied = (f"{fmt.count(g['applied'])} / {fmt.count(g['attempted'])} ({fmt.pct(g['rate'])})" if g
                   else fmt.MISSING)
        fallback = fmt.count(g["random_fallback"]) if "random_fallback" in g else fmt.MISSING
        tests = [fmt.count(evals[k]["rules"][rule]) if "rules" in evals[k] else fmt.MISSING for k in splits]
        lines.append(f"| {label} | {applied} | {fallback} | {fmt.count(slots.get(rule, 0))} | " + " | ".join(tests)
                     + " |")
    empty = ("(empty slots: masked)", slots["masked"]) if "masked" in slots else \
        ("(no rule applies: a random definition)", slots.get("random", 0))
    lines.append(f"| {empty[0]} | - | - | {fmt.count(empty[1])} | " + " | ".join("-" for _ in splits) + " |")
    nearest = [k for k in splits if "nearest_rules" in evals[k]]
    if nearest:
        lines.append("")
        lines.append("The harder stress split (nearest swaps: the replacement nearest to the positive) has "
                     + "; ".join(f"{k}: " + ", ".join(f"{fmt.count(n)} {label}" for rule, label in RULE_LABELS
                                                    if (n := evals[k]["nearest_rules"].get(rule)) is not None)
                                 for k in nearest) + " negatives.")
    return "\n".join(lines)


# the claims that read B1 (each form's record: its id's label -> the form); P3, H3, F read its hard negatives
def _b2_form(label: str) -> str | None:
    return (label.partition(" vs ")[2] or "B1") if label.split(" ")[0] == "B2" else None


def _m3_form(label: str) -> str | None:
    return label.removeprefix("below ") if label.startswith("below ") else None


ABLATED = (("H1/P1", "H1/P1", None),
           *((c, c, None) for c in ("P3a", "P3b", "P3b-type", "P3c", "H3", "F", "F-pair", "F-negation")),
           ("H2/P2 (B2)", "H2/P2", _b2_form), ("M3 (below B1)", "M3", _m3_form))
# the rows that compare another condition, trained under B1's own form only, against each form of B1 (H3's B3 trains
# without hard negatives: no form of B1 applies to it)
ACROSS_FORMS = {"H2/P2 (B2)": "B2", "M3 (below B1)": "M3"}


def _form_cells(results: dict, scope: str) -> dict[str, dict[str, dict]]:
    """{row title: {form of B1: claim record}} of the claims that read B1 (ABLATED)."""
    cells: dict = {}
    for r in results.get("claims", []):
        base, _, label = r["id"].partition(" (")
        label = label.removesuffix(")")
        for title, claim, form_of in ABLATED:
            form = (form_of or (lambda x: x))(label) if label else None
            if r["scope"] == scope and base == claim and form in B1_FORMS:
                cells.setdefault(title, {})[form] = r
    return cells


def _ablation_table(results: dict, scope: str) -> str:
    """The verdicts of the claims that read B1, for each form of B1 that ran, and what decides each: the
    ablations whose form changes the verdict (B1_FORM_GROUPS)."""
    cells = _form_cells(results, scope)
    forms = [v for v in B1_FORMS if any(v in row for row in cells.values())]
    if len(forms) < 2:
        return ""
    lines = ["| claim | " + " | ".join(forms) + " |", "|---" * (1 + len(forms)) + "|"]
    for title, _, _ in ABLATED:
        row = cells.get(title, {})
        lines.append(f"| {title} | " + " | ".join(
            f"{row[v]['verdict']} ({fmt.signed(row[v]['value'])})" if v in row and row[v].get("value") is not None
            else row[v]["verdict"] if v in row else fmt.MISSING for v in forms) + " |")
    decided = [(title, line) for title, _, _ in ABLATED if (line := _what_decides(cells.get(title, {})))]
    across = [f"{ACROSS_FORMS[title]} in {title}" for title, _ in decided if title in ACROSS_FORMS]
    note = (["", f"The other condition of a comparison ({', '.join(across)}) trained under B1's own form only: a "
             "verdict that moves there says the claim depends on which B1 it is measured against, not what that "
             "condition would do under the ablated form."] if across else [])
    return "\n".join(lines + (["", "What decides each (the ablations that change B1's verdict, and those that "
                                "leave it):", "", *(f"- {t}: {line}" for t, line in decided), *note]
                               if decided else []))


def _what_decides(row: dict[str, dict]) -> str:
    """Which of B1_FORM_GROUPS change the claim's verdict from B1's (one of its forms that ran does) and which leave
    it, each with the verdicts of its forms that ran ("" without B1 or an ablation beside it)."""
    if "B1" not in row:
        return ""
    base = row["B1"]["verdict"]
    ran = [(what, [f for f in forms if f in row]) for what, forms in B1_FORM_GROUPS]
    ran = [(what, forms) for what, forms in ran if forms]
    if not ran:
        return ""

    def listed(what, forms):
        return f"{what} (" + ", ".join(f"{f}: {row[f]['verdict']}" for f in forms) + ")"

    moved = [listed(what, forms) for what, forms in ran if any(row[f]["verdict"] != base for f in forms)]
    same = [listed(what, forms) for what, forms in ran if all(row[f]["verdict"] == base for f in forms)]
    return f"B1 {base}; " + "; ".join((["changed by " + " and by ".join(moved)] if moved else [])
                                      + (["unchanged by " + " and by ".join(same)] if same else []))


def _training_table(scope) -> str:
    lines = ["| condition | seed | steps | s / step | first logged loss | last logged loss |",
             "|---|---|---|---|---|---|"]
    for cond, unit in scope.units.items():
        for run in unit_runs(unit):
            for name, tr in trainings(run).items():
                curve = curve_of(run, name)
                first, last = (fmt.num(curve[0]), fmt.num(curve[-1])) if curve else (fmt.MISSING, fmt.MISSING)
                what = cond if name == ENCODER else f"{cond} ({name})"
                lines.append(f"| {what} | {run['seed']} | {tr.get('steps', fmt.MISSING)} | "
                             f"{fmt.num(tr.get('seconds_per_step'), 2)} | {first} | {last} |")
    return "\n".join(lines) if len(lines) > 2 else "(no trained condition)"


def report(results: dict) -> str:
    data, cfg = results.get("data", {}), results["config"]
    ours = [c for c in cfg["conditions"] if c in OURS]
    parts = ["## What ran", "",
             f"Conditions: {', '.join(cfg['conditions'])} (the paper's Table 1 and appendix F"
             + (f"; {', '.join(ours)}: ours, see the departures)" if ours else ")")
             + (f"; source-holdout models of {', '.join(cfg['source_holdout_conditions'])}"
                if cfg.get("source_holdout_conditions") else "") + ", on "
             f"{', '.join(cfg['backbones'])}; {cfg['steps']} steps x batch {cfg['batch_size']}, seeds "
             f"{', '.join(map(str, cfg['seeds']))}. Training rows: {data.get('rows', '?')} per view; evaluation pairs: "
             + ", ".join(f"{k} {v['pairs']} ({v['stress_negatives']} stress negatives)"
                         for k, v in data.get("eval", {}).items()) + "."]
    default = EXPERIMENT.presets.get(results.get("preset"), {}).get("conditions")
    extra = [c for c in cfg["conditions"] if default is not None and c not in default]
    if extra:
        parts += ["", f"{', '.join(extra)} are not in this preset's default selection (its plain run, `spherekit "
                  f"reproduce concept --preset {results['preset']}`, runs {', '.join(default)}): they ran with "
                  f"`--conditions {','.join(extra)}` on the same preset, and the card shows every finished unit."]
    parts += ["", f"A claim declares the trained conditions it reads; {RULE}."]
    counts = _rule_counts(data)
    if counts:
        parts += ["", "Hard negatives per rule (appendix G; the same rules make the training negatives and the stress "
                  "tests):", "", counts]
    for scope in EXPERIMENT.scopes(results):
        conds = _conditions(scope)
        parts += ["", f"## Results on {scope.name}: ours (the paper's number; * derived from a stated difference)", "",
                  *([f"The paper's numbers are for {PAPER_BACKBONE}.", ""] if scope.name != PAPER_BACKBONE else []),
                  grid(scope, conds, MAIN_COLUMNS, PRINTED, setting=PAPER_BACKBONE, spread=True), "",
                  *[f"\\* {n}" for n in notes(PRINTED) if any(n.startswith(c + " ") for c in conds)],
                  "", "Stress tests per rule (ROC-AUC of cos(term, definition) against cos(term, rule negative), "
                  "in-domain):", "", grid(scope, conds, STRESS_COLUMNS, spread=True)]
        ablation = _ablation_table(results, scope.name)
        if ablation:
            parts += ["", "Forms of B1: the verdicts (and the compared value: a difference, or for H3 B3's "
                      "anisotropy minus twice the form's) of the claims that read B1, for each form of B1 that ran "
                      "(B1: appendix G's random swaps, logit 20 cos, positive pair included; B1-biased: logit 20 cos "
                      "- 10; B1-negonly: the hard negatives alone; B1-nearest: the nearest swaps; B1-bce5 / B1-bce1: "
                      "logit 5 cos / 1 cos):", "", ablation]
        sh = _source_holdout_table(scope)
        if sh:
            parts += ["", "Source-holdout split (trained on the second source alone, tested on WordNet):", "", sh]
        parts += ["", "### Training", "", _training_table(scope)]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- plots

def plots(results: dict, folder: Path) -> list[str]:
    paths = []
    for scope in EXPERIMENT.scopes(results):
        for plot in (_bars, _geometry, _layers, _losses):
            path = plot(scope, folder)
            if path is not None:
                paths.append(str(path))
    return paths


def _save(fig, path) -> Path:
    fig.tight_layout()
    return save_figure(fig, path, dpi=110, bbox_inches=None)


def _bars(scope, folder):
    import matplotlib.pyplot as plt

    conds = _conditions(scope)
    columns = ((T2D_R10, "t2d R@10"), (PAIR_HARD, "pair ROC-AUC (hard negatives)"), (NEGATION, "negation ROC-AUC"))
    fig, axes = plt.subplots(1, len(columns), figsize=(4.2 * len(columns), 3.6))
    for ax, (key, label) in zip(axes, columns):
        ours = [scope.get(c, key) for c in conds]
        ax.bar(range(len(conds)), [x if x is not None else 0 for x in ours], color="#4477aa", label="ours")
        paper = [(i, p.value) for i, c in enumerate(conds) if (p := find(PRINTED, c, key)) is not None]
        if paper:
            ax.scatter([i for i, _ in paper], [p for _, p in paper], color="#cc3311", marker="_", s=400,
                       linewidths=3, label=f"paper ({PAPER_BACKBONE})", zorder=3)
        ax.set_xticks(range(len(conds)), conds, rotation=45, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(label, fontsize=10)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"{scope.name}: ranking vs discrimination per condition", fontsize=11)
    return _save(fig, folder / f"{scope.name}_conditions.png")


def _geometry(scope, folder):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    for c in _conditions(scope):
        a, r = scope.get(c, ANISOTROPY), scope.get(c, RANK)
        if a is not None and r is not None:
            ax.scatter(a, r, color="#4477aa")
            ax.annotate(c, (a, r), fontsize=8, xytext=(3, 3), textcoords="offset points")
    for c in SETUPS:
        a, r = find(PRINTED, c, ANISOTROPY), find(PRINTED, c, RANK)
        if a is not None and r is not None:
            ax.scatter(a.value, r.value, color="#cc3311", marker="x")
            ax.annotate(f"{c} (paper)", (a.value, r.value), fontsize=7, color="#cc3311", xytext=(3, -9),
                        textcoords="offset points")
    ax.set_xlabel("anisotropy (mean cosine of random pairs)")
    ax.set_ylabel("effective rank")
    ax.set_title(f"{scope.name}: geometry (ours blue, paper red: {PAPER_BACKBONE})", fontsize=9)
    return _save(fig, folder / f"{scope.name}_geometry.png")


def _first_run(scope, cond) -> dict:
    runs = scope.runs(cond)
    return runs[0] if runs else {}


def _layers(scope, folder):
    import matplotlib.pyplot as plt

    curves = {c: _first_run(scope, c).get("details", {}).get("layers") for c in _conditions(scope)}
    curves = {c: x for c, x in curves.items() if x}
    if not curves:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key in zip(axes, ("MRR", "anisotropy")):
        for c, layers in curves.items():
            xs = sorted(int(k) for k in layers[key])
            ax.plot(xs, [layers[key][str(x)] for x in xs], marker="o", ms=3, label=c,
                    linestyle="-" if SETUPS[c].trained else "--")
        ax.set_xlabel("layer (0 = embeddings)")
        what = "t2d MRR" if key == "MRR" else "anisotropy of the test texts"
        ax.set_title(f"{what} by layer (mean pool of each layer)", fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{scope.name}: where the signal sits (dashed: frozen; first seed)", fontsize=11)
    return _save(fig, folder / f"{scope.name}_layers.png")


def _losses(scope, folder):
    import matplotlib.pyplot as plt

    curves = {c: (trainings(_first_run(scope, c)).get(ENCODER) or {}).get("curve") for c in _conditions(scope)}
    curves = {c: x for c, x in curves.items() if x and x.get("step")}
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for c, curve in curves.items():
        ax.plot(curve["step"], curve["loss"], label=c)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (sum of the views)")
    ax.legend(fontsize=8)
    ax.set_title(f"{scope.name}: training loss (first seed)", fontsize=10)
    return _save(fig, folder / f"{scope.name}_loss.png")
