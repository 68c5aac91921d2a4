"""Run an experiment's preset: validate, prepare data, run every (backbone, condition, seed) resumably, aggregate
the seeds of each unit, write the result card.

Output layout (one folder per preset; a preset may span several backbones):

    <out>/<experiment>/<preset>/
        data/                                       shared data (cached, reused by reruns)
        <backbone>/<condition>/seed-<s>/unit.json   the run's fingerprint (written when it starts)
        <backbone>/<condition>/seed-<s>/checkpoint/ the trained model, when the paper keeps one
        <backbone>/<condition>/seed-<s>/metrics.json the run's result (its metrics, seconds, training record and
                                                    the machines its times were measured on)
        <backbone>/<condition>/seed-<s>/done        written last: the run is finished (fingerprint, evaluation)
        <backbone>/<condition>/cache/               data shared by the seeds of a unit (ctx.cached(shared=True))
        results.json, report.md, plots/             the result card (spherekit.experiments.harness.card): every finished
                                                    run of this config, from this invocation and earlier ones

The grid: the paper's spec says which conditions a config selects (Experiment.selected) and what each requires
(Condition.requires: run first, on the same backbone); the runner expands backbones x conditions x seeds.
A unit of the card is (backbone, condition): the mean of its seeds' metrics, with their sample standard deviation
(ddof = 1) when there are several (units.aggregate).

Fingerprints: a run's fingerprint hashes every result-changing config field (never the `selection` fields that
only choose units, nor `runtime` ones; of Experiment.unit_config for its condition, where a field concerns some
conditions only), its backbone, condition and seed, and the finished runs of the conditions
it requires; the evaluation version (metrics.evaluation_version) is stored beside it. Resume rules: a run whose
`done` has the same fingerprint and evaluation version is reused; with the same fingerprint but another evaluation
version it is re-evaluated (run_unit again: its saved model is loaded, or the run is redone); `force=True` redoes
it; a run whose fingerprint changed starts over; an interrupted run continues from its last training checkpoint
(or from its saved model when only the evaluation was cut off); `reevaluate=True` recomputes the metrics of
finished runs from their saved models, and keeps as they are the finished runs of a seeded (trained) condition
that have none (restored from a card, or a seed whose model the paper does not keep): re-scoring those would mean
retraining them, which is --force's job. Every file is written to a temporary name and renamed.

Under torchrun / accelerate every rank trains the conditions marked `distributed`; rank 0 alone runs the others,
evaluates, and writes every file.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from ... import _atomic
from ...training.interrupt import Interrupted, check, graceful
from .quiet import library_progress_bars
from ...training.trainer import barrier, check_report_to, is_main_process, reporting, shutdown_distributed
from ..api.config import fingerprint, with_overrides
from ..api.learning import trainings
from ..api.metrics import evaluation_version
from ..api.plugin import slug
from ..api.units import aggregate, seed_order
from . import card
from .context import CHECKPOINT, RankDone, UnitContext

DONE, METRICS, UNIT, NO_SEED, INTERRUPTED = "done", "metrics.json", "unit.json", "no-seed", "interrupted.json"
DEFAULT_OUT = "results/reproduce"


def _check_names(kind: str, given, valid) -> None:
    bad = [g for g in given if g not in valid]
    if bad:
        raise ValueError(f"unknown {kind} {', '.join(map(repr, bad))}; valid {kind}s: {', '.join(valid)}")


def make_config(experiment, preset: str, *, conditions=None, backbone=None, data_dir=None, seed=None,
                overrides: dict | None = None):
    """The preset's config with the command-line choices applied and validated."""
    _check_names("preset", [preset], list(experiment.presets))
    cfg = experiment.make_config(preset)
    changes = dict(overrides or {})
    if conditions:
        _check_names("condition", conditions, experiment.selectable())
        changes.update(experiment.select(conditions))
    if backbone:
        from ...models.backbones import resolve_backbone

        resolve_backbone(backbone)  # BackboneNotFoundError listing what was tried and how to install
        changes["backbones"] = (str(backbone),)
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise FileNotFoundError(f"data_dir {data_dir} is not a folder")
        changes["data_dir"] = str(Path(data_dir).resolve())
    if seed is not None:
        changes["seeds"] = (int(seed),)
    return with_overrides(cfg, changes) if changes else cfg


def plan(experiment, cfg) -> list[tuple[str, str]]:
    """(backbone, condition) in run order: per backbone, the selected conditions, each after what it requires."""
    order: list[str] = []

    def add(name: str):
        for required in experiment.conditions[name].requires:
            add(required)
        if name not in order:
            order.append(name)

    for name in experiment.selected(cfg):
        add(name)
    return [(b, c) for b in cfg.backbones for c in order]


