"""The result card of an experiment preset: results.json (everything) and report.md + plots/ (for people).

results.json (schema 2): experiment, title, citation, preset, config (every value) and config_sources (paper /
choice / runtime / selection, with the reason), evaluation (version, main metric), versions, machine, start and
end times, wall seconds per stage ("data", "<unit>/<stage>", "total"), data statistics, per unit (backbone,
condition) the mean of its seeds' metrics, their spread and every run (units.aggregate), and, computed from
the units by the core: "claims" (every claim of the paper's paper.py checked per scope, claims.evaluate) and
"comparison" (every number the paper prints next to ours, printed.comparison).

report.md: a header (what ran, where, how long), where the run departs from the paper, the paper's own tables
(its figures.report), the claims per scope (one renderer for every paper), the configuration table, the plots.
`render(folder)` rebuilds the claims, the comparison, the configuration's sources, report.md and the plots from
results.json alone (`spherekit reproduce report`). All files are written atomically.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
from pathlib import Path

from ...bench.machine import machine_name, now, versions
from ..api import claims, fmt, printed
from ..api.config import as_dict, describe, with_overrides
from ..api.files import cached_json, write_json, write_text
from ..api.metrics import evaluation_version
from . import gpu_hours

RESULTS, REPORT, PLOTS = "results.json", "report.md", "plots"
SCHEMA = 2


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def machine() -> str:
    """This machine as the cards name it (bench.machine.machine_name of the device the runs use)."""
    return machine_name(_device())


def noise_card(experiment, folder) -> tuple[dict, str]:
    """(seed_noise, source) for claims.evaluate: the claims' seed_std on the card of the paper's 3-seed preset
    (Experiment.noise_preset), found beside `folder` (<out>/<experiment>/<preset>: <out>/<experiment>/<noise
    preset>/results.json); ({}, "") when there is none, or `folder` is that card."""
    preset = getattr(experiment, "noise_preset", None)
    if not preset or folder is None or Path(folder).name == preset:
        return {}, ""
    path = Path(folder).parent / preset / RESULTS
    if not path.is_file():
        return {}, ""
    records = json.loads(path.read_text(encoding="utf-8")).get("claims", [])
    return claims.seed_noise_of(records), f"the {preset} preset"


def judge(experiment, results: dict, folder=None) -> dict:
    """results with its "claims" and "comparison" computed from its units by the paper's paper.py; folder: the
    card's folder, where the paper's 3-seed card is looked up beside it (noise_card)."""
    scopes = experiment.scopes(results)
    seed_noise, source = noise_card(experiment, folder)
    return {**results, "claims": claims.evaluate(experiment.claims, scopes, seed_noise=seed_noise,
                                                 noise_source=source, ours=experiment.ours(),
                                                 undertrained=experiment.undertrained),
            "comparison": printed.comparison(experiment.printed, scopes)}


def _config_sources(cfg) -> list[dict]:
    return [{"field": f, "value": v, "source": s, "doc": d} for f, v, s, d in describe(cfg)]


def redescribe(experiment, results: dict) -> dict:
    """results with its config_sources described again by the current spec: the run's values, today's sources and
    docs (a paper value or a field's doc edited since the run). A field the spec no longer has, or a value it no
    longer accepts, keeps the description the run wrote; a field added since the run is not listed (it did not
    exist when the run ran)."""
    cls, stored = experiment.config_class, results.get("config", {})
    known = {f.name for f in dataclasses.fields(cls)}
    try:
        cfg = with_overrides(cls(), {k: v for k, v in stored.items() if k in known})
    except (TypeError, ValueError):
        return results
    fresh = {row["field"]: row for row in _config_sources(cfg)}
    rows = [fresh.get(row["field"], row) for row in results.get("config_sources", [])]
    return {**results, "config_sources": rows}


def results_payload(experiment, preset: str, cfg, units: dict, seconds: dict, started: str,
                    data_stats: dict | None = None, folder=None) -> dict:
    payload = {
        "schema": SCHEMA, "experiment": experiment.name, "title": experiment.title,
        "citation": experiment.citation.strip(), "preset": preset, "config": as_dict(cfg),
        "config_sources": _config_sources(cfg),
        "evaluation": {"version": evaluation_version(experiment), "main_metric": experiment.main_metric},
        "versions": {**versions(), "python": platform.python_version()},
        "machine": machine(), "device": _device(),
        "command": " ".join(["spherekit", *sys.argv[1:]]) if Path(sys.argv[0]).name == "spherekit" else None,
        "started": started, "finished": now(), "wall_seconds": seconds,
        "data": data_stats or {}, "units": units,
    }
    return judge(experiment, payload, folder)


def header(results: dict) -> str:
    secs = results.get("wall_seconds", {})
    lines = [
        f"# {results['title']}: reproduction (`spherekit reproduce {results['experiment']} --preset "
        f"{results['preset']}`)", "",
        f"- Machine: {results['machine']}; versions: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items() if v),
        f"- Ran {results['started']} to {results['finished']}; wall time of this run: "
        f"{fmt.duration(secs.get('total', 0))} (data {fmt.duration(secs.get('data', 0))}; units reused from "
        "earlier runs count their own earlier times below)",
        f"- Units: {len(results['units'])}; per-unit wall time: "
        + "; ".join(f"{u} " + ", ".join(f"{k} {fmt.duration(v)}" for k, v in r.get("seconds", {}).items())
                    for u, r in results["units"].items()),
    ]
    noise = training_noise(results)
    return "\n".join(lines + ([f"- Training noise: {noise}"] if noise else [])) + "\n"


def training_noise(results: dict) -> str | None:
    """What the card knows of the training noise, when a seeded unit ran one seed only (None otherwise): it is
    unmeasured here; a claim within twice the seed std of its 3-seed preset is inconclusive (claims.evaluate)."""
    single = [u for u, unit in results["units"].items() if unit.get("seeds") and unit["seeds"][0] is not None
              and len(unit["seeds"]) == 1]
    if not single:
        return None
    borrowed = any("within twice the training noise" in str(r.get("measured")) for r in results.get("claims", []))
    return (f"unmeasured here ({len(single)} of {len(results['units'])} units ran one seed: their intervals cover "
            "the evaluation items only); a claim whose value lies within twice the seed std of its margin on the "
            "paper's 3-seed preset is inconclusive" + (" (so marked below)" if borrowed else ""))


def departures_section(experiment, results: dict) -> str:
    lines = [f"- {d}" for d in experiment.departures(results)]
    changed = [c for c in results.get("config_sources", []) if "departs from the paper" in str(c["source"])]
    lines += [f"- `{c['field']}` = {json.dumps(c['value'])} ({c['source']})" for c in changed]
    predicted = gpu_hours.describe(results["experiment"]) if results.get("preset") == "paper" else None
    lines += [f"- {predicted}"] if predicted else []
    return "## Where this run departs from the paper\n\n" + ("\n".join(lines) or "- nothing recorded") + "\n"


def claims_section(results: dict) -> str:
    records = results.get("claims", [])
    scopes = list(dict.fromkeys(r["scope"] for r in records))
    parts = ["## Claims of the paper, checked here", "",
             "Verdicts: holds / does not hold / inconclusive (the measurement's uncertainty straddles the rule's "
             "margin, or it is undefined) / not run (a unit it needs did not run)."]
    for scope in scopes:
        parts += ["", f"### {scope}", "", claims.render(records, scope=scope)]
    return "\n".join(parts) + "\n"


def config_table(results: dict) -> str:
    rows = ["| setting | value | source | why / where |", "|---|---|---|---|"]
    for item in results["config_sources"]:
        value = json.dumps(item["value"]) if not isinstance(item["value"], str) else item["value"]
        rows.append(f"| {item['field']} | {value} | {item['source']} | {item['doc']} |")
    return "## Configuration\n\nEvery value, with its source: `paper` (the paper states it), `choice` (the " \
           "paper leaves it open; ours), `selection` (chooses which units run; never changes a unit's result), " \
           "`runtime` (does not change results).\n\n" + "\n".join(rows) + "\n"


def write_card(root, experiment, results: dict) -> dict:
    """results.json, plots/ and report.md under `root`."""
    root = Path(root)
    write_json(root / RESULTS, results)
    plots = experiment.plots(results, root / PLOTS)
    images = "\n".join(f"![{Path(p).stem}]({os.path.relpath(p, root)})" for p in plots)
    text = "\n".join([header(results), departures_section(experiment, results), experiment.report(results),
                      claims_section(results), config_table(results), "## Plots\n", images, ""])
    write_text(root / REPORT, text)
    return results


def summary(experiment, results: dict) -> str:
    """The plain end-of-run text: per scope, the summary metrics per condition (the paper's number in brackets),
    then one line per claim."""
    parts = []
    for scope in experiment.scopes(results):
        parts += [f"{scope.name}: ours (the paper's)",
                  printed.grid(scope, list(experiment.conditions), experiment.summary_metrics, experiment.printed,
                               setting=experiment.printed_setting(scope)),
                  *claims.summary_lines(results.get("claims", []), scope=scope.name), ""]
    return "\n".join(parts)


def render(folder) -> Path:
    """Re-judge and re-render a card folder from its results.json: claims, comparison, the configuration's
    sources (redescribe), report.md and plots."""
    from .. import get

    folder = Path(folder)
    path = folder / RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass the folder of a result card "
                                "(<out>/<experiment>/<preset>)")
    results = json.loads(path.read_text(encoding="utf-8"))
    experiment = get(results["experiment"])
    write_card(folder, experiment, judge(experiment, redescribe(experiment, results), folder))
    return folder / REPORT


__all__ = ["cached_json", "header", "judge", "now", "redescribe", "render", "results_payload", "summary",
           "write_card", "write_json", "write_text"]
