"""One module per section of the card; each exposes run(cfg, backbone, data, unit_dir, progress) -> {"metrics",
"details"}."""

from __future__ import annotations

import importlib


def section(name: str):
    from ..config import SECTIONS

    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; valid sections: {', '.join(SECTIONS)}")
    return importlib.import_module(f"{__name__}.{name}")
