"""The files a paper writes itself: JSON caches keyed by their settings, atomic JSON, and the name of a unit's
checkpoint folder (the harness keeps a training's checkpoints there, UnitContext.checkpoint_dir)."""

from __future__ import annotations

import json
from pathlib import Path

from ..._atomic import atomic_write_json, atomic_write_text

CHECKPOINT = "checkpoint"


def write_text(path, text: str) -> Path:
    """Write `text` to `path` atomically (spherekit._atomic)."""
    return atomic_write_text(path, text)


def write_json(path, payload) -> Path:
    """`payload` as JSON, atomically (spherekit._atomic.atomic_write_json: a list of scalars on one line)."""
    return atomic_write_json(path, payload)


def cached_json(path, key: str, build):
    """The JSON data saved at `path` under `key`; when the file is missing or was built under another key (other
    settings), build() is called and its result saved there (atomically) with the key."""
    path = Path(path)
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["data"]
    data = build()
    write_json(path, {"key": key, "data": data})
    return data


__all__ = ["CHECKPOINT", "cached_json", "write_json", "write_text"]
