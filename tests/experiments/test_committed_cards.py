"""The committed result cards (benches/results/reproduce/*/*/) are what the current code makes of their units: the
claims and comparison records in results.json are exactly what the papers' paper.py computes from the units,
every metric key follows the vocabulary, re-rendering gives the committed report.md, and the README's and
docs/reproduce.md's generated tables are what `spherekit reproduce index` makes of the cards."""

import json
import shutil
from pathlib import Path

import pytest

from spherekit.experiments import card, get, index
from spherekit.experiments.metrics import evaluation_version, invalid_keys

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted((ROOT / "benches" / "results" / "reproduce").glob("*/*/results.json"))


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", CARDS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_committed_card_is_what_the_code_makes_of_its_units(path, tmp_path):
    results = _load(path)
    experiment = get(results["experiment"])
    assert results["schema"] == card.SCHEMA
    assert results["evaluation"]["version"] == evaluation_version(experiment)
    judged = card.judge(experiment, results)
    assert judged["claims"] == results["claims"] and judged["comparison"] == results["comparison"]
    for unit_id, unit in results["units"].items():
        assert not invalid_keys(unit["metrics"], experiment), unit_id
        for run in unit["runs"]:
            assert not invalid_keys(run["metrics"], experiment), (unit_id, run["seed"])
    folder = tmp_path / "card"
    shutil.copytree(path.parent, folder)
    card.render(folder)
    assert (folder / "report.md").read_text() == (path.parent / "report.md").read_text()
    assert _load(folder / "results.json") == results


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
