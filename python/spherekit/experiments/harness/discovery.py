"""How papers are found: every package under spherekit.experiments whose name does not start with "_" and that has
a spec module; every entry of the environment variable SPHEREKIT_EXPERIMENTS ("name=module:attribute", several
separated by commas: a paper developed in another folder on sys.path); and every entry point of the group
"spherekit.experiments" (another distribution's "<module>:<attribute>"), the attribute being an Experiment
(spherekit.experiments.api.plugin)."""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

ENTRY_POINT_GROUP, ENVIRONMENT = "spherekit.experiments", "SPHEREKIT_EXPERIMENTS"


def _local_papers() -> dict[str, str]:
    """The packages here with a spec module (found on disk: nothing is imported until a paper is used)."""
    from .. import __name__ as package
    from .. import __path__ as here

    out = {}
    for info in pkgutil.iter_modules(here):
        folder = Path(info.module_finder.path) / info.name
        if info.ispkg and not info.name.startswith("_") and (folder / "spec.py").is_file():
            out[info.name] = f"{package}.{info.name}.spec:EXPERIMENT"
    return out


def _entry_points() -> dict[str, str]:
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _environment() -> dict[str, str]:
    out = {}
    for item in filter(None, (x.strip() for x in os.environ.get(ENVIRONMENT, "").split(","))):
        name, sep, target = item.partition("=")
        if not sep or ":" not in target:
            raise ValueError(f"{ENVIRONMENT}: expected name=module:attribute, got {item!r}")
        out[name.strip()] = target.strip()
    return out


def discover() -> dict[str, str]:
    """{experiment name: "module:attribute"} of every paper found (this package's first, then the environment's,
    then the entry points')."""
    found = _local_papers()
    for name, target in {**_environment(), **_entry_points()}.items():
        found.setdefault(name, target)
    return found


def load(target: str):
    """The Experiment at "module:attribute"."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr or "EXPERIMENT")


__all__ = ["ENTRY_POINT_GROUP", "ENVIRONMENT", "discover", "load"]
