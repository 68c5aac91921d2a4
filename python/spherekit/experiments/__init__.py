"""Reproductions of the source papers' experiments: `spherekit reproduce <experiment> --preset P`.

    from spherekit.experiments import get, names, reproduce
    names()                                    # ["concept", "circumplex"]
    results = reproduce("concept", "cpu-small")   # trains, evaluates, writes the result card

Registry: experiment name -> module exposing EXPERIMENT (see spherekit.experiments.base). Modules are
imported on first use.
"""

from __future__ import annotations

import importlib

REGISTRY: dict[str, str] = {
    "concept": "spherekit.experiments.concept",
    "circumplex": "spherekit.experiments.circumplex",
    "textbook": "spherekit.experiments.textbook",
    "defsent": "spherekit.experiments.defsent",
    "compositional": "spherekit.experiments.compositional",
}


def names() -> list[str]:
    return list(REGISTRY)


def get(name: str):
    """The experiment object registered as `name`; an unknown name is an error listing the valid ones."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; valid experiments: {', '.join(REGISTRY)}")
    return importlib.import_module(REGISTRY[name]).EXPERIMENT


def reproduce(name: str, preset: str, **kwargs) -> dict:
    """Run an experiment's preset end to end (see spherekit.experiments.runner.reproduce)."""
    from .runner import reproduce as _reproduce

    return _reproduce(name, preset, **kwargs)


__all__ = ["REGISTRY", "get", "names", "reproduce"]
