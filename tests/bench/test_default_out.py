"""Benchmarks never write into tracked files by default: every family's --out and run() default to results/bench
(untracked); committing measurements is a deliberate `--out benches/results`."""

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
