"""Moved to spherekit.experiments.harness.runner (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.harness.runner', [
    'DEFAULT_OUT', 'NO_SEED', 'RunStore', 'make_config', 'plan', 'record_finished', 'reproduce', 'run_dir',
    'seeds_of', 'shown_config'
])
