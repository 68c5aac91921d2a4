"""What every experiment provides to the runner (spherekit.experiments.runner), and its units of work.

An experiment is an object with

    name, title, citation           CLI name ("concept"), the paper's title, a BibTeX entry
    presets: dict[str, dict]        preset name -> overrides of its config dataclass
    conditions: dict[str, str]      condition name -> one-line description (the paper's names: B0, M1, ...)
    make_config(preset) -> cfg      the preset's config (a dataclass of spherekit.experiments.config fields)
    units(cfg) -> list[Unit]        the (backbone, condition) pairs the config asks for
    prepare(cfg, root, progress) -> data          shared data for all units (cached under root/data)
    run_unit(cfg, unit, data, unit_dir, progress) -> dict   train and/or evaluate one unit; JSON-able result
                                    with at least {"metrics": {...}, "seconds": {stage: s}}; the final model
                                    goes to unit_dir/checkpoint/
    report(results) -> str          the Markdown body of report.md (ours vs the paper, claims)
    plots(results, folder) -> list[str]           PNGs for the card
    summary(results) -> str         the plain table printed at the end of a run (ours next to the paper)
optionally
    select(names) -> dict           config overrides that run exactly the named conditions (--conditions)
    selection_fields: tuple         config fields that only choose units (default: backbones, conditions);
                                    left out of a unit's fingerprint, so choosing fewer units reuses the rest

The runner owns everything else: output layout, resume, --force, atomic writes, the card's frame.
CardFromReportModule supplies report / summary / plots from the experiment package's report module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol


def slug(text: str) -> str:
    """A folder name for a backbone name or path ("/a/b/my-model/" -> "my-model")."""
    name = re.split(r"[\\/]", str(text).rstrip("/\\"))[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "model"


@dataclass(frozen=True)
class Unit:
    """One model of an experiment: a condition trained (or frozen) on a backbone."""

    backbone: str
    condition: str

    @property
    def id(self) -> str:
        return f"{slug(self.backbone)}/{self.condition}"


class Experiment(Protocol):
    name: str
    title: str
    citation: str
    presets: dict[str, dict]
    conditions: dict[str, str]

    def make_config(self, preset: str) -> Any: ...

    def units(self, cfg) -> list[Unit]: ...

    def prepare(self, cfg, root, progress: bool) -> Any: ...

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict: ...

    def report(self, results: dict) -> str: ...

    def plots(self, results: dict, folder) -> list[str]: ...

    def summary(self, results: dict) -> str: ...


class CardFromReportModule:
    """report / summary / plots of an experiment delegated to the functions report_body, summary and make_plots
    of its package's `report` module (imported on first use)."""

    def _report_module(self):
        import importlib

        return importlib.import_module(type(self).__module__.rsplit(".", 1)[0] + ".report")

    def report(self, results: dict) -> str:
        return self._report_module().report_body(results)

    def summary(self, results: dict) -> str:
        return self._report_module().summary(results)

    def plots(self, results: dict, folder) -> list[str]:
        return self._report_module().make_plots(results, folder)
