"""Run an experiment's preset: validate, prepare data, run every unit (resumably), write the result card.

Output layout (one folder per preset; a preset may span several backbones):

    <out>/<experiment>/<preset>/
        data/                               shared data (cached, reused by reruns)
        <backbone>/<condition>/unit.json    the unit's config fingerprint (written when it starts)
        <backbone>/<condition>/checkpoint/  the trained model (a SentenceTransformer folder)
        <backbone>/<condition>/metrics.json the unit's result
        <backbone>/<condition>/done         written last: the unit is finished
        results.json, report.md, plots/     the result card (spherekit.experiments.card): every finished unit
                                            of this config, from this run and earlier ones

Under torchrun / accelerate every process trains; only rank 0 evaluates and writes files.

Resume rules: a unit with `done` and the same fingerprint is skipped; `force=True` redoes it; a unit
whose config changed is redone from scratch; an interrupted unit continues from its last training
checkpoint (or from its saved model when only the evaluation was cut off); `reevaluate=True`
(--reevaluate) recomputes the metrics of finished units from their saved models. Every file is written to a
temporary name and renamed, so nothing half-written is left behind.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

from .. import _atomic
from . import card
from .base import Unit
from .config import fingerprint, with_overrides
from .training import barrier, is_main_process

DONE, METRICS, UNIT = "done", "metrics.json", "unit.json"


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
        _check_names("condition", conditions, list(experiment.conditions))
        select = getattr(experiment, "select", None)
        changes.update(select(conditions) if select else {"conditions": tuple(conditions)})
    if backbone:
        from ..models.backbones import resolve_backbone

        resolve_backbone(backbone)  # BackboneNotFoundError listing what was tried and how to install
        changes["backbones"] = (str(backbone),)
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise FileNotFoundError(f"data_dir {data_dir} is not a folder")
        changes["data_dir"] = str(Path(data_dir).resolve())
    if seed is not None:
        changes["seed"] = int(seed)
    return with_overrides(cfg, changes) if changes else cfg


SELECTION = ("backbones", "conditions")  # which units run; a unit's own backbone and condition are in its id


def unit_fingerprint(cfg, unit: Unit, selection=SELECTION) -> str:
    """What a unit's result depends on: the config (without the fields that only select units) and the unit."""
    return fingerprint(cfg, exclude=selection, unit=unit.id, backbone=unit.backbone)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def finished(unit_dir: Path, fp: str) -> dict | None:
    """The saved result of a finished unit with fingerprint `fp`, else None."""
    done = _read_json(unit_dir / DONE)
    if not done or done.get("fingerprint") != fp:
        return None
    return _read_json(unit_dir / METRICS)


def record_finished(unit_dir: Path, fp: str, result: dict, **done_fields) -> None:
    """Save a unit's result, then its `done` marker (fingerprint, finish time and `done_fields`): written last,
    so a unit with `done` always has its metrics."""
    card.write_json(unit_dir / METRICS, result)
    card.write_json(unit_dir / DONE, {"fingerprint": fp, "finished": card.now(), **done_fields})


def _start_unit(unit_dir: Path, fp: str, unit: Unit, force: bool, log) -> None:
    info = _read_json(unit_dir / UNIT)
    if unit_dir.exists() and (force or not info or info.get("fingerprint") != fp):
        reason = "--force" if force else "its configuration changed"
        log(f"{unit.id}: starting over ({reason})")
        shutil.rmtree(unit_dir)
    elif unit_dir.exists():
        log(f"{unit.id}: resuming an interrupted run")
    card.write_json(unit_dir / UNIT, {"fingerprint": fp, "backbone": unit.backbone, "condition": unit.condition})


def collect_finished(root: Path, experiment, cfg, selection) -> dict[str, dict]:
    """Every finished unit under `root` whose result belongs to this config (same fingerprint): the card shows
    them all, so runs of a few conditions or one backbone at a time add up to one card."""
    out = {}
    for done in sorted(root.glob("*/*/" + DONE)):
        info = _read_json(done.parent / UNIT) or {}
        if info.get("condition") not in experiment.conditions or "backbone" not in info:
            continue
        unit = Unit(info["backbone"], info["condition"])
        saved = finished(done.parent, unit_fingerprint(cfg, unit, selection))
        if saved is not None:
            out[unit.id] = {**saved, "reused": True}
    return out


