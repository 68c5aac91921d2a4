"""One module per section of the chapter; each exposes run(ctx) -> {"metrics", "details"} (ctx: the run's
spherekit.experiments.harness.context.UnitContext; the section's seed is ctx.seed)."""

from __future__ import annotations

import importlib


def section(name: str):
    from ..spec import SECTIONS

    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; valid sections: {', '.join(SECTIONS)}")
    return importlib.import_module(f"{__name__}.{name}")
