"""Config fields carry their source; presets and overrides; the fingerprint ignores runtime and selection fields."""

from dataclasses import dataclass

import pytest

from spherekit.experiments.api.config import (as_dict, choice, describe, fingerprint, fingerprint_of, paper, runtime,
                                          selection, with_overrides)


@dataclass(frozen=True)
class Cfg:
    lr: float = paper(2e-5, "section 4")
    width: int = choice(64, "glosses are short")
    bar: bool = runtime(True, "progress")
    picks: tuple = selection(("a",), "which units")
    seeds: tuple = selection((0,), "seeds", paper=(0, 1, 2))
    steps: int = paper(0, "0: the code's table", means="the released code's step table")


def test_describe_marks_sources_and_departures():
    rows = {name: (value, source, doc) for name, value, source, doc in describe(with_overrides(Cfg(), {"lr": 1e-3}))}
    assert rows["lr"][1] == "departs from the paper (paper: 2e-05)" and rows["lr"][0] == 1e-3
    assert rows["width"] == (64, "choice", "glosses are short") and rows["bar"][1] == "runtime"
    assert describe(Cfg())[0][2] == "paper"
    assert as_dict(Cfg())["picks"] == ["a"] and rows["picks"][1] == "selection"
    assert rows["seeds"][1] == "selection; departs from the paper (paper: [0, 1, 2])"
    assert dict((n, s) for n, _, s, _ in describe(with_overrides(Cfg(), {"seeds": (0, 1, 2)})))["seeds"] == "selection"


def test_a_sentinel_paper_value_says_what_it_means_where_it_is_departed_from():
    rows = {name: source for name, _, source, _ in describe(with_overrides(Cfg(), {"steps": 150}))}
    assert rows["steps"] == "departs from the paper (paper: 0, the released code's step table)"
    assert dict((n, s) for n, _, s, _ in describe(Cfg()))["steps"] == "paper"


def test_overrides_name_the_fields():
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['depth'\]; the fields of Cfg are"):
        with_overrides(Cfg(), {"depth": 3})


def test_fingerprint():
    base = fingerprint(Cfg())
    assert fingerprint(with_overrides(Cfg(), {"bar": False})) == base            # runtime
    assert fingerprint(with_overrides(Cfg(), {"width": 32})) != base
    assert fingerprint(with_overrides(Cfg(), {"picks": ("b",), "seeds": (5,)})) == base  # selection, by construction
    assert fingerprint_of(Cfg(), ("width",)) == fingerprint_of(with_overrides(Cfg(), {"lr": 1.0}), ("width",))
    assert fingerprint_of(Cfg(), ("width",)) != fingerprint_of(with_overrides(Cfg(), {"width": 1}), ("width",))
    assert fingerprint(Cfg(), unit="x") != fingerprint(Cfg(), unit="y")


def test_a_card_is_described_again_by_todays_spec_with_the_runs_values():
    from types import SimpleNamespace

    from spherekit.experiments.harness.card import redescribe

    run_cfg = with_overrides(Cfg(), {"steps": 150, "lr": 1e-3})
    stored = [{"field": f, "value": v, "source": s, "doc": d} for f, v, s, d in describe(run_cfg)]
    stored = [dict(r, doc="an old doc", source="old") for r in stored]
    stored.append({"field": "gone", "value": 3, "source": "choice", "doc": "a field the spec no longer has"})
    config = {**as_dict(run_cfg), "gone": 3}
    config.pop("width")  # a field added since the run: not listed
    stored = [r for r in stored if r["field"] != "width"]
    rows = {r["field"]: r for r in redescribe(SimpleNamespace(config_class=Cfg),
                                              {"config": config, "config_sources": stored})["config_sources"]}
    assert rows["steps"]["source"] == "departs from the paper (paper: 0, the released code's step table)"
    assert rows["steps"]["value"] == 150 and rows["lr"]["value"] == 1e-3 and rows["lr"]["doc"] == "section 4"
    assert rows["gone"]["doc"] == "a field the spec no longer has" and "width" not in rows
    bad = {"config": {**config, "steps": "many"}, "config_sources": stored}  # a value today's spec refuses
    assert redescribe(SimpleNamespace(config_class=Cfg), bad)["config_sources"] == stored