def run_dir(root: Path, backbone: str, condition: str, seed: int | None) -> Path:
    return Path(root) / slug(backbone) / condition / (NO_SEED if seed is None else f"seed-{seed}")


def seeds_of(experiment, cfg, condition: str) -> tuple:
    """The seeds a condition runs with: the config's, or (None,) for a condition that is not `seeded`."""
    return tuple(cfg.seeds) if experiment.conditions[condition].seeded else (None,)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def record_finished(folder: Path, fp: str, version: str, result: dict, **done_fields) -> None:
    """Save a run's result, then its `done` marker (fingerprint, evaluation version, finish time and `done_fields`):
    written last, so a run with `done` always has its metrics."""
    card.write_json(folder / METRICS, result)
    card.write_json(folder / DONE, {"fingerprint": fp, "evaluation": version, "finished": card.now(), **done_fields})


class RunStore:
    """The runs of one config under a preset's output folder: their fingerprints and which are finished."""

    def __init__(self, root: Path, experiment, cfg):
        self.root, self.experiment, self.cfg = Path(root), experiment, cfg
        self.version = evaluation_version(experiment)
        self._finished: dict[tuple[str, str], list[dict]] = {}

    def requirements(self, backbone: str, condition: str) -> dict[str, list[dict]]:
        """{required condition: its finished runs on this backbone}."""
        return {r: self.finished_runs(backbone, r) for r in self.experiment.conditions[condition].requires}

    def fingerprints(self, backbone: str, condition: str, seed: int) -> tuple[str, str]:
        """(the unit's fingerprint without the seed, the run's). A required condition enters by the seeds and
        fingerprints of its finished runs (what was trained, not how it was evaluated: an evaluator change
        re-evaluates, it does not retrain what builds on those runs); the config enters as the experiment's
        unit_config for the condition (the fields that concern it)."""
        stamps = {r: sorted(f"{x['seed']}:{x['fingerprint']}" for x in runs)
                  for r, runs in self.requirements(backbone, condition).items()}
        cfg = self.experiment.unit_config(self.cfg, condition)
        unit = fingerprint(cfg, backbone=backbone, condition=condition, requires=stamps)
        return unit, fingerprint(cfg, backbone=backbone, condition=condition, requires=stamps, seed=seed)

    def state(self, backbone: str, condition: str, seed: int) -> tuple[str, dict | None]:
        """("done", result) | ("stale", result: finished under another evaluation version) | ("todo", None)."""
        folder = run_dir(self.root, backbone, condition, seed)
        done, info = _read_json(folder / DONE), _read_json(folder / UNIT) or {}
        _, fp = self.fingerprints(backbone, condition, seed)
        if not done or done.get("fingerprint") != fp or info.get("backbone") != backbone:
            return "todo", None
        result = _read_json(folder / METRICS)
        if result is None:
            return "todo", None
        return ("done" if done.get("evaluation") == self.version else "stale"), result

    def finished_runs(self, backbone: str, condition: str) -> list[dict]:
        """Every finished run of (backbone, condition) on disk valid for this config and evaluation version, by seed:
        {"seed", "dir", "fingerprint", "evaluation", "result"}."""
        key = (backbone, condition)
        if key not in self._finished:
            runs = []
            for done in sorted((self.root / slug(backbone) / condition).glob("*/" + DONE)):
                info = _read_json(done.parent / UNIT) or {}
                seed = info.get("seed")
                if info.get("backbone") != backbone or not (seed is None or isinstance(seed, int)) \
                        or done.parent != run_dir(self.root, backbone, condition, seed):
                    continue
                state, result = self.state(backbone, condition, seed)
                if state == "done":
                    runs.append({"seed": seed, "dir": done.parent, "fingerprint": self.fingerprints(
                        backbone, condition, seed)[1], "evaluation": self.version, "result": result})
            self._finished[key] = sorted(runs, key=seed_order)
        return self._finished[key]

    def forget(self, backbone: str, condition: str) -> None:
        self._finished.pop((backbone, condition), None)

    def units(self) -> dict[str, dict]:
        """Every unit with finished runs under the folder (any backbone, condition and seed of this config),
        aggregated, in the experiment's condition order."""
        found: dict[tuple[str, str], None] = {}
        for info_path in sorted(self.root.glob(f"*/*/*/{UNIT}")):
            info = _read_json(info_path) or {}
            if info.get("condition") in self.experiment.conditions and isinstance(info.get("backbone"), str):
                found[(info["backbone"], info["condition"])] = None
        order = list(self.experiment.conditions)
        out = {}
        for backbone, condition in sorted(found, key=lambda bc: order.index(bc[1])):
            runs = self.finished_runs(backbone, condition)
            if runs:
                out[f"{slug(backbone)}/{condition}"] = aggregate(backbone, condition, [r["result"] for r in runs])
        return out


