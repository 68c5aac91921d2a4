"""What a paper declares to the runner, and how papers are found.

A paper is a package experiments/<name>/ with the same files as every other (docs/new_experiment.md):

    spec.py     EXPERIMENT = MyPaper(): metadata, conditions as data, the config dataclass and presets, the main
                metric (a subclass of Experiment below)
    paper.py    PRINTED (the paper's numbers, printed.Printed), CLAIMS (claims.Claim), departures(results)
    run.py      prepare(cfg, root, progress) -> data;  run_unit(ctx) -> {"metrics": {...}, ...}   (context.py)
    figures.py  report(results) -> Markdown (the paper's own tables), plots(results, folder) -> [PNG paths]
    bench.py    optional: `spherekit bench reproduce <name>` (add_arguments(parser), run_from_args(args))
    gpu.py      optional: gpu_plan(cfg) -> [api.gpu_plan.WorkItem], the `paper` preset's GPU work (gpu_papers.py)

How papers are found: spherekit.experiments.harness.discovery.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import from_preset


def slug(text: str) -> str:
    """A folder name for a backbone name or path ("/a/b/my-model/" -> "my-model")."""
    name = re.split(r"[\\/]", str(text).rstrip("/\\"))[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "model"


@dataclass(frozen=True)
class Condition:
    """One condition of a paper (a row of its tables: B1, SINCERE-nGPT@frozen, 2nd-a, model_b ...).

    requires: conditions whose finished runs (same backbone) this one reads, e.g. DefSent+'s 2nd step builds its
    bank with the best encoder of the 1st; the runner runs them first, and their runs enter this one's
    fingerprint. distributed: under torchrun every rank trains it (through ctx.train_or_load); otherwise rank 0
    runs it alone. seeded: False when the result cannot depend on the seed (a frozen encoder, evaluated with the
    config's fixed evaluation seed): it runs once, as seed None (folder no-seed/), whatever seeds are selected.
    params: the paper's own description of the condition (readout, loss, regime, ...). ours: why the condition is this
    reproduction's own (an ablation or probe the paper does not run; "" for the paper's): the claims that read it are
    listed apart and never counted in a card's headline."""

    name: str
    description: str
    requires: tuple[str, ...] = ()
    distributed: bool = False
    seeded: bool = True
    params: Any = None
    ours: str = ""


def conditions_of(*items: Condition) -> dict[str, Condition]:
    """{name: condition} in the given (report) order; a repeated name or an unknown requirement is an error."""
    out: dict[str, Condition] = {}
    for c in items:
        if c.name in out:
            raise ValueError(f"condition {c.name!r} declared twice")
        out[c.name] = c
    for c in out.values():
        bad = [r for r in c.requires if r not in out]
        if bad:
            raise ValueError(f"condition {c.name!r} requires unknown condition(s) {bad}")
    return out


