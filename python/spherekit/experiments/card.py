"""Moved to spherekit.experiments.harness.card (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.harness.card', None, elsewhere={
    n: 'spherekit.experiments.api.files' for n in ('cached_json', 'write_json', 'write_text')
})
