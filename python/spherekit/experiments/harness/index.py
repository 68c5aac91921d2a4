"""`spherekit reproduce index`: the README's reproduction table and the card tables of docs/reproduce.md, generated
from the committed result cards (benches/results/reproduce/<experiment>/<preset>/results.json).

A generated block sits between two markers, which the hand-written text around it keeps:

    <!-- index:readme-table -->          the README's table: per experiment, its cpu-small wall time and machine
    <!-- /index:readme-table -->         and how many claims hold on each committed card
    <!-- index:main-job -->              the one statement of the main job's time (`make run`)
    <!-- index:card concept/cpu -->      in docs/reproduce.md: a card's summary table (ours next to the paper's) and
    <!-- /index:card concept/cpu -->     its claims

`spherekit reproduce index --check` writes nothing and fails when a file differs from what the cards generate (CI).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..api import fmt
from ..api.claims import FAILS, HOLDS, INCONCLUSIVE, NOT_RUN, counts, kind

CARDS = Path("benches/results/reproduce")
README, DOCS = Path("README.md"), Path("docs/reproduce.md")
MAIN_JOB = ("concept", "cpu-small")
_BLOCK = re.compile(r"(<!-- index:(?P<name>[^>]+?) -->\n)(?P<body>.*?)(<!-- /index:(?P=name) -->)", re.S)


def load_cards(root=CARDS) -> dict[tuple[str, str], dict]:
    """{(experiment, card folder): results} of every committed card, sorted."""
    out = {}
    for path in sorted(Path(root).glob("*/*/results.json")):
        out[(path.parent.parent.name, path.parent.name)] = json.loads(path.read_text(encoding="utf-8"))
    return out


def _counted(c: dict) -> str:
    parts = [f"{c[HOLDS]} hold", f"{c[FAILS]} do not"]
    return ", ".join(parts + [f"{c[v]} {v}" for v in (INCONCLUSIVE, NOT_RUN) if c[v]])


def _claim_counts(results: dict) -> str:
    """The headline of a card: its claims on the paper's conditions, then, apart, those on our ablations and probes
    and the uninformative ones (claims.kind; sanity checks are not claims)."""
    records = results.get("claims", [])
    text = _counted(counts(records))
    ours, uninformative = counts(records, "ours"), sum(counts(records, "uninformative").values())
    if any(ours.values()):
        text += f" (and on our ablations: {_counted(ours)})"
    if uninformative:
        text += f" (and {uninformative} uninformative)"
    return text


def _probe(name: str, folder: str) -> str | None:
    """Why a card is a probe of ours (Experiment.probe_presets), or None for a card of the paper's setup."""
    from .. import get

    return get(name).probe_presets.get(folder)


def _short(machine: str) -> str:
    return re.sub(r"\(R\)|\(TM\)| Processor| CPU", "", machine).replace("  ", " ").strip()


def _machine(results: dict) -> str:
    """Where a card's runs ran: the machines its runs recorded (the runner's "machines" per run), with the card's
    own (the run that wrote it) for runs that recorded none (runs before the runner kept machines); when the card
    also reuses earlier runs (its units took longer than its last run), those runs may have run elsewhere, so their
    count is named."""
    from ..api.units import unit_runs

    runs = [run for unit in results["units"].values() for run in unit_runs(unit)]
    unknown = sum(1 for run in runs if not run.get("machines"))
    names = {_short(m) for run in runs for m in run.get("machines") or ()}
    if unknown or not names:
        names.add(_short(results["machine"]))
    text = " and ".join(sorted(names))
    if unknown and _reuses_earlier_runs(results):
        text += f" (the last run's; {unknown} of {len(runs)} runs recorded no machine)"
    return text


def _link(experiment: str, folder: str, prefix: str) -> str:
    return f"[{folder}]({prefix}benches/results/reproduce/{experiment}/{folder}/report.md)"


def card_seconds(results: dict) -> float | None:
    """How long a card's runs took: the wall time of its last run, or, when that run reused units finished in
    earlier runs (a resumed or restored card), the data preparation plus every unit's recorded stages, whichever
    is larger."""
    wall = results.get("wall_seconds", {})
    stages = [v for k, v in wall.items() if "/" in k and isinstance(v, (int, float))]
    total = wall.get("total")
    if not stages:
        return total
    return max(total or 0.0, wall.get("data", 0.0) + sum(stages))


def _reuses_earlier_runs(results: dict) -> bool:
    """Whether a card's units took longer than its last run, i.e. it reuses runs finished in earlier runs."""
    last, spent = results["wall_seconds"].get("total"), card_seconds(results)
    return bool(spent and last and spent > last)