class Experiment:
    """The spec of a paper's reproduction (subclass it in experiments/<name>/spec.py).

    Class attributes to set: name (the command-line name; for a paper in this package, its folder's name), title,
    citation (BibTeX), config_class (a dataclass of experiments.api.config fields, with `backbones`, `conditions` or
    the paper's own selection fields, and `seeds`), presets {name: overrides} (tiny, cpu-small, cpu, paper),
    conditions (conditions_of(...)), main_metric (a metric key), summary_metrics ((key, label[, digits]) of the
    end-of-run table), metric_names (the paper's own metric names, metrics.MetricName), metric_scale (100 when the
    paper reports proportions x 100), evaluation_version (bump when the paper's evaluation changes what it
    measures), condition_help (the CLI's listing when the conditions are generated from axes), noise_preset (the
    preset with 3 seeds whose claims' training noise a 1-seed card borrows: claims.evaluate), probe_presets ({preset:
    why}: presets that probe a choice of ours, e.g. another initialisation, whose cards are listed apart from the
    paper's and never counted in the headlines).

    Override when the paper's selection is not a plain `conditions` field: selected(cfg) (the conditions a config
    runs, in report order), select(names) (the config overrides that run exactly `names`) and selectable() (the
    names --conditions accepts, when it takes aliases); scopes(results) when claims are checked on groups other
    than one backbone; printed_setting(scope) when the paper prints numbers for several settings (backbones)."""

    name: str
    title: str
    citation: str
    config_class: type
    presets: dict[str, dict]
    conditions: dict[str, Condition]
    main_metric: str
    summary_metrics: Sequence[tuple] = ()
    metric_names: dict = {}
    metric_scale: float = 1
    evaluation_version: int = 1
    condition_help: str = ""
    noise_preset: str | None = None
    probe_presets: dict[str, str] = {}

    def undertrained(self, scope, condition: str) -> str | None:
        """Why a trained condition of `scope` cannot decide a claim resting on it (its training ran but it did not
        reach what the claim needs, e.g. a verifier at chance), with its numbers; None when it can. Override it where
        the paper has such a test; the core's gate applies it to every claim's rests_on (learning.gate)."""
        return None

    def unit_config(self, cfg, condition: str):
        """The config a condition's runs depend on, which their fingerprints hash: cfg itself. Override it where a
        field concerns some conditions only (e.g. a step count chosen per condition): return cfg with that field
        reduced to what concerns `condition`, so that setting it for one condition does not redo the others."""
        return cfg

    def ours(self) -> list[str]:
        """The conditions that are this reproduction's own (Condition.ours)."""
        return [name for name, c in self.conditions.items() if c.ours]

    # ------------------------------------------------------------ the paper's other modules
    def module(self, part: str):
        """experiments/<name>/<part>.py, imported on first use."""
        return importlib.import_module(f"{type(self).__module__.rsplit('.', 1)[0]}.{part}")

    def has_module(self, part: str) -> bool:
        return importlib.util.find_spec(f"{type(self).__module__.rsplit('.', 1)[0]}.{part}") is not None

    @property
    def printed(self) -> list:
        return list(self.module("paper").PRINTED)

    @property
    def claims(self) -> list:
        return list(self.module("paper").CLAIMS)

    def departures(self, results: dict) -> list[str]:
        return list(self.module("paper").departures(results))

    def prepare(self, cfg, root, progress: bool):
        return self.module("run").prepare(cfg, root, progress)

    def run_unit(self, ctx) -> dict:
        return self.module("run").run_unit(ctx)

    def report(self, results: dict) -> str:
        return self.module("figures").report(results)

    def plots(self, results: dict, folder) -> list[str]:
        """The paper's figures.plots(results, folder) with matplotlib off screen and the folder made."""
        import matplotlib

        matplotlib.use("Agg")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return list(self.module("figures").plots(results, folder))

    # ------------------------------------------------------------ configuration and selection
    def make_config(self, preset: str):
        return from_preset(self.config_class, self.presets, preset)

    def selectable(self) -> list[str]:
        """The names --conditions accepts: the conditions, plus any alias the paper's select() understands."""
        return list(self.conditions)

    def selected(self, cfg) -> list[str]:
        """The conditions `cfg` asks for, in report order (requirements are added by the runner)."""
        return list(cfg.conditions)

    def select(self, names) -> dict:
        """Config overrides that run exactly the conditions `names` (--conditions)."""
        return {"conditions": tuple(names)}

    def printed_setting(self, scope) -> str | None:
        """Which of the paper's settings (Printed.setting) the summary puts next to `scope` (None: any)."""
        return None

    def scopes(self, results: dict) -> list:
        """The groups of units the claims are checked on: one per backbone, {condition: unit}."""
        from .claims import Scope

        groups: dict[str, dict] = {}
        for unit in results["units"].values():
            groups.setdefault(slug(unit["backbone"]), {})[unit["condition"]] = unit
        return [Scope(name, units, results.get("config")) for name, units in groups.items()]


__all__ = ["Condition", "Experiment", "conditions_of", "slug"]
