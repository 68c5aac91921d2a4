"""The table of benchmark families: every family registered in the CLI, each with add_arguments / run_from_args /
main and presets on the one preset base, `spherekit bench <family> --help` for each."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import spherekit.bench
from spherekit.bench._harness import PresetBase
from spherekit.cli import BENCH_FAMILIES, bench_module, main


def _family_modules():
    """Modules of spherekit.bench that declare command-line options (a family or a bench command)."""
    out = set()
    for info in pkgutil.iter_modules(spherekit.bench.__path__):
        module = importlib.import_module(f"spherekit.bench.{info.name}")
        if hasattr(module, "add_arguments"):
            out.add(module.__name__)
    return out


def test_every_family_module_is_in_the_table():
    # the reproductions' benchmarks are the bench modules of their paper packages: subcommands of `bench reproduce`
    assert _family_modules() == {path for path, _ in BENCH_FAMILIES.values()}


def test_bench_reproduce_has_a_subcommand_per_paper_bench():
    from spherekit.bench.reproduce import benches
    from spherekit.experiments import get, names

    found = benches()
    assert "concept" in found
    assert set(found) == {n for n in names() if get(n).has_module("bench")}
    for module in found.values():
        assert hasattr(module, "add_arguments") and hasattr(module, "run_from_args")


@pytest.mark.parametrize("name", sorted(BENCH_FAMILIES))
def test_family_interface(name):
    module = bench_module(name)
    for attr in ("add_arguments", "run_from_args", "main", "FAMILY"):
        assert hasattr(module, attr), (name, attr)
    presets = getattr(module, "PRESETS", None)
    if presets is not None:
        assert presets and all(isinstance(p, PresetBase) for p in presets.values()), name


@pytest.mark.parametrize("argv", [[name] for name in sorted(BENCH_FAMILIES)] + [["reproduce", "concept"],
                                                                                  ["reproduce", "circumplex"]],
                         ids=" ".join)
def test_help_of_every_family(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: spherekit bench {' '.join(argv)}"), out[:200]


def test_preset_base_fields_are_keyword_only_after_device():
    from spherekit.bench.contrastive import PRESETS

    tiny = PRESETS["tiny"]
    assert (tiny.device, tiny.dtype, tiny.repeats, tiny.warmup, tiny.min_repeats, tiny.budget_s) == \
        ("cpu", "float32", 1, 1, 1, 5.0)
    with pytest.raises(TypeError):
        PresetBase("cpu", 10)  # the timing fields are keyword-only


def test_old_family_names_still_run(capsys):
    """`spherekit bench simmap` (the family's old name) runs `sim-map`, with a note naming the new command."""
    with pytest.raises(SystemExit) as exc:
        main(["bench", "simmap", "--help"])
    assert exc.value.code == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("usage: spherekit bench sim-map")
    assert "renamed to `spherekit bench sim-map`" in captured.err