def shown_config(experiment, cfg, units: dict):
    """The config the card describes. Runs of one backbone or a few conditions at a time add up to one card
    (collect_finished); when the card shows units this run's `cfg` did not select, the fields that choose units
    are widened to name them too (backbones appended; conditions in the experiment's order)."""
    own = experiment.units(cfg)
    own_ids = {o.id for o in own}
    extra = [u for unit_id, u in units.items() if unit_id not in own_ids]
    if not extra:
        return cfg
    fields = {f.name for f in dataclasses.fields(cfg)}
    changes = {}
    if "backbones" in fields:
        changes["backbones"] = tuple(dict.fromkeys([*cfg.backbones, *(u["backbone"] for u in extra)]))
    shown = {u.condition for u in own} | {u["condition"] for u in extra}
    select = getattr(experiment, "select", None)
    if select:
        changes.update(select([c for c in experiment.conditions if c in shown]))
    elif "conditions" in fields:
        changes["conditions"] = tuple(dict.fromkeys([*cfg.conditions, *(u["condition"] for u in extra)]))
    return with_overrides(cfg, changes)


def reproduce(name: str, preset: str, *, conditions=None, backbone=None, data_dir=None, out="results/reproduce",
              seed=None, force: bool = False, reevaluate: bool = False, progress: bool = True,
              overrides: dict | None = None, log=None) -> dict:
    """Run `preset` of experiment `name` (see the module docstring); returns the card's results dict.

    reevaluate: recompute the metrics of finished units from their saved models (after a fix in an evaluator,
    say) without retraining them; their earlier training and cache times are kept."""
    if force and reevaluate:
        raise ValueError("force and reevaluate exclude each other: --force retrains, --reevaluate does not")
    from . import get

    log = log or (lambda msg: print(msg, file=sys.stderr))
    experiment = get(name)
    cfg = make_config(experiment, preset, conditions=conditions, backbone=backbone, data_dir=data_dir, seed=seed,
                      overrides=overrides)
    root = Path(out) / experiment.name / preset
    _atomic.check_writable(root)
    main = is_main_process()
    started = card.now()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{experiment.name} / {preset}: preparing the data (cached under {root / 'data'})")
    data = experiment.prepare(cfg, root, progress)
    seconds["data"] = round(time.perf_counter() - t0, 2)
    units = experiment.units(cfg)
    selection = getattr(experiment, "selection_fields", SELECTION)
    results = {}
    for i, unit in enumerate(units, 1):
        unit_dir = root / unit.id
        fp = unit_fingerprint(cfg, unit, selection)
        saved = None if force else finished(unit_dir, fp)
        if saved is not None and not reevaluate:
            log(f"[{i}/{len(units)}] {unit.id}: done earlier (reused; --force redoes it)")
            results[unit.id] = {**saved, "reused": True}
            continue
        log(f"[{i}/{len(units)}] {unit.id}" + (": re-evaluating its saved model" if saved is not None else ""))
        if main:
            if saved is not None:  # the unit's saved model stays; run_unit evaluates it again
                (unit_dir / DONE).unlink()
            else:
                _start_unit(unit_dir, fp, unit, force, log)
        barrier()  # the other ranks start once rank 0 has cleared or kept the unit's folder
        result = experiment.run_unit(cfg, unit, data, unit_dir, progress)
        if not main:
            continue  # trained with the others; rank 0 evaluates and writes
        result = {"backbone": unit.backbone, "condition": unit.condition, **result}
        if saved is not None:  # keep the times of the stages that were not redone
            result["seconds"] = {**saved.get("seconds", {}), **result.get("seconds", {})}
        record_finished(unit_dir, fp, result)
        results[unit.id] = result
    if not main:
        return {}
    for unit_id, result in collect_finished(root, experiment, cfg, selection).items():
        results.setdefault(unit_id, result)
    for unit_id, result in results.items():
        for stage, s in result.get("seconds", {}).items():
            seconds[f"{unit_id}/{stage}"] = s
    seconds["total"] = round(time.perf_counter() - t0, 2)
    payload = card.results_payload(experiment, preset, shown_config(experiment, cfg, results), results, seconds,
                                   started, data_stats=getattr(data, "stats", {}))
    card.write_card(root, experiment, payload)
    return payload
