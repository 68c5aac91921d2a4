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
import re
from typing import Any

SOURCES = ("paper", "choice", "runtime", "selection")
RUNTIME, SELECTION = "runtime", "selection"
# fields that never change a unit's result: left out of the fingerprint that decides whether saved work is reusable
UNFINGERPRINTED = (RUNTIME, SELECTION)
_NO_PAPER_VALUE = object()


def _field(default, doc: str, source: str, at_least=None, at_most=None, **metadata):
    kw = {"default_factory": lambda: default} if isinstance(default, (list, dict, set)) else {"default": default}
    bounds = {k: v for k, v in (("at_least", at_least), ("at_most", at_most)) if v is not None}
    return dataclasses.field(metadata={"source": source, "doc": doc, **bounds, **metadata}, **kw)


def paper(default, doc: str, *, means: str | None = None, **bounds):
    """A value the paper states (doc: where). bounds: at_least / at_most, checked on every override. means: what a
    sentinel default stands for (0 = "the released code's step table"), quoted where a card marks a departure."""
    return _field(default, doc, "paper", **bounds, **({"means": means} if means else {}))


def choice(default, doc: str, **bounds):
    """A value the paper leaves open; doc: what we chose and why."""
    return _field(default, doc, "choice", **bounds)


def runtime(default, doc: str, **bounds):
    """A setting that does not change results (left out of the fingerprint)."""
    return _field(default, doc, RUNTIME, **bounds)


def selection(default, doc: str, *, paper=_NO_PAPER_VALUE, **bounds):
    """A field that only chooses which units run (never in a fingerprint). paper: the paper's own value where it
    states one (the card marks another value as a departure)."""
    extra = {} if paper is _NO_PAPER_VALUE else {"paper": paper}
    return _field(default, doc, SELECTION, **bounds, **extra)


# A numeric field named like a count, a size, a step count or a learning rate is never negative, unless it declares
# its own bounds (at_least / at_most): --set steps=-5 fails before any work (bounds_of).
_NON_NEGATIVE = re.compile(r"n_\w+|\w*steps|epochs|\w*batch\w*|lr|\w+_lr|max_\w+|\w+_per_\w+|\w*size|\w*limit")


def bounds_of(f: dataclasses.Field) -> tuple[float | None, float | None]:
    """(at_least, at_most) of a config field: its declared bounds, else 0 and None for the names _NON_NEGATIVE
    matches, else (None, None)."""
    lo, hi = f.metadata.get("at_least"), f.metadata.get("at_most")
    if lo is None and hi is None and _NON_NEGATIVE.fullmatch(f.name):
        lo = 0
    return lo, hi


_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple, "dict": dict, "None": type(None)}


def check_value(f: dataclasses.Field, value):
    """`value` for the config field `f`, checked against its annotation (int, float, bool, str, tuple, dict and
    unions of them with None; an int is a float too, a list becomes a tuple) and its bounds; a ValueError names the
    field, what it takes and what it got."""
    annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    parts = [p.strip() for p in annotation.split("|")]
    if all(p in _TYPES for p in parts):
        allowed = tuple(_TYPES[p] for p in parts) + ((int,) if "float" in parts else ())
        if isinstance(value, list) and tuple in allowed:
            value = tuple(value)
        if isinstance(value, bool) and bool not in allowed or not isinstance(value, allowed):
            hint = " (a JSON list, e.g. --set 'NAME=[1, 2]')" if tuple in allowed else ""
            raise ValueError(f"config field {f.name!r} takes {annotation}{hint}, got {value!r}")
    lo, hi = bounds_of(f)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (
            lo is not None and value < lo or hi is not None and value > hi):
        span = " and ".join(x for x in (f">= {lo}" if lo is not None else "", f"<= {hi}" if hi is not None else "")
                            if x)
        raise ValueError(f"config field {f.name!r} must be {span}, got {value!r}")
    return value


def from_preset(config_cls, presets: dict[str, dict], name: str):
    """config_cls(**presets[name]); an unknown name is an error listing the valid presets."""
    if name not in presets:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(presets)}")
    return config_cls(**presets[name])


def with_overrides(cfg, overrides: dict[str, Any]):
    """A copy of the dataclass `cfg` with `overrides` applied, each checked (check_value); an unknown key is an
    error listing the fields."""
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    bad = sorted(set(overrides) - set(fields))
    if bad:
        raise ValueError(f"unknown config field(s) {bad}; the fields of {type(cfg).__name__} are {sorted(fields)}")
    return dataclasses.replace(cfg, **{k: check_value(fields[k], v) for k, v in overrides.items()})


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
            means = f", {f.metadata['means']}" if "means" in f.metadata else ""
            source = f"departs from the paper (paper: {json.dumps(defaults[f.name])}{means})"
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
