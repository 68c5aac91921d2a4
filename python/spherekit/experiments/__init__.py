"""Reproductions of the papers' experiments: `spherekit reproduce <experiment> --preset P`.

    from spherekit.experiments import get, names, reproduce
    names()                                        # ["circumplex", "compositional", "concept", ...]
    results = reproduce("concept", "cpu-small")    # trains, evaluates, writes the result card

Papers are plugins discovered at first use (spherekit.experiments.api.plugin): every package here with a spec module,
and every entry point of the group "spherekit.experiments". docs/new_experiment.md says how to add one.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _found() -> dict[str, str]:
    from .harness.discovery import discover

    return dict(sorted(discover().items()))


def names() -> list[str]:
    return list(_found())


def get(name: str):
    """The experiment (plugin.Experiment) named `name`; an unknown name is an error listing the valid ones."""
    from .harness.discovery import load

    found = _found()
    if name not in found:
        raise ValueError(f"unknown experiment {name!r}; valid experiments: {', '.join(found)}")
    experiment = load(found[name])
    if experiment.name != name:
        raise ValueError(f"{found[name]} declares the name {experiment.name!r}, but it was found as {name!r}")
    return experiment


def reproduce(name: str, preset: str, **kwargs) -> dict:
    """Run an experiment's preset end to end (see spherekit.experiments.harness.runner.reproduce)."""
    from .harness.runner import reproduce as _reproduce

    return _reproduce(name, preset, **kwargs)


__all__ = ["get", "names", "reproduce"]
