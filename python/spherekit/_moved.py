"""Names that moved to another module stay importable from the old one: the old module's __getattr__ hands out
the public names from the new module, each access emitting a DeprecationWarning that names the new place
(spherekit.losses for the verifier trainer; spherekit.evaluation.{stress, nearmiss, emotion} for the suites)."""

from __future__ import annotations

import importlib
import warnings


def moved_module(old: str, new: str, names):
    """-> the module __getattr__ of `old`: the public `names` come from module `new`, with a DeprecationWarning."""
    names = frozenset(names)

    def __getattr__(name: str):
        if name in names:
            warnings.warn(f"{old}.{name} moved to {new}.{name}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(new), name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
