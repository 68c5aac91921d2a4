"""Names that moved to another module stay importable from the old one: the old module's __getattr__ hands out
the public names from the new module, each access emitting a DeprecationWarning that names the new place
(spherekit.losses for the verifier trainer; spherekit.evaluation.{stress, nearmiss, emotion} for the suites; the
experiment core's flat modules for experiments.api / experiments.harness / spherekit.training)."""

from __future__ import annotations

import importlib
import warnings


def moved_module(old: str, new: str, names, elsewhere: dict[str, str] | None = None):
    """-> the module __getattr__ of `old`: the public `names` come from module `new` (names None: every public name
    `new` has; those in `elsewhere`, {name: module}, from their own module), with a DeprecationWarning."""
    homes = {**{n: new for n in names or ()}, **(elsewhere or {})}

    def __getattr__(name: str):
        if names is None and name not in homes and not name.startswith("_") and \
                hasattr(importlib.import_module(new), name):  # every public name of `new`
            homes[name] = new
        if name in homes:
            warnings.warn(f"{old}.{name} moved to {homes[name]}.{name}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