def _took(results: dict) -> str:
    """How long a card took, for its docs summary: the last run's wall time, or, when it reuses runs finished
    earlier, the time across those runs first (a last run that only re-rendered the card took seconds)."""
    last = fmt.duration(results["wall_seconds"].get("total"))
    if _reuses_earlier_runs(results):
        return f"{fmt.duration(card_seconds(results))} across the runs its units come from (its last run: {last})"
    return f"{last} of wall time"


def readme_table(cards: dict) -> str:
    from .. import get

    lines = ["| experiment | paper | `cpu-small` time (machine) | claims on each committed card |",
             "|---|---|---|---|"]
    for name in sorted({e for e, _ in cards}):
        own = {folder: r for (e, folder), r in cards.items() if e == name}
        small = own.get("cpu-small")
        time = f"{fmt.duration(card_seconds(small))} ({_machine(small)})" if small else fmt.MISSING
        paper = [f for f in own if not _probe(name, f)]
        claims = "; ".join(f"{_link(name, folder, '')}: {_claim_counts(own[folder])}" for folder in paper)
        probes = [f for f in own if f not in paper]
        if probes:
            claims += "; probes of our choices (not the paper's setup, not counted): " + ", ".join(
                f"{_link(name, f, '')} ({_probe(name, f)}): {_claim_counts(own[f])}" for f in probes)
        lines.append(f"| `{name}` | \"{get(name).title}\" | {time} | {claims} |")
    return "\n".join(lines)


def main_job(cards: dict) -> str:
    results = cards.get(MAIN_JOB)
    if results is None:
        return "(no committed card of the main job)"
    return (f"`make run` reproduces \"{results['title']}\" on its `{MAIN_JOB[1]}` preset; the committed card took "
            f"{fmt.duration(card_seconds(results))} on {_machine(results)} "
            f"({_link(*MAIN_JOB, '')}).")


def card_block(experiment_name: str, folder: str, results: dict) -> str:
    """A card's summary in the docs: where and how long it ran, ours next to the paper's per scope, the claims."""
    from .. import get
    from ..api.claims import Scope
    from ..api.printed import grid

    experiment = get(experiment_name)
    probe = experiment.probe_presets.get(folder)
    parts = [f"Card {_link(experiment_name, folder, '../')}: {len(results['units'])} units on {_machine(results)}, "
             f"{_took(results)}; claims: {_claim_counts(results)}"
             + (f"; a probe of our choices ({probe}), not the paper's setup." if probe else "."), ""]
    for scope in experiment.scopes(results):
        assert isinstance(scope, Scope)
        parts += [f"{scope.name}: ours (the paper's)", "",
                  grid(scope, list(experiment.conditions), experiment.summary_metrics, experiment.printed,
                       setting=experiment.printed_setting(scope), spread=True), ""]
        rows = [r for r in results.get("claims", []) if r["scope"] == scope.name and r["verdict"] != NOT_RUN]
        if rows:
            parts += ["| claim | measured here | verdict |", "|---|---|---|"]
            parts += [f"| {r['id']}: {_cell(r['statement'])} | {_cell(r['measured'])} | "
                      f"{_verdict_cell(r)} |" for r in rows]
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def _verdict_cell(record: dict) -> str:
    which = kind(record)
    return {"paper": record["verdict"], "ours": f"{record['verdict']} (our ablation)",
            "uninformative": "uninformative", "sanity": "sanity check"}[which]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def blocks(cards: dict) -> dict[str, str]:
    out = {"readme-table": readme_table(cards) + "\n", "main-job": main_job(cards) + "\n"}
    for (name, folder), results in cards.items():
        out[f"card {name}/{folder}"] = card_block(name, folder, results)
    return out


def fill(text: str, generated: dict[str, str], path) -> str:
    """`text` with every marked block replaced by its generated body; an unknown block name is an error."""
    def body(match):
        name = match["name"]
        if name not in generated:
            raise ValueError(f"{path}: no generated block named {name!r} (known: {', '.join(generated)})")
        return match[1] + generated[name] + match[4]

    return _BLOCK.sub(body, text)


def run(root=".", check: bool = False) -> list[str]:
    """Regenerate the blocks of README.md and docs/reproduce.md under `root`; returns the files that differ (written
    unless check)."""
    root = Path(root)
    generated = blocks(load_cards(root / CARDS))
    changed = []
    for rel in (README, DOCS):
        path = root / rel
        text = path.read_text(encoding="utf-8")
        new = fill(text, generated, rel)
        if new != text:
            changed.append(str(rel))
            if not check:
                from .card import write_text

                write_text(path, new)
    return changed


__all__ = ["blocks", "card_block", "fill", "load_cards", "main_job", "readme_table", "run"]