def _start_run(folder: Path, fp: str, backbone: str, condition: str, seed: int | None, force: bool, log) -> None:
    info = _read_json(folder / UNIT)
    label = f"{slug(backbone)}/{condition}/{folder.name}"
    if folder.exists() and (force or not info or info.get("fingerprint") != fp):
        log(f"{label}: starting over ({'--force' if force else 'its configuration changed'})")
        shutil.rmtree(folder)
    elif folder.exists():
        log(f"{label}: resuming an interrupted run")
    card.write_json(folder / UNIT, {"fingerprint": fp, "backbone": backbone, "condition": condition, "seed": seed})


def shown_config(experiment, cfg, units: dict):
    """The config the card describes. Runs of one backbone, a few conditions or a few seeds at a time add up to
    one card; when the card shows units or seeds this `cfg` did not select, the selection fields are widened to
    name them too (backbones and seeds appended; conditions in the experiment's order)."""
    shown_conditions = {u["condition"] for u in units.values()} | set(experiment.selected(cfg))
    backbones = tuple(dict.fromkeys([*cfg.backbones, *(u["backbone"] for u in units.values())]))
    ran = [s for u in units.values() for s in u.get("seeds", []) if s is not None]
    seeds = tuple(dict.fromkeys([*cfg.seeds, *ran]))
    changes = {}
    if backbones != tuple(cfg.backbones):
        changes["backbones"] = backbones
    if seeds != tuple(cfg.seeds):
        changes["seeds"] = seeds
    if shown_conditions - set(experiment.selected(cfg)):
        changes.update(experiment.select([c for c in experiment.conditions if c in shown_conditions]))
    return with_overrides(cfg, changes) if changes else cfg


def _add_interrupted(folder: Path, seconds: float) -> None:
    """Add the time (and machine) of an attempt a Ctrl-C stopped to the run's interrupted.json (counted when the run
    finishes)."""
    before = _read_json(folder / INTERRUPTED) or {}
    card.write_json(folder / INTERRUPTED, {"seconds": round(before.get("seconds", 0.0) + seconds, 2),
                                           "machines": sorted({*before.get("machines", ()), card.machine()})})


def _run_one(experiment, cfg, store: RunStore, data, backbone, condition, seed, *, force, reevaluate, progress,
             main, log, label: str) -> None:
    """Run (or reuse) one (backbone, condition, seed)."""
    folder = run_dir(store.root, backbone, condition, seed)
    distributed = experiment.conditions[condition].distributed
    if distributed:
        barrier()  # every rank sees the same finished runs before rank 0 changes anything
    state, saved = store.state(backbone, condition, seed)
    redo_eval = saved is not None and not force and (reevaluate or state == "stale")
    if state == "done" and not force and not reevaluate:
        log(f"{label}: done earlier (reused; --force redoes it)")
        return
    if state == "done" and reevaluate and experiment.conditions[condition].seeded \
            and not (folder / CHECKPOINT / "modules.json").is_file():
        log(f"{label}: kept as it is (no saved model to re-evaluate: restored from a card, or not the seed whose "
            "model was kept; --force retrains it)")
        return
    log(label + (": measured under another evaluation version; re-evaluating" if redo_eval and state == "stale"
                 else ": re-evaluating its saved model" if redo_eval else ""))
    unit_fp, fp = store.fingerprints(backbone, condition, seed)
    if main:
        if redo_eval:  # the run's saved model stays; run_unit evaluates it again
            (folder / DONE).unlink()
        else:
            _start_run(folder, fp, backbone, condition, seed, force, log)
    if distributed:
        barrier()  # the other ranks start once rank 0 has cleared or kept the run's folder
    ctx = UnitContext(experiment=experiment, cfg=cfg, backbone=backbone, condition=experiment.conditions[condition],
                      seed=seed, data=data, run_dir=folder, root=store.root, fingerprint=fp, unit_fingerprint=unit_fp,
                      progress=progress, is_main=main, requirements=store.requirements(backbone, condition),
                      siblings=lambda: [r for r in store.finished_runs(backbone, condition) if r["seed"] != seed],
                      log=log)
    started = time.perf_counter()
    try:
        result = experiment.run_unit(ctx)
    except RankDone:
        return
    except (Interrupted, KeyboardInterrupt):
        if main:
            _add_interrupted(folder, time.perf_counter() - started)
        raise
    if not main:
        return
    if not isinstance(result, dict) or not isinstance(result.get("metrics"), dict):
        raise TypeError(f"{experiment.name}: run_unit must return a dict with a 'metrics' dict, got {type(result)}")
    if "training" in result:
        raise TypeError(f"{experiment.name}: run_unit returned a 'training' key; record trainings through "
                        "ctx.train_or_load or ctx.record_training(name, record) (one run record)")
    earlier = saved if redo_eval else {}  # a re-evaluation keeps the times and the record of its training
    seconds = {**earlier.get("seconds", {}), **result.pop("seconds", {}), **ctx.seconds}
    interrupted = _read_json(folder / INTERRUPTED) or {}
    if interrupted.get("seconds"):  # the attempts a Ctrl-C stopped count in the run's time
        seconds["interrupted"] = round(seconds.get("interrupted", 0.0) + interrupted["seconds"], 2)
    (folder / INTERRUPTED).unlink(missing_ok=True)
    training = ctx.training or trainings(earlier)
    machines = sorted({*earlier.get("machines", ()), *interrupted.get("machines", ()), card.machine()})
    record = {"backbone": backbone, "condition": condition, "seed": seed, **result, "seconds": seconds,
              "machines": machines}
    if training:
        record["training"] = training
    record_finished(folder, fp, store.version, record)
    store.forget(backbone, condition)


