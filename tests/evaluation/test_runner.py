"""`spherekit eval` end to end: the tiny offline BERT on a tiny synthetic split, JSON + plots, resumption."""

import json
from collections import namedtuple

import pytest

from spherekit.evaluation import runner
from spherekit.evaluation.suites import suite_names

Split = namedtuple("Split", "train dev test")
PAIRS = [("cup", "a small open container for drinking", "cup.n.01", "n"),
         ("dirty", "not clean", "dirty.a.01", "a"), ("filthy", "not clean", "dirty.a.01", "a"),
         ("mammal", "a warm blooded vertebrate that feeds its young with milk", "mammal.n.01", "n"),
         ("inflation", "a sustained increase in the general price level", "inflation.n.01", "n"),
         ("revitalize", "give new life or vigor to", "revitalize.v.01", "v"),
         ("death place", "where someone drew last breath", "dp.n.01", "n"),
         ("joy", "feel happy", "joy.n.01", "n")]
SPLIT = Split([], [], [dict(term=t, definition=d, synset_id=s, pos=p) for t, d, s, p in PAIRS])
SUITES = "concept,geometry,layerwise"


def test_run_eval_writes_json_plots_and_resumes(tiny_model, tmp_path, monkeypatch):
    out = tmp_path / "eval"
    res = runner.run_eval(tiny_model, suite=SUITES, split=SPLIT, out=out, progress=False, model_name="tiny")
    assert set(res) == {"concept", "geometry", "layerwise"} and not any("error" in r for r in res.values())
    saved = json.loads((out / "concept.custom.json").read_text())
    assert saved["metrics"] == res["concept"]["metrics"] and saved["run_config"]["model"] == "tiny"
    assert saved["evaluator_config"]["n_pairs"] == len(PAIRS)
    assert 0.0 <= saved["metrics"]["MRR (term to definition)"] <= 1.0
    for suite in ("concept", "geometry", "layerwise"):
        assert res[suite]["plots"] and all((p.endswith(".png") and open(p, "rb").read(4) == b"\x89PNG") for p in res[suite]["plots"])
    geo = res["geometry"]["metrics"]
    assert set(geo) == {"anisotropy", "effective rank"} and 1.0 <= geo["effective rank"] <= 32
    assert res["layerwise"]["metrics"]["MRR (layer 1)"] == pytest.approx(res["concept"]["metrics"]["MRR (term to definition)"])

    # resumption: nothing is recomputed (the suites are not even imported) when the config matches
    monkeypatch.setattr(runner, "load_suite", lambda name: (_ for _ in ()).throw(AssertionError("recomputed " + name)))
    again = runner.run_eval(tiny_model, suite=SUITES, split=SPLIT, out=out, progress=False, model_name="tiny")
    assert all(r["skipped"] for r in again.values())
    assert again["concept"]["metrics"] == res["concept"]["metrics"]
    # a different configuration (limit) or force recomputes -> here: the patched loader fails loudly
    other = runner.run_eval(tiny_model, suite="concept", split=SPLIT, out=out, progress=False, model_name="tiny", limit=3)
    assert "recomputed concept" in other["concept"]["error"]
    forced = runner.run_eval(tiny_model, suite="geometry", split=SPLIT, out=out, progress=False, model_name="tiny", force=True)
    assert "recomputed geometry" in forced["geometry"]["error"]


def test_limit_changes_the_evaluated_set(tiny_model, tmp_path):
    res = runner.run_eval(tiny_model, suite="concept", split=SPLIT, out=tmp_path, progress=False, limit=3, plots=False)
    cfg = json.loads((tmp_path / "concept.custom.json").read_text())
    assert cfg["evaluator_config"]["n_pairs"] == 3 and cfg["run_config"]["limit"] == 3 and cfg["plots"] == []
    assert set(res["concept"]["metrics"]) >= {"R@10 (term to definition)", "pair ROC-AUC (random negative)"}


def test_missing_suite_is_reported_and_others_run(tiny_model, tmp_path, monkeypatch):
    import importlib

    real = importlib.import_module

    def fake_import(name, *a, **k):
        if name == "spherekit.evaluation.evaluators.stress":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    res = runner.run_eval(tiny_model, suite="stress,geometry", split=SPLIT, out=tmp_path, progress=False, plots=False)
    assert "is not available" in res["stress"]["error"] and "metrics" in res["geometry"]
    table = runner.format_table(res)
    assert "effective rank" in table and "stress" in table and "error" in table


