"""The circumplex card's own tables (ours next to the paper's Table 1, the label-count study) and its plots. The
claims and departures are rendered by the core (spherekit.experiments.harness.card)."""

from __future__ import annotations

from pathlib import Path

from ..api import fmt
from ..api.learning import BARELY_MOVED, DID_NOT_LEARN, RULE, grade_training, trainings
from ..api.plugin import slug
from ..api.printed import find, grid
from ..api.units import unit_runs
from .paper import PRINTED, SOURCE, TABLE1
from .spec import (
    ALPHA_MAX,
    ALPHA_MEAN,
    CD_R,
    EXPERIMENT,
    OFFDIAG,
    PC12,
    PRETRAINED,
    RING_MAE,
    RUNS,
    Run,
    V,
    parse_condition,
)

MAIN_COLUMNS = ((V, "V-measure"), (CD_R, "CD-r"), (RING_MAE, "ring MAE"), (OFFDIAG, "mean off-diagonal cosine"),
                (PC12, "PC1+PC2 variance"), (ALPHA_MEAN, "nGPT alpha mean"), (ALPHA_MAX, "nGPT alpha max"))
# the paper's backbone shown next to ours in each regime: its fine-tuned one, and its first frozen one
GLOSSARY = ("Metrics: V-measure of spherical k-means (k = labels, 10 initialisations); CD-r = Pearson(circumplex "
            "distance, 1 - mean cosine) over label pairs; ring MAE = mean |label-pair cosine - cos(angle gap)| (0 for "
            "a perfect circle); PC1+PC2 = variance in the first two principal components; nGPT alpha = the trained "
            "geodesic step sizes |alpha_A|, |alpha_M| (init alpha_init): each residual turns a token state by at most "
            "about 2 alpha, so an nGPT head whose alphas stay near their init stays close to its input.")


def _paper_table() -> str:
    lines = ["| run | " + " | ".join(f"{b} ({'fine-tuned' if g == 'unfrozen' else g}): V, CD-r" for b, g in TABLE1)
             + " |", "|---" * (len(TABLE1) + 1) + "|"]
    for run in RUNS:
        cells = [", ".join(fmt.num(find(PRINTED, Run(run, None if run == PRETRAINED else g).name, key, b).value)
                           for key in (V, CD_R)) for b, g in TABLE1]
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _label_counts(results) -> dict[tuple[str, str], dict[int, dict]]:
    """(backbone, run) -> {label count: metrics} of the label-count study, with the 12-label unit of the main grid
    in the study's regime."""
    rows: dict[tuple[str, str], dict[int, dict]] = {}
    for unit in results["units"].values():
        run = parse_condition(unit["condition"])
        if run.labels:
            rows.setdefault((slug(unit["backbone"]), run.run), {})[run.labels] = unit["metrics"]
    regime = results["config"].get("label_count_regime", "frozen")
    scopes = {(s.backbone, s.regime): s for s in EXPERIMENT.scopes(results)}
    for (backbone, name), by_count in rows.items():
        scope = scopes.get((backbone, regime))
        if scope is not None and scope.has(scope.condition(name)):
            by_count[12] = scope.unit(scope.condition(name))["metrics"]
    return rows


