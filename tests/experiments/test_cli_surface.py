"""The `spherekit reproduce` surface a user touches first: --set values are checked against the config field's type
and bounds before any work starts (one line naming the field, exit 2), `reproduce <experiment> --help` lists the
fields --set accepts, and `reproduce list` prints one condition per line with each preset's measured time (the `paper`
preset's predicted GPU time where a GPU timed its steps)."""

import pytest

import spherekit.experiments as experiments
from spherekit.cli import main

TEMPLATE = "spherekit.experiments._template.spec:EXPERIMENT"


@pytest.fixture
def template(monkeypatch):
    found = {**experiments._found(), "template": TEMPLATE}
    monkeypatch.setattr(experiments, "_found", lambda: found)
    monkeypatch.setattr("spherekit.experiments._template.run.prepare",
                        lambda *a, **k: pytest.fail("data preparation ran before the --set check"))


@pytest.mark.parametrize("value, message", [
    ("steps=abc", "config field 'steps' takes int, got 'abc'"),
    ("steps=-5", "config field 'steps' must be >= 1, got -5"),
    ("lr=-0.1", "config field 'lr' must be >= 0, got -0.1"),
    ("steps=2.5", "config field 'steps' takes int, got 2.5"),
    ("conditions=frozen", "config field 'conditions' takes tuple (a JSON list"),
    ("data_seed=true", "config field 'data_seed' takes int, got True"),
    ("no_such=1", "unknown config field(s) ['no_such']"),
])
def test_bad_set_values_fail_before_any_work(template, value, message, capsys):
    assert main(["reproduce", "template", "--preset", "tiny", "--set", value, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("spherekit reproduce: ") and message in err[0]


def test_good_set_values_pass_the_check():
    from spherekit.experiments.harness.cli import parse_overrides
    from spherekit.experiments.harness.runner import make_config

    cfg = make_config(experiments.get("concept"), "tiny", overrides=parse_overrides(
        ["lr=1", "seeds=[0, 1]", "gate_hidden=null", "eval_limit=20", "second_source=gcide"]))
    assert cfg.lr == 1 and cfg.seeds == (0, 1) and cfg.gate_hidden is None and cfg.eval_limit == 20


def test_experiment_help_lists_the_fields(capsys):
    assert main(["reproduce", "concept", "--preset", "tiny", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--seed S runs the seed S alone" in out and "fields (values of the preset tiny):" in out
    assert "steps (int; at least 0) = 3  [paper]" in out and "seeds (tuple) = [0]  [selection]" in out
    assert "B1-unified: fine-tuned, mean pooling, hard negatives in the InfoNCE denominator" in out


def test_list_prints_one_condition_per_line_and_the_measured_times(capsys):
    assert main(["reproduce", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "    B1: fine-tuned, mean pooling, hard negatives (BCE)" in lines
    concept = lines.index("concept: Principles of Concept Representation in Sentence Encoders")
    small = next(line for line in lines[concept:] if line.strip().startswith("cpu-small"))
    assert " min on " in small and "(committed card cpu-small)" in small
    assert any(line.strip() == "tiny       not measured here" for line in lines[concept:])
    paper = next(line for line in lines[concept:] if line.strip().startswith("paper"))
    assert "not run here; predicted " in paper and " h on an NVIDIA H200 (steps timed there)" in paper


@pytest.mark.parametrize("name", experiments.names())
def test_every_papers_counts_and_rates_refuse_negative_values(name):
    """Fields named like counts, sizes, step counts and learning rates (config.bounds_of) refuse -1 in every paper,
    in make_config, before any work (the CLI turns the error into one line and exit 2)."""
    import dataclasses

    from spherekit.experiments.api.config import bounds_of
    from spherekit.experiments.harness.runner import make_config

    exp = experiments.get(name)
    cfg = exp.make_config("tiny")
    checked = [f.name for f in dataclasses.fields(cfg) if bounds_of(f)[0] == 0 and f.type in ("int", "float")]
    assert checked, f"{name}: no field has the implied bounds"
    for field in checked:
        with pytest.raises(ValueError, match=f"config field '{field}' must be >= 0"):
            make_config(exp, "tiny", overrides={field: -1})
