"""Moved to spherekit.training.trainer (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.training.trainer', None)
