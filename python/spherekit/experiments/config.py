"""Config dataclasses of the experiments: every field says where its value comes from.

A field is declared with `paper(default, doc)` when the source paper fixes the value, `choice(default,
doc)` when the paper leaves it open and the value is ours (the doc says why), or `runtime(default, doc)`
for settings that do not change results (progress bars, checkpoint interval). Presets are plain dicts
of overrides applied with `with_overrides`; the result card lists every value with its source.

    @dataclass(frozen=True)
    class MyConfig:
        lr: float = paper(2e-5, "section 4.4")
        max_seq_length: int = choice(64, "glosses are short")

    cfg = with_overrides(MyConfig(), {"lr": 5e-5})
    describe(cfg)   # [(name, value, source, doc), ...]; needs a config whose fields all have defaults
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

SOURCES = ("paper", "choice", "runtime")
# fields that never change a result: left out of the fingerprint that decides whether saved work is reusable
RUNTIME = "runtime"


def _field(default, doc: str, source: str):
    kw = {"default_factory": lambda: default} if isinstance(default, (list, dict, set)) else {"default": default}
    return dataclasses.field(metadata={"source": source, "doc": doc}, **kw)


def paper(default, doc: str):
    """A value the paper states (doc: where)."""
    return _field(default, doc, "paper")


def choice(default, doc: str):
    """A value the paper leaves open; doc: what we chose and why."""
    return _field(default, doc, "choice")


def runtime(default, doc: str):
    """A setting that does not change results (left out of the fingerprint)."""
    return _field(default, doc, RUNTIME)


def from_preset(config_cls, presets: dict[str, dict], name: str):
    """config_cls(**presets[name]); an unknown name is an error listing the valid presets."""
    if name not in presets:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(presets)}")
    return config_cls(**presets[name])


def with_overrides(cfg, overrides: dict[str, Any]):
    """A copy of the dataclass `cfg` with `overrides` applied; an unknown key is an error listing the fields."""
    names = {f.name for f in dataclasses.fields(cfg)}
    bad = sorted(set(overrides) - names)
    if bad:
        raise ValueError(f"unknown config field(s) {bad}; the fields of {type(cfg).__name__} are {sorted(names)}")
    return dataclasses.replace(cfg, **overrides)


def as_dict(cfg) -> dict[str, Any]:
    """JSON-able {field: value} (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), default=str))


def describe(cfg) -> list[tuple[str, Any, str, str]]:
    """[(field, value, source, doc)] for the card's configuration table. A paper value that a preset or
    the command line changed has the source "departs from the paper (paper: <value>)"."""
    values, defaults = as_dict(cfg), as_dict(type(cfg)())
    out = []
    for f in dataclasses.fields(cfg):
        source = f.metadata.get("source", "choice")
        if source == "paper" and values[f.name] != defaults[f.name]:
            source = f"departs from the paper (paper: {json.dumps(defaults[f.name])})"
        out.append((f.name, values[f.name], source, f.metadata.get("doc", "")))
    return out


def fingerprint(cfg, exclude=(), **extra) -> str:
    """A short hash of every result-changing field (runtime fields and `exclude` left out) plus `extra`."""
    values = as_dict(cfg)
    kept = {f.name: values[f.name] for f in dataclasses.fields(cfg)
            if f.metadata.get("source") != RUNTIME and f.name not in exclude}
    kept.update(extra)
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]
