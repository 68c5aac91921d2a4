"""Moved to spherekit.experiments.harness.cli (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.harness.cli', [
    'add_arguments', 'experiment_help', 'main', 'parse_overrides'
])
