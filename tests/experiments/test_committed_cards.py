"""The committed result cards (benches/results/reproduce/*/*/) are what the current code makes of their units: the
claims and comparison records in results.json are exactly what the papers' paper.py computes from the units,
every metric key follows the vocabulary, re-rendering gives the committed report.md, and the README's and
docs/reproduce.md's generated tables are what `spherekit reproduce index` makes of the cards."""

import json
import math
import shutil
from pathlib import Path

import pytest

from spherekit.experiments.harness import card
from spherekit.experiments.harness import index
from spherekit.experiments import get
from spherekit.experiments.api.metrics import evaluation_version, invalid_keys

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted((ROOT / "benches" / "results" / "reproduce").glob("*/*/results.json"))


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def _same(a, b) -> bool:
    """a == b, floats equal to 1e-9 relative: a bootstrap interval re-computed under another numpy / BLAS build
    differs in its last bits (summation order), which is not a different card."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9,
                                                                                           abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_same_tolerates_round_off_only():
    assert _same({"x": [0.24664098557260974, "a"]}, {"x": [0.2466409855726094, "a"]})
    assert not _same({"x": [0.2466, "a"]}, {"x": [0.2467, "a"]})
    assert not _same({"x": 1.0}, {"x": 1.0, "y": 2})
    assert not _same([1.0, 2.0], [1.0])
    assert not _same("holds", "inconclusive")


@pytest.mark.parametrize("path", CARDS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_committed_card_is_what_the_code_makes_of_its_units(path, tmp_path):
    results = _load(path)
    experiment = get(results["experiment"])
    assert results["schema"] == card.SCHEMA
    assert results["evaluation"]["version"] == evaluation_version(experiment)
    judged = card.judge(experiment, results, path.parent)
    assert _same(judged["claims"], results["claims"]) and _same(judged["comparison"], results["comparison"])
    for unit_id, unit in results["units"].items():
        assert not invalid_keys(unit["metrics"], experiment), unit_id
        for run in unit["runs"]:
            assert not invalid_keys(run["metrics"], experiment), (unit_id, run["seed"])
    folder = tmp_path / path.parent.name  # with the paper's 3-seed card beside it: a 1-seed card borrows its noise
    shutil.copytree(path.parent, folder)
    noise = getattr(experiment, "noise_preset", None)
    if noise and noise != path.parent.name and (path.parent.parent / noise).is_dir():
        shutil.copytree(path.parent.parent / noise, tmp_path / noise)
    card.render(folder)
    assert (folder / "report.md").read_text() == (path.parent / "report.md").read_text()
    assert _same(_load(folder / "results.json"), results)


def test_docs_tables_are_generated_from_the_cards():
    assert index.run(ROOT, check=True) == [], "run `spherekit reproduce index` and commit README.md / docs"


@pytest.mark.parametrize("path", CARDS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_committed_card_has_its_block_in_the_docs(path):
    name = f"card {path.parent.parent.name}/{path.parent.name}"
    text = (ROOT / "docs" / "reproduce.md").read_text(encoding="utf-8")
    assert f"<!-- index:{name} -->" in text and f"<!-- /index:{name} -->" in text, \
        f"docs/reproduce.md has no block for {name}: add its markers where the paper's cards are discussed"


def test_fill_replaces_only_known_blocks():
    text = "a\n<!-- index:x -->\nold\n<!-- /index:x -->\nb\n"
    assert index.fill(text, {"x": "new\n"}, "f") == "a\n<!-- index:x -->\nnew\n<!-- /index:x -->\nb\n"
    with pytest.raises(ValueError, match="f: no generated block named 'y'"):
        index.fill(text.replace(":x", ":y"), {"x": ""}, "f")
