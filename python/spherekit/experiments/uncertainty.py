"""Moved to spherekit.experiments.api.uncertainty (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.api.uncertainty', None)
