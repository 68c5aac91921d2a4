"""Moved to spherekit.experiments.api.plugin (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.api.plugin', None, elsewhere={
    n: 'spherekit.experiments.harness.discovery' for n in ('discover', 'load', 'ENTRY_POINT_GROUP', 'ENVIRONMENT')
})
