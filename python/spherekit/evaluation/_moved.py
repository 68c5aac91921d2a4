"""Old import paths of modules that moved: the old module keeps its public names importable, each access emitting
a DeprecationWarning that names the new module (as spherekit.losses does for names that moved out of it)."""

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
