"""Moved to spherekit.experiments.api.learning (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.api.learning', [
    'FALL', 'PROBE_ROWS', 'RULE', 'WINDOW', 'curve_of', 'fell', 'judge', 'judge_training', 'learned',
    'unless_learned'
])