def reproduce(name: str, preset: str, *, conditions=None, backbone=None, data_dir=None, out=DEFAULT_OUT, seed=None,
              force: bool = False, reevaluate: bool = False, progress: bool = True, overrides: dict | None = None,
              report_to=(), log=None) -> dict:
    """Run `preset` of experiment `name` (see the module docstring); returns the card's results dict ({} on ranks
    other than 0).

    reevaluate: recompute the metrics of finished runs from their saved models (after a fix in an evaluator, say)
    without retraining them; their earlier training and cache times are kept; a finished trained run without a
    saved model is kept as it is (the log says so). report_to: where every training
    also reports (transformers' integrations: "tensorboard", "wandb", ...; logs under <run>/logs/), each checked
    here, before any data work (an integration that is not installed stops the run in one line)."""
    if force and reevaluate:
        raise ValueError("force and reevaluate exclude each other: --force retrains, --reevaluate does not")
    report_to = check_report_to(report_to)
    from .. import get

    log = log or (lambda msg: print(msg, file=sys.stderr))
    experiment = get(name)
    cfg = make_config(experiment, preset, conditions=conditions, backbone=backbone, data_dir=data_dir, seed=seed,
                      overrides=overrides)
    root = Path(out) / experiment.name / preset
    _atomic.check_writable(root)
    with library_progress_bars(progress):  # --no-progress silences the libraries' bars too
        main = is_main_process()
        started = card.now()
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        log(f"{experiment.name} / {preset}: preparing the data (cached under {root / 'data'})")
        data = experiment.prepare(cfg, root, progress)
        seconds["data"] = round(time.perf_counter() - t0, 2)
        store = RunStore(root, experiment, cfg)
        work = [(b, c, s) for b, c in plan(experiment, cfg) for s in seeds_of(experiment, cfg, c)]
        with graceful(log), reporting(report_to):
            for i, (b, c, s) in enumerate(work, 1):
                check()
                if not main and not experiment.conditions[c].distributed:
                    continue
                _run_one(experiment, cfg, store, data, b, c, s, force=force, reevaluate=reevaluate, progress=progress,
                         main=main, log=log, label=f"[{i}/{len(work)}] {slug(b)}/{c}/{run_dir(root, b, c, s).name}")
        shutdown_distributed()
        if not main:
            return {}
        units = store.units()
        for unit_id, unit in units.items():
            for stage, s in unit.get("seconds", {}).items():
                seconds[f"{unit_id}/{stage}"] = s
        seconds["total"] = round(time.perf_counter() - t0, 2)
        payload = card.results_payload(experiment, preset, shown_config(experiment, cfg, units), units, seconds,
                                       started, data_stats=getattr(data, "stats", {}), folder=root)
        card.write_card(root, experiment, payload)
        return payload


__all__ = ["DEFAULT_OUT", "NO_SEED", "RunStore", "make_config", "plan", "record_finished",
           "reproduce", "run_dir", "seeds_of", "shown_config"]
