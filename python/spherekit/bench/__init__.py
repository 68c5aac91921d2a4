"""Benchmarks shipped inside the package, so the installed ``spherekit bench ...`` command works.

What every family shares: ``_harness`` (the preset base ``PresetBase``, exported here with ``comma_list`` and
``quantile`` for the papers' bench modules, timing, isolation in worker
processes, out-of-memory handling, the shared command-line options), ``memory`` (peak extra memory),
``results`` (the long-format CSV) and ``machine`` (machine and version facts, the default memory limit).
One module per family (``contrastive``, ``ngpt``, ``sim_map``, ``verifier_throughput``, ``reproduce``)
defines its providers, presets and goal checks and exposes ``add_arguments(parser)``,
``run_from_args(args)`` and ``main(argv)``; ``spherekit.cli.BENCH_FAMILIES`` maps each command name to its
module. ``plot`` turns a family's CSV into PNGs. The scripts in the repository's benches/ folder are thin
wrappers around the same entry points.
"""

from ._harness import PresetBase, comma_list, quantile  # what the papers' bench modules build on

__all__ = ["PresetBase", "comma_list", "quantile"]
