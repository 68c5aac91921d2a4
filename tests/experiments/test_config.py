"""Config fields carry their source; presets and overrides; the fingerprint ignores runtime and selection fields."""

from dataclasses import dataclass

import pytest

from spherekit.experiments.config import as_dict, choice, describe, fingerprint, paper, runtime, with_overrides


@dataclass(frozen=True)
class Cfg:
    lr: float = paper(2e-5, "section 4")
    width: int = choice(64, "glosses are short")
    bar: bool = runtime(True, "progress")
    picks: tuple = choice(("a",), "which units")


def test_describe_marks_sources_and_departures():
    rows = {name: (value, source, doc) for name, value, source, doc in describe(with_overrides(Cfg(), {"lr": 1e-3}))}
    assert rows["lr"][1] == "departs from the paper (paper: 2e-05)" and rows["lr"][0] == 1e-3
    assert rows["width"] == (64, "choice", "glosses are short") and rows["bar"][1] == "runtime"
    assert describe(Cfg())[0][2] == "paper"
    assert as_dict(Cfg())["picks"] == ["a"]


def test_overrides_name_the_fields():
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['depth'\]; the fields of Cfg are"):
        with_overrides(Cfg(), {"depth": 3})


def test_fingerprint():
    base = fingerprint(Cfg())
    assert fingerprint(with_overrides(Cfg(), {"bar": False})) == base            # runtime
    assert fingerprint(with_overrides(Cfg(), {"width": 32})) != base
    assert fingerprint(with_overrides(Cfg(), {"picks": ("b",)}), exclude=("picks",)) == fingerprint(Cfg(), exclude=("picks",))
    assert fingerprint(Cfg(), unit="x") != fingerprint(Cfg(), unit="y")
