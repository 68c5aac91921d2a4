"""`spherekit reproduce textbook`: the data of a preset and one run of a section (what the runner calls).

A run is (backbone, section, seed): the section's module (sections/) loads the backbone itself, measures, and
returns its metrics and details; its seconds are the stage "run"."""

from __future__ import annotations


def prepare(cfg, root, progress: bool):
    from .data import load_data

    return load_data(cfg, root)


def run_unit(ctx) -> dict:
    from .sections import section

    with ctx.timed("run"):
        return section(ctx.condition.name).run(ctx)
