"""`spherekit bench reproduce concept`: the plain sentence-transformers recipe computes the same objective as
spherekit's views (so the benchmark compares like with like), and the tiny preset writes both rows."""

import csv

import pytest
import torch

from spherekit.experiments.concept.bench import PlainConceptRecipe, run
from spherekit.experiments.concept.spec import EXPERIMENT, SETUPS as CONDITIONS

preset_config = EXPERIMENT.make_config
from spherekit.experiments.concept.models import build_loss, build_model

A = ["dirty cup", "mammal", "joy", "death place"]
P = ["filthy cup", "a warm blooded vertebrate", "happy feel", "where someone drew last breath"]


def test_plain_recipe_is_the_same_objective(backbone):
    cfg = preset_config("tiny")
    k = 2
    model = build_model(backbone, CONDITIONS["B1"], cfg)
    texts = [A, P, P, A, P[::-1], A[::-1], A, P]
    feats = [model.preprocess(list(t)) for t in texts]
    ours = build_loss(model, CONDITIONS["B1"], cfg, k)([dict(f) for f in feats], None)
    plain = PlainConceptRecipe(model, cfg, k)([dict(f) for f in feats], None)
    torch.testing.assert_close(sum(ours.values()), sum(plain.values()), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours["syn"], plain["syn"], atol=1e-5, rtol=1e-5)
    assert set(plain) == {"syn", "t2d", "d2d", "bce"}


def test_tiny_preset_writes_both_recipes(backbone_dir, tmp_path):
    assert run("tiny", out=str(tmp_path), backbone=str(backbone_dir), data_root=str(tmp_path / "data")) == 0
    rows = list(csv.DictReader(open(tmp_path / "reproduce.csv")))
    assert [r["recipe"] for r in rows] == ["spherekit", "plain-st"]
    for r in rows:
        assert r["status"] == "ok" and float(r["step_median_s"]) > 0 and float(r["eval_s"]) > 0
        assert float(r["train_peak_extra_mib"]) >= 0 and r["steps"] == "4"
    assert int(rows[0]["eval_texts_encoded"]) > 0


def test_bad_preset_and_recipe():
    with pytest.raises(ValueError, match="valid presets"):
        run("huge")
    with pytest.raises(ValueError, match="valid recipes"):
        run("tiny", recipes=["fast"])
