"""`spherekit reproduce`: list the experiments, run one, re-render a result card, or restore a card's units.

    spherekit reproduce list
    spherekit reproduce concept --preset cpu-small [--conditions B0,B1] [--backbone NAME|PATH] [--data-dir DIR]
                                [--out DIR] [--seed S] [--force | --reevaluate] [--no-progress]
    spherekit reproduce circumplex --preset cpu --data-dir DIR --set dataset=goemotions --set angles_file=FILE
    spherekit reproduce report results/reproduce/concept/cpu-small
    spherekit reproduce restore benches/results/reproduce/defsent/cpu [--out DIR]
    spherekit reproduce index [--check]

--set FIELD=VALUE overrides any field of the experiment's config (VALUE read as JSON, else as a string; the
card marks a changed paper value as a departure). --seed S runs the seed S alone (--set seeds=[0,1,2] several).

A run prints a progress bar per stage and, at the end, a plain table of the main metrics per unit; the
result card (results.json, report.md, plots/) is under <out>/<experiment>/<preset>/. `restore` writes the units
of a committed card back as finished units under <out>, so that a long preset resumes on another machine
(spherekit.experiments.harness.restore). `index` regenerates the README's reproduction table and the card tables of
docs/reproduce.md from the committed cards (--check: change nothing, exit 1 when they differ).
"""

from __future__ import annotations

import sys


def add_arguments(parser) -> None:
    parser.add_argument("experiment", help="an experiment name, 'list', 'report', 'restore' or 'index'")
    parser.add_argument("folder", nargs="?",
                        help="with 'report' or 'restore': the card folder <out>/<experiment>/<preset>")
    parser.add_argument("--preset", default="cpu-small", help="cpu-small (default), cpu, paper, tiny")
    parser.add_argument("--conditions", type=lambda s: [c for c in s.split(",") if c],
                        help="comma-separated subset of the experiment's conditions")
    parser.add_argument("--backbone", help="a backbone name or a local sentence-transformers folder")
    parser.add_argument("--data-dir", help="the paper's own data in its published formats")
    parser.add_argument("--out", default="results/reproduce", help="output root (default: %(default)s)")
    parser.add_argument("--seed", type=int, help="run this seed alone (the config's seeds otherwise)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a config field (repeatable), e.g. --set dataset=goemotions")
    parser.add_argument("--force", action="store_true", help="redo finished units")
    parser.add_argument("--reevaluate", action="store_true",
                        help="recompute the metrics of finished units from their saved models (no retraining; a "
                             "trained run without one, restored from a card, is kept as it is)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars: training, verifiers, encoding and the libraries' own (weight "
                             "loading, dataset maps); the log lines stay")
    parser.add_argument("--report-to", type=lambda s: [c for c in s.split(",") if c], default=[],
                        metavar="NAMES", help="every training also reports to these transformers integrations "
                        "(e.g. tensorboard; comma-separated; logs under <run>/logs/)")
    parser.add_argument("--check", action="store_true",
                        help="with 'index': write nothing, exit 1 when README.md / docs/reproduce.md differ from the "
                        "cards")


def experiment_help(name: str, preset: str = "cpu-small") -> str:
    """`spherekit reproduce <name> --help`: the experiment, its presets and conditions, and every config field that
    --set accepts, with its type, its value in `preset`, its source and why."""
    import dataclasses
    import json

    from .. import get
    from ..api.config import bounds_of

    exp = get(name)
    shown = preset if preset in exp.presets else "cpu-small"
    cfg = exp.make_config(shown)
    conditions = exp.condition_help or "\n".join(f"  {c.name}: {c.description}" for c in exp.conditions.values())
    lines = [f"spherekit reproduce {name} --preset P [--conditions A,B] [--backbone NAME|PATH] [--data-dir DIR] "
             "[--out DIR] [--seed S] [--set FIELD=VALUE ...] [--force | --reevaluate] [--no-progress]", "",
             f"{exp.title}", "", f"presets: {', '.join(exp.presets)}", "", "conditions:", conditions, "",
             "--seed S runs the seed S alone (the config's `seeds` otherwise); --set FIELD=VALUE sets any field below "
             "(VALUE as JSON, else a string; lists for tuples: --set 'seeds=[0,1,2]').", "",
             f"fields (values of the preset {shown}):"]
    for f in dataclasses.fields(cfg):
        bounds = ", ".join(f"{k} {v}" for k, v in zip(("at least", "at most"), bounds_of(f)) if v is not None)
        value = json.dumps(getattr(cfg, f.name), default=str)
        lines.append(f"  {f.name} ({f.type}{'; ' + bounds if bounds else ''}) = {value}  [{f.metadata.get('source')}]"
                     f"\n      {f.metadata.get('doc', '')}")
    return "\n".join(lines)