def test_cli_eval(tiny_model_path, tmp_path, monkeypatch, capsys):
    from spherekit.cli import main

    seen = {}

    def fake_split(kind, seed):
        seen["args"] = (kind, seed)
        return SPLIT

    monkeypatch.setattr(runner, "_load_split", fake_split)
    out = tmp_path / "cli"
    rc = main(["eval", str(tiny_model_path), "--suite", "concept,geometry", "--split", "head-holdout", "--out", str(out),
               "--limit", "5", "--seed", "2", "--no-progress", "--device", "cpu"])
    text = capsys.readouterr().out
    assert rc == 0 and seen["args"] == ("head-holdout", 2)
    assert "R@10 (term to definition)" in text and "anisotropy" in text and "effective rank" in text
    saved = json.loads((out / "concept.head-holdout.json").read_text())
    assert saved["split"] == "head-holdout" and saved["run_config"]["seed"] == 2 and saved["evaluator_config"]["n_pairs"] == 5
    rc = main(["eval", str(tiny_model_path), "--suite", "concept", "--split", "head-holdout", "--out", str(out),
               "--limit", "5", "--seed", "2", "--no-progress"])
    assert rc == 0 and "reused saved results for: concept" in capsys.readouterr().out


def test_suite_names_and_helpers(tmp_path):
    assert suite_names("all") == ["concept", "geometry", "layerwise", "stress", "nearmiss", "emotion"]
    assert suite_names("geometry, concept") == ["geometry", "concept"]
    with pytest.raises(ValueError, match="suite must be"):
        suite_names("concept,bogus")
    assert runner.model_slug("results/train/B1/") == "B1" and runner.model_slug("all-mpnet-base-v2") == "all-mpnet-base-v2"
    p = runner.write_json_atomic(tmp_path / "x" / "a.json", {"a": 1})
    assert json.loads(p.read_text()) == {"a": 1} and [f.name for f in p.parent.iterdir()] == ["a.json"]
    with pytest.raises(ValueError, match="split must be"):
        runner._load_split("out-of-domain", 0)
    with pytest.raises(ValueError, match="limit"):
        runner.run_eval("x", suite="concept", split=SPLIT, out=tmp_path, limit=0)


def test_real_wordnet_split_through_the_cli(tiny_model_path, tmp_path, capsys):
    """The documented path: make_split on the installed WordNet, then the concept suite on a few test pairs."""
    from spherekit.cli import main
    from spherekit.data import DataMissingError

    pytest.importorskip("spherekit.data.splits")
    try:
        from spherekit.data.wordnet import load_wordnet

        load_wordnet()
    except DataMissingError as exc:
        pytest.skip(f"WordNet is not installed here: {exc}")
    out = tmp_path / "wn"
    rc = main(["eval", str(tiny_model_path), "--suite", "concept", "--split", "in-domain", "--out", str(out),
               "--limit", "20", "--no-progress", "--no-plots"])
    assert rc == 0, capsys.readouterr().out
    saved = json.loads((out / "concept.in-domain.json").read_text())
    assert saved["evaluator_config"]["n_pairs"] == 20
    assert all(0.0 <= v <= 1.0 for v in saved["metrics"].values())


@pytest.mark.parametrize("argv,arg", [
    (["--suite", "nosuchsuite"], "--suite"), (["--suite", "concept,bogus"], "--suite"),
    (["--limit", "0"], "--limit"), (["--limit", "-3"], "--limit"), (["--limit", "ten"], "--limit"),
])
def test_cli_eval_bad_arguments_exit_2_with_one_line(argv, arg, capsys):
    """Argument errors are argparse's: exit status 2, one line naming the argument, no traceback."""
    from spherekit.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["eval", "all-MiniLM-L6-v2", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert f"argument {arg}" in last and "Traceback" not in err


def test_cli_eval_unwritable_out_fails_before_any_work(tmp_path, monkeypatch, capsys):
    from spherekit.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    called = []
    monkeypatch.setattr(runner, "_load_model", lambda *a, **k: called.append(a))
    rc = main(["eval", "all-MiniLM-L6-v2", "--suite", "concept", "--out", str(blocker / "sub"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "argument --out" in err and "not writable" in err and "Traceback" not in err
    assert called == [] and not (blocker.parent / "sub").exists()
