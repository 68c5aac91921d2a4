"""Moved to spherekit.experiments.api.config (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.experiments.api.config', [
    'SOURCES', 'UNFINGERPRINTED', 'as_dict', 'bounds_of', 'check_value', 'choice', 'describe', 'fingerprint',
    'fingerprint_of', 'from_preset', 'paper', 'runtime', 'selection', 'with_overrides'
])
