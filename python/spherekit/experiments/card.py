"""The result card of an experiment preset: results.json (everything) and report.md + plots/ (for people).

results.json: experiment, title, citation, preset, config (every value) and config_sources (paper /
choice / runtime, with the reason), versions, machine, start and end times, wall seconds per stage
("data", "<unit>/train", "<unit>/eval", "total"), data statistics, and per unit its metrics, training
curves and timings. report.md: a header (what ran, where, how long), the experiment's own body
(ours next to the paper's printed numbers, which claims hold), the configuration table and the plots.
`render(folder)` rebuilds report.md and the plots from results.json alone (`spherekit reproduce report`).
All files are written atomically.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from .._atomic import atomic_write_text
from ..bench.machine import machine_name, now, versions
from .config import as_dict, describe

RESULTS, REPORT, PLOTS = "results.json", "report.md", "plots"


def write_text(path, text: str) -> Path:
    """Write `text` to `path` atomically (spherekit._atomic)."""
    return atomic_write_text(path, text)


def write_json(path, payload) -> Path:
    return write_text(path, json.dumps(payload, indent=2, default=str) + "\n")


def cached_json(path, key: str, build):
    """The JSON data saved at `path` under `key`; when the file is missing or was built under another key (other
    settings), build() is called and its result saved there (atomically) with the key."""
    path = Path(path)
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["data"]
    data = build()
    write_json(path, {"key": key, "data": data})
    return data


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def results_payload(experiment, preset: str, cfg, units: dict, seconds: dict, started: str,
                    data_stats: dict | None = None) -> dict:
    return {
        "experiment": experiment.name, "title": experiment.title, "citation": experiment.citation.strip(),
        "preset": preset, "config": as_dict(cfg),
        "config_sources": [{"field": f, "value": v, "source": s, "doc": d} for f, v, s, d in describe(cfg)],
        "versions": {**versions(), "python": platform.python_version()},
        "machine": machine_name(_device()), "device": _device(),
        "command": " ".join(["spherekit", *sys.argv[1:]]) if Path(sys.argv[0]).name == "spherekit" else None,
        "started": started, "finished": now(), "wall_seconds": seconds,
        "data": data_stats or {}, "units": units,
    }


def _minutes(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def header(results: dict) -> str:
    secs = results.get("wall_seconds", {})
    lines = [
        f"# {results['title']}: reproduction (`spherekit reproduce {results['experiment']} --preset "
        f"{results['preset']}`)", "",
        f"- Machine: {results['machine']}; versions: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items() if v),
        f"- Ran {results['started']} to {results['finished']}; wall time of this run: "
        f"{_minutes(secs.get('total', 0))} (data {_minutes(secs.get('data', 0))}; units reused from earlier "
        "runs count their own earlier times below)",
        f"- Units: {len(results['units'])}; per-unit wall time: "
        + "; ".join(f"{u} " + ", ".join(f"{k} {_minutes(v)}" for k, v in r.get("seconds", {}).items())
                    for u, r in results["units"].items()),
    ]
    return "\n".join(lines) + "\n"


def config_table(results: dict) -> str:
    rows = ["| setting | value | source | why / where |", "|---|---|---|---|"]
    for item in results["config_sources"]:
        value = json.dumps(item["value"]) if not isinstance(item["value"], str) else item["value"]
        rows.append(f"| {item['field']} | {value} | {item['source']} | {item['doc']} |")
    return "## Configuration\n\nEvery value, with its source: `paper` (the paper states it), `choice` (the " \
           "paper leaves it open; ours), `runtime` (does not change results).\n\n" + "\n".join(rows) + "\n"


def write_card(root, experiment, results: dict) -> dict:
    """results.json, plots/ and report.md under `root`."""
    root = Path(root)
    write_json(root / RESULTS, results)
    plots = experiment.plots(results, root / PLOTS)
    body = experiment.report(results)
    images = "\n".join(f"![{Path(p).stem}]({os.path.relpath(p, root)})" for p in plots)
    text = "\n".join([header(results), body, config_table(results), "## Plots\n", images, ""])
    write_text(root / REPORT, text)
    return results


def render(folder) -> Path:
    """Re-render report.md and the plots of a card folder from its results.json."""
    from . import get

    folder = Path(folder)
    path = folder / RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass the folder of a result card "
                                "(<out>/<experiment>/<preset>)")
    results = json.loads(path.read_text(encoding="utf-8"))
    write_card(folder, get(results["experiment"]), results)
    return folder / REPORT


__all__ = ["header", "now", "render", "results_payload", "write_card", "write_json", "write_text"]