def parse_overrides(items) -> dict:
    """["epochs=3", "dataset=goemotions", "regimes=[\"frozen\"]"] -> {"epochs": 3, ...} (JSON, else a string;
    JSON lists become tuples)."""
    import json

    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects FIELD=VALUE, got {item!r}")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        out[key] = tuple(value) if isinstance(value, list) else value
    return out


def _restore(args) -> int:
    from .restore import restore

    if not args.folder:
        print("spherekit reproduce restore: give the card folder, e.g. benches/results/reproduce/defsent/cpu",
              file=sys.stderr)
        return 2
    try:
        written = restore(args.folder, out=args.out, log=lambda msg: print(msg, file=sys.stderr))
    except (ValueError, FileNotFoundError, PermissionError) as exc:
        print(f"spherekit reproduce restore: {exc}", file=sys.stderr)
        return 2
    print(f"restored {len(written)} finished run(s) under {args.out}")
    return 0


def _preset_times(name: str) -> dict[str, str]:
    """{preset: "6.1 min on <machine>"} of the committed cards of `name` (a source checkout; none when installed)."""
    import json
    from pathlib import Path

    from ..api.fmt import duration
    from .index import CARDS

    out = {}
    for path in sorted((Path(__file__).resolve().parents[4] / CARDS / name).glob("*/results.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        out.setdefault(results["preset"], f"{duration(results['wall_seconds'].get('total'))} on "
                                          f"{results['machine']} (committed card {path.parent.name})")
    return out


def _list(found, get) -> int:
    """Each experiment with its presets (and the measured time of its committed cards) and its conditions, one per
    line; one that cannot be loaded is named with the error (exit 1)."""
    from . import gpu_hours

    failed = 0
    for name in found:
        try:
            exp = get(name)
        except Exception as exc:  # a plugin of another folder or distribution: report it, list the rest
            print(f"{name}: cannot be loaded ({type(exc).__name__}: {exc})")
            failed = 1
            continue
        times = _preset_times(name)
        predicted = gpu_hours.predictions(name)
        if predicted and "paper" in exp.presets and "paper" not in times:
            times["paper"] = "not run here; predicted " + ", ".join(
                f"{gpu_hours.hours_text(p.hours)} on an {p.gpu} (steps timed there)" for p in predicted)
        print(f"{name}: {exp.title}\n  presets:")
        for preset in exp.presets:
            print(f"    {preset:10} {times.get(preset, 'not measured here')}")
        print("  conditions:" + (f" ({exp.condition_help})" if exp.condition_help else ""))
        for c in exp.conditions.values():
            print(f"    {c.name}: {c.description}")
    return failed


def _index(args) -> int:
    from .index import run

    changed = run(check=args.check)
    if args.check and changed:
        print(f"spherekit reproduce index --check: {', '.join(changed)} differ from the committed cards; run "
              "`spherekit reproduce index`", file=sys.stderr)
        return 1
    print(("would change: " if args.check else "updated: ") + (", ".join(changed) or "nothing"))
    return 0


def main(args) -> int:
    from ..._store import DataMissingError
    from ...training.interrupt import Interrupted
    from .. import get, names
    from .card import render, summary
    from .runner import reproduce

    if args.experiment == "list":
        return _list(names(), get)
    if args.experiment == "report":
        if not args.folder:
            print("spherekit reproduce report: give the card folder, e.g. results/reproduce/concept/cpu-small",
                  file=sys.stderr)
            return 2
        print(f"report: {render(args.folder)}")
        return 0
    if args.experiment == "restore":
        return _restore(args)
    if args.experiment == "index":
        return _index(args)
    try:
        overrides = parse_overrides(args.set)
        results = reproduce(args.experiment, args.preset, conditions=args.conditions, backbone=args.backbone,
                            data_dir=args.data_dir, out=args.out, seed=args.seed, force=args.force,
                            reevaluate=args.reevaluate, progress=not args.no_progress, overrides=overrides,
                            report_to=args.report_to)
    except (ValueError, FileNotFoundError, PermissionError, DataMissingError) as exc:
        print(f"spherekit reproduce: {exc}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt):
        print(f"spherekit reproduce: interrupted; the finished runs and the last training checkpoint are saved under "
              f"{args.out}/{args.experiment}/{args.preset}/: run the same command again to resume", file=sys.stderr)
        return 130
    if not results:  # a torchrun rank other than 0: it trained, rank 0 reports
        return 0
    print(summary(get(args.experiment), results))
    folder = f"{args.out}/{args.experiment}/{args.preset}"
    print(f"\nresult card: {folder}/report.md (results.json, plots/)")
    return 0
