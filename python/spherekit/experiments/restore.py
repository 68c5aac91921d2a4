"""Bring the finished units of a result card back into an output folder, so that a run there resumes from them.

    spherekit reproduce restore benches/results/reproduce/defsent/cpu [--out results/reproduce]

A long preset (hours on two cores) outlives the machine it started on; its output folder is not under version
control, but its result card (results.json) is. `restore` writes every unit of the card as a finished unit under
<out>/<experiment>/<preset>/<backbone>/<condition>/ (unit.json, metrics.json and `done`, which records where it
came from), with the fingerprint that the current code computes for the card's own configuration. A later
`spherekit reproduce` with the same settings then skips those units, runs the rest, and its card shows all of
them; a run with other result-changing settings does not match the fingerprints and redoes the units.

A restored unit has its metrics only, no trained model: `--reevaluate` cannot re-score it, and a condition that
starts from another condition's model (a later step of a chain) needs that model, so re-run the earlier one with
`--force` first. The card's configuration must use only fields that the current code's config has, and every
field of the current config must be in the card (else the units cannot be matched to this code: an error names
the fields). Units already finished in the output folder, or left half-done there, are not touched.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from . import card
from .base import Unit
from .config import RUNTIME, as_dict, with_overrides
from .runner import SELECTION, UNIT, finished, record_finished, unit_fingerprint


def card_config(experiment, results: dict):
    """The experiment's config for the card's preset with every value the card records (a run's --set and
    --data-dir included); an error names the fields that the card and the current code do not share."""
    cfg = experiment.make_config(results["preset"])
    saved = results["config"]
    names = {f.name for f in dataclasses.fields(cfg)}
    unknown, missing = sorted(set(saved) - names), sorted(names - set(saved))
    if unknown or missing:
        raise ValueError(f"the card's config does not match {type(cfg).__name__} of this code (fields only in the "
                         f"card: {unknown or 'none'}; only in the code: {missing or 'none'}); its units cannot be "
                         "matched to this code's runs")
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
    return with_overrides(cfg, changes)


def restore(folder, out="results/reproduce", log=None) -> list[str]:
    """Write the units of the card in `folder` as finished units under <out>/<experiment>/<preset>/; returns the
    ids of the units written (units finished or started there already are left alone and logged)."""
    from . import get

    log = log or (lambda msg: None)
    path = Path(folder) / card.RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass the folder of a result card (<out>/<experiment>/<preset>)")
    results = json.loads(path.read_text(encoding="utf-8"))
    experiment = get(results["experiment"])
    cfg = card_config(experiment, results)
    selection = getattr(experiment, "selection_fields", SELECTION)
    values, preset_values = as_dict(cfg), as_dict(experiment.make_config(results["preset"]))
    changed = [f.name for f in dataclasses.fields(cfg) if f.metadata.get("source") != RUNTIME
               and f.name not in selection and values[f.name] != preset_values[f.name]]
    if changed:
        log(f"the card was run with settings other than the preset's ({', '.join(changed)}): a run reuses its "
            "units only with the same --set / --data-dir values")
    units = [(_unit(experiment, unit_id, result), result) for unit_id, result in results["units"].items()]
    root = Path(out) / experiment.name / results["preset"]
    written = []
    for unit, result in units:
        unit_dir, fp = root / unit.id, unit_fingerprint(cfg, unit, selection)
        if finished(unit_dir, fp) is not None:
            log(f"{unit.id}: already finished in {root}; left alone")
            continue
        if unit_dir.exists():
            log(f"{unit.id}: {unit_dir} holds another or an unfinished run; left alone (remove it to restore)")
            continue
        card.write_json(unit_dir / UNIT, {"fingerprint": fp, "backbone": unit.backbone, "condition": unit.condition})
        record_finished(unit_dir, fp, {k: v for k, v in result.items() if k != "reused"},
                        restored_from=str(path), card_finished=results.get("finished"))
        log(f"{unit.id}: restored (metrics only; no trained model)")
        written.append(unit.id)
    return written


def _unit(experiment, unit_id: str, result: dict) -> Unit:
    """The unit of a card entry, checked against the experiment's conditions and the entry's id."""
    if result.get("condition") not in experiment.conditions:
        raise ValueError(f"unit {unit_id}: condition {result.get('condition')!r} is not one of "
                         f"{experiment.name}'s conditions ({', '.join(experiment.conditions)})")
    unit = Unit(result["backbone"], result["condition"])
    if unit.id != unit_id:
        raise ValueError(f"unit {unit_id}: its backbone and condition make the id {unit.id}")
    return unit
