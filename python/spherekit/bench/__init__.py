"""Benchmarks shipped inside the package, so the installed ``spherekit bench ...`` command works.

What every family shares: ``_harness`` (timing, isolation in worker processes, out-of-memory
handling), ``memory`` (peak extra memory), ``results`` (the long-format CSV) and ``machine`` (machine
and version facts, the default memory limit). One module per kernel family defines its providers,
presets and goal checks (``contrastive``); ``plot`` turns a family's CSV into PNGs. The scripts in
the repository's benches/ folder are thin wrappers around the same entry points.
"""
