"""Config dataclasses of the experiments: every field says where its value comes from.

A field is declared with `paper(default, doc)` when the source paper fixes the value, `choice(default,
doc)` when the paper leaves it open and the value is ours (the doc says why), `runtime(default, doc)`
for settings that do not change results (progress bars, checkpoint interval), or `selection(default,
doc)` for the fields that only choose which units run (backbones, conditions, seeds, a paper's own axes
such as verifiers): a unit's own backbone, condition and seed enter its fingerprint, a selection field
never does, so narrowing a selection reuses every finished unit. Presets are plain dicts of overrides
applied with `with_overrides`; the result card lists every value with its source.

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

SOURCES = ("paper", "choice", "runtime", "selection")
RUNTIME, SELECTION = "runtime", "selection"
# fields that never change a unit's result: left out of the fingerprint that decides whether saved work is reusable
UNFINGERPRINTED = (RUNTIME, SELECTION)
_NO_PAPER_VALUE = object()


def _field(default, doc: str, source: str, **metadata):
    kw = {"default_factory": lambda: default} if isinstance(default, (list, dict, set)) else {"default": default}
    return dataclasses.field(metadata={"source": source, "doc": doc, **metadata}, **kw)


def paper(default, doc: str):
    """A value the paper states (doc: where)."""
    return _field(default, doc, "paper")


def choice(default, doc: str):
    """A value the paper leaves open; doc: what we chose and why."""
    return _field(default, doc, "choice")


def runtime(default, doc: str):
    """A setting that does not change results (left out of the fingerprint)."""
    return _field(default, doc, RUNTIME)


def selection(default, doc: str, *, paper=_NO_PAPER_VALUE):
    """A field that only chooses which units run (never in a fingerprint). paper: the paper's own value where it
    states one (the card marks another value as a departure)."""
    extra = {} if paper is _NO_PAPER_VALUE else {"paper": paper}
    return _field(default, doc, SELECTION, **extra)


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
        elif source == SELECTION and "paper" in f.metadata:
            paper_value = json.loads(json.dumps(f.metadata["paper"], default=str))
            if values[f.name] != paper_value:
                source = f"selection; departs from the paper (paper: {json.dumps(paper_value)})"
        out.append((f.name, values[f.name], source, f.metadata.get("doc", "")))
    return out


def fingerprint(cfg, **extra) -> str:
    """A short hash of every result-changing field (runtime and selection fields left out) plus `extra`."""
    values = as_dict(cfg)
    kept = {f.name: values[f.name] for f in dataclasses.fields(cfg)
            if f.metadata.get("source") not in UNFINGERPRINTED}
    kept.update(extra)
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fingerprint_of(cfg, names) -> str:
    """A short hash of the named fields only (e.g. the fields a paper's shared data depends on)."""
    values = as_dict(cfg)
    kept = json.dumps({n: values[n] for n in names}, sort_keys=True, default=str)
    return hashlib.sha256(kept.encode()).hexdigest()[:16]
