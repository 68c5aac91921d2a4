"""What a benchmark prints and writes can be trusted: outputs go to the untracked results/bench by default
(committing measurements is a deliberate `--out benches/results`), and every table warns on few repeats, wide spreads,
a busy machine and rows whose math differs."""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
from pathlib import Path

import pytest

from spherekit.cli import BENCH_FAMILIES

ROOT = Path(__file__).resolve().parents[2]
PAPER_BENCHES = [f"spherekit.experiments.{p}.bench" for p in ("concept", "circumplex", "compositional", "defsent")]


@pytest.mark.parametrize("module", [m for m, _ in BENCH_FAMILIES.values()] + PAPER_BENCHES)
def test_default_out_is_untracked(module):
    mod = importlib.import_module(module)
    defaults = []
    if hasattr(mod, "add_arguments"):
        parser = argparse.ArgumentParser()
        mod.add_arguments(parser)
        defaults += [a.default for a in parser._actions if "--out" in a.option_strings]
    if hasattr(mod, "run") and "out" in inspect.signature(mod.run).parameters:
        defaults.append(inspect.signature(mod.run).parameters["out"].default)
    assert defaults or module.endswith("bench.reproduce"), module  # reproduce dispatches to the papers' modules
    for default in defaults:
        assert str(default) == "results/bench", (module, default)
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/bench/x.csv"], cwd=ROOT)
    assert ignored.returncode == 0  # .gitignore covers it


def test_trust_notes_warn_on_few_repeats_wide_spread_and_load():
    from spherekit.bench.results import timing_table, trust_notes

    steady = dict(status="ok", repeats="20", median_ms="10", p20_ms="9.8", p80_ms="10.2", note="")
    assert trust_notes([steady]) == []
    few = dict(steady, repeats="1")
    wide = dict(steady, p20_ms="5", p80_ms="15")
    busy = dict(steady, note="busy machine: load 5.1 on 2 cores")
    notes = trust_notes([steady, few, wide, busy])
    assert len(notes) == 3
    assert "1 of 4 cells timed fewer than 5 times (as few as 1)" in notes[0]
    assert "1 of 4 cells have a wide spread" in notes[1] and "load 5.1 on 2 cores" in notes[2]
    table = timing_table("provider", [steady, few], lambda r: f"{'x':<8}")
    assert "ok (1 repeat)" in table and table.endswith(trust_notes([steady, few])[0])


def test_contrastive_table_names_the_like_for_like_rows():
    from spherekit.bench.contrastive import format_table

    row = dict(status="ok", repeats="20", median_ms="1", p20_ms="1", p80_ms="1", peak_extra_mib="0", note="",
               d="8", mode="fwd+bwd", B="4", dtype="float32")
    rows = [dict(row, provider=p, k=k, N=n) for p, k, n in
            (("spherekit-cpu", "1", "4"), ("st-mnrl", "1", "8"), ("spherekit-cpu", "0", "4"))]
    assert "Like-for-like rows" in format_table(rows)
    assert "Like-for-like" not in format_table([r for r in rows if r["k"] == "0"])
