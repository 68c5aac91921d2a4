"""Benchmarks shipped inside the package, so the installed ``spherekit bench ...`` command works.

``_harness`` holds what every family shares (timing, peak memory, isolation in worker processes,
out-of-memory handling, the long-format CSV); one module per kernel family defines its providers,
presets and goal checks (``contrastive``); ``plot`` turns a family's CSV into PNGs. The scripts in
the repository's benches/ folder are thin wrappers around the same entry points.
"""
