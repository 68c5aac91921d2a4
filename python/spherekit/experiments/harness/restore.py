"""Bring the finished runs of a result card back into an output folder, so that a run there resumes from them.

    spherekit reproduce restore benches/results/reproduce/defsent/cpu [--out results/reproduce]

A long preset (hours on two cores) outlives the machine it started on; its output folder is not under version
control, but its result card (results.json) is. `restore` writes every run of every unit of the card as a finished
run under <out>/<experiment>/<preset>/<backbone>/<condition>/seed-<s>/ (no-seed/ for a condition that is not
seeded; unit.json, metrics.json and `done`, which
records where it came from), with the fingerprint that the current code computes for the card's own configuration.
A later `spherekit reproduce` with the same settings then skips those runs, runs the rest, and its card shows all of
them; a run with other result-changing settings does not match the fingerprints and redoes them.

A restored run has its metrics only, no trained model: `--reevaluate` keeps it as it is, and a condition that
starts from another condition's model (a later step of a chain) needs that model, so re-run the earlier one with
`--force` first. The card must have been measured under this code's evaluation version, its configuration must use
only fields that the current code's config has, and every field of the current config must be in the card (else
its runs cannot be matched to this code: an error names the fields). Runs already finished in the output folder,
or left half-done there, are not touched.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..api.config import UNFINGERPRINTED, as_dict, with_overrides
from ..api.metrics import evaluation_version
from ..api.plugin import slug
from ..api.units import unit_runs
from . import card
from .runner import DEFAULT_OUT, UNIT, RunStore, plan, record_finished, run_dir


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


def _load(folder) -> tuple[Path, dict]:
    path = Path(folder) / card.RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass the folder of a result card (<out>/<experiment>/<preset>)")
    return path, json.loads(path.read_text(encoding="utf-8"))


def restore(folder, out=DEFAULT_OUT, log=None) -> list[str]:
    """Write the runs of the card in `folder` as finished runs under <out>/<experiment>/<preset>/; returns the ids
    of the runs written ("<backbone>/<condition>/seed-<s>"; runs finished or started there already are left alone
    and logged)."""
    from .. import get

    log = log or (lambda msg: None)
    path, results = _load(folder)
    experiment = get(results["experiment"])
    version = evaluation_version(experiment)
    measured = results.get("evaluation", {}).get("version")
    if measured != version:
        raise ValueError(f"the card was measured under evaluation version {measured}, this code's is {version}: "
                         "its metrics would mix with this code's; re-run the preset instead")
    cfg = card_config(experiment, results)
    values, preset_values = as_dict(cfg), as_dict(experiment.make_config(results["preset"]))
    changed = [f.name for f in dataclasses.fields(cfg) if f.metadata.get("source") not in UNFINGERPRINTED
               and values[f.name] != preset_values[f.name]]
    if changed:
        log(f"the card was run with settings other than the preset's ({', '.join(changed)}): a run reuses its "
            "units only with the same --set / --data-dir values")
    for unit_id, u in results["units"].items():
        _check_unit(experiment, unit_id, u["backbone"], u["condition"])
    units = {(u["backbone"], u["condition"]): (unit_id, u) for unit_id, u in results["units"].items()}
    root = Path(out) / experiment.name / results["preset"]
    store = RunStore(root, experiment, cfg)
    written = []
    for key in [bc for bc in plan(experiment, cfg) if bc in units]:  # what a unit requires is restored first
        for run in unit_runs(units[key][1]):
            written += _restore_run(store, key, run, path, results, log)
    return written


def _restore_run(store: RunStore, key, run: dict, path: Path, results: dict, log) -> list[str]:
    (backbone, condition), seed = key, run["seed"]
    folder = run_dir(store.root, backbone, condition, seed)
    label = f"{slug(backbone)}/{condition}/{folder.name}"
    state, _ = store.state(backbone, condition, seed)
    if state == "done":
        log(f"{label}: already finished in {store.root}; left alone")
        return []
    if folder.exists():
        log(f"{label}: {folder} holds another or an unfinished run; left alone (remove it to restore)")
        return []
    _, fp = store.fingerprints(backbone, condition, seed)
    card.write_json(folder / UNIT, {"fingerprint": fp, "backbone": backbone, "condition": condition, "seed": seed})
    record_finished(folder, fp, store.version, {"backbone": backbone, "condition": condition, **run},
                    restored_from=str(path), card_finished=results.get("finished"))
    store.forget(backbone, condition)
    log(f"{label}: restored (metrics only; no trained model)")
    return [label]


def _check_unit(experiment, unit_id: str, backbone: str, condition: str) -> None:
    """A card entry's condition is one of the experiment's and its id is its backbone and condition."""
    if condition not in experiment.conditions:
        raise ValueError(f"unit {unit_id}: condition {condition!r} is not one of {experiment.name}'s conditions "
                         f"({', '.join(experiment.conditions)})")
    if f"{slug(backbone)}/{condition}" != unit_id:
        raise ValueError(f"unit {unit_id}: its backbone and condition make the id {slug(backbone)}/{condition}")


__all__ = ["card_config", "restore"]