def _label_count_table(rows) -> str:
    counts = sorted({k for r in rows.values() for k in r} | {12})
    lines = ["| backbone | run | " + " | ".join(f"{k} labels: V, CD-r" for k in counts) + " |",
             "|---" * (len(counts) + 2) + "|"]
    for (backbone, name), by_count in rows.items():
        cells = [f"{fmt.num(by_count[k].get(V))}, {fmt.num(by_count[k].get(CD_R))}" if k in by_count else fmt.MISSING
                 for k in counts]
        lines.append(f"| {backbone} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _interval(scope, needs, statistic) -> str:
    from .noise import measure

    noise = measure(scope, needs, statistic)
    return fmt.MISSING if noise is None or noise.interval is None else fmt.interval(*noise.interval)


def _grades(scope, condition: str) -> list[tuple[str, str, str | None]]:
    """(seed, why, grade) of every training of the condition's runs (learning.grade_training)."""
    return [(str(run.get("seed")), *reversed(grade_training(record))) for run in scope.runs(condition)
            for record in trainings(run).values()]


def _learned(grades) -> str:
    return "; ".join(f"{seed}: {why} {grade or 'nothing to judge'}" for seed, why, grade in grades) or fmt.MISSING


def _decides(grades, pooled_alike: bool) -> str:
    """What decides the head's verdicts: its trainings' worst grade (the gate's, with the seeds), and the pooling."""
    def seeds(grade):
        found = [seed for seed, _, g in grades if g == grade]
        return f"{grade} (seed{'s' if len(found) > 1 else ''} {', '.join(found)})" if found else None

    if seeds(DID_NOT_LEARN):
        head = f"alpha and steps: the head {seeds(DID_NOT_LEARN)}, so it measures its initialisation"
    elif seeds(BARELY_MOVED):
        head = f"alpha and steps: the head {seeds(BARELY_MOVED)}, so the claims resting on it are inconclusive"
    else:
        head = "the head: it learned"
    return head + ("" if pooled_alike else "; and the pooling: Pretrained pools otherwise")


def _resolved_pooling(scope) -> str:
    """The pooling the scope's trained runs used (their details), else the config's."""
    seen = {(r.get("details") or {}).get("pooling", {}).get("pooling") for c in scope.units if c != PRETRAINED
            for r in scope.runs(c)} - {None}
    return ", ".join(sorted(seen)) or str(scope.config.get("pooling"))


def _ngpt_section(scope, config: dict) -> list[str]:
    """What the frozen nGPT heads of a scope measure: per head, its loss fall and grade (learned / barely moved / did
    not learn: learning.grade_training, the gate's), its step size alpha and its V-measure against Pretrained (the
    heads' own pooled input), with the pooling's own effect."""
    from .noise import OWN

    runs = [r for r in RUNS if r.endswith("-nGPT") and scope.has(scope.condition(r))]
    if scope.regime != "frozen" or not runs or not scope.has(PRETRAINED):
        return []
    v0 = scope.metric(PRETRAINED, V)
    pooled_alike = config.get("pretrained_pooling", "backbone") == "head"
    setting = (f"alpha_init {config.get('alpha_init')}, pooling {_resolved_pooling(scope)}, Pretrained pooled "
               f"'{config.get('pretrained_pooling', 'backbone')}', {config.get('epochs')} epochs; intervals: 95% "
               "two-level bootstrap over the seeds (where a unit has several) and the test texts; the trainings, per "
               f"seed: {RULE}.")
    header = ("| run | training loss (probe, or logged curve's first -> last quarter), per seed | nGPT alpha mean | "
              "V-measure - Pretrained's | what decides its verdicts |")
    lines = [f"## What the frozen nGPT heads measure ({scope.backbone})", "", setting, "", header, "|---" * 5 + "|"]
    for run in runs:
        cond = scope.condition(run)
        grades = _grades(scope, cond)
        iv = _interval(scope, [(cond, ""), (PRETRAINED, "")], lambda get, c=cond: get(c, V) - get(PRETRAINED, V))
        lines.append(f"| {run} | {_learned(grades)} | {fmt.num(scope.get(cond, ALPHA_MEAN))} | "
                     f"{scope.metric(cond, V) - v0:+.3f} {iv} | {_decides(grades, pooled_alike)} |")
    own = scope.get(PRETRAINED, f"{OWN}/{V}")
    if own is not None:
        iv = _interval(scope, [(PRETRAINED, ""), (PRETRAINED, f"{OWN}/")],
                       lambda get: get(PRETRAINED, V) - get(PRETRAINED, V, f"{OWN}/"))
        lines += ["", (f"Pooling: Pretrained pooled as the heads are has V-measure {v0:.3f}; the backbone's own "
                       f"sentence embedding {own:.3f} ({v0 - own:+.3f} {iv}). The heads are compared with the "
                       "former, so the pooling decides no verdict of this card; comparing them with the latter "
                       "would add this difference to every head's.")]
    return lines + [""]


def report(results: dict) -> str:
    parts = []
    for scope in EXPERIMENT.scopes(results):
        paper_backbone = EXPERIMENT.printed_setting(scope)
        parts += [f"## {scope.backbone}, {scope.regime} backbone: ours (the paper's {paper_backbone})", "",
                  grid(scope, [scope.condition(r) for r in RUNS], MAIN_COLUMNS, PRINTED, setting=paper_backbone,
                       spread=True), ""]
        parts += _ngpt_section(scope, results.get("config", {}))
    parts += [f"## The paper's {SOURCE}", "", _paper_table(), ""]
    rows = _label_counts(results)
    if rows:
        parts += ["## Label-count study (Fig. 5b; label subsets with evenly spread angles, ours)", "",
                  _label_count_table(rows), "",
                  "Paper: CircularCSE matches SINCERE and SoftCSE at 2-4 labels and falls behind towards 12.", ""]
    parts += [GLOSSARY, ""]
    return "\n".join(parts)


# ---------------------------------------------------------------- plots

def _curve_row(metrics: dict, **extra) -> dict:
    """The V-measure and CD-r of a unit under the keys plots.py draws."""
    return {**extra, "v_measure": metrics[V], "cd_r": metrics.get(CD_R)}


def _details(unit: dict) -> dict:
    """The details of the unit's first run that kept the 2-D projections (runs keep them for the first seed)."""
    runs = [r.get("details", {}) for r in unit_runs(unit)]
    return next((d for d in runs if "pca_points" in d), runs[0] if runs else {})


def plots(results: dict, folder: Path) -> list[str]:
    from . import plots as draw

    out: list[str] = []
    angles = results.get("data", {}).get("angles", {})
    for scope in EXPERIMENT.scopes(results):
        tag, where = f"{scope.backbone}_{scope.regime}", f"{scope.backbone} ({scope.regime})"
        units = {r: scope.unit(scope.condition(r)) for r in RUNS if scope.has(scope.condition(r))}
        out.append(str(draw.grid_bars([_curve_row(u["metrics"], name=r) for r, u in units.items()],
                                      folder / f"{tag}_grid.png", f"{where}: V and CD-r")))
        out.append(str(draw.explained_variance({r: _details(u)["pca_explained_variance_ratio"]
                                                for r, u in units.items()},
                                               folder / f"{tag}_pca_variance.png", f"{where}: PCA explained variance")))
        out.append(str(draw.sweep_curves({r: _details(u)["pca_sweep"] for r, u in units.items()}, "dim",
                                         folder / f"{tag}_pca_dims.png", f"{where}: PCA dimensions")))
        if not angles:
            continue
        for name in (PRETRAINED, "SINCERE-nGPT", "SoftCSE-nGPT", "CircularCSE-nGPT"):
            if name not in units:
                continue
            d = _details(units[name])
            out.append(str(draw.heatmap(d["label_cosine"], d["label_order"], folder / f"{tag}_{name}_cosine.png",
                                        f"{where} {name}: label-pair mean cosine")))
            out.append(str(draw.scatter_2d(d["pca_points"], d["pca_labels"], angles, folder / f"{tag}_{name}_pca.png",
                                           f"{where} {name}: PCA of the test texts",
                                           explained=d["pca_explained_variance_ratio"][:2])))
            out.append(str(draw.scatter_2d(d["mds_points"], d["mds_labels"], angles, folder / f"{tag}_{name}_mds.png",
                                           f"{where} {name}: MDS (cosine distance)")))
    rows = _label_counts(results)
    if rows:
        series = {f"{backbone} {name}": [_curve_row(m, labels=k) for k, m in sorted(by_count.items())]
                  for (backbone, name), by_count in rows.items()}
        out.append(str(draw.sweep_curves(series, "labels", folder / "label_count.png", "Number of labels")))
    return out
