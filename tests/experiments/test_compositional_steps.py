"""Model A / Model B steps from the paper's wall-clock budget: steps = max(min_steps, floor(budget x throughput /
batch)), the throughput measured once per backbone (and batch size; <backbone>/encoder_throughput.json), so A, B and
every seed train the same steps, also when a run resumes."""

import json
from dataclasses import replace

from spherekit.cli import main
from spherekit.experiments.compositional import models
from spherekit.experiments.compositional.spec import EXPERIMENT


def _rows(n=8):
    return [(f"query {i} about lemma", f"gloss number {i} of a sense", f"another gloss {i + 1}") for i in range(n)]


def test_fixed_steps_measure_nothing(backbone, tmp_path):
    cfg = EXPERIMENT.make_config("tiny")
    assert cfg.steps == 2
    assert models.encoder_steps(backbone, _rows(), cfg, tmp_path / "rate.json") == (2, None)
    assert not (tmp_path / "rate.json").exists()


def test_budget_steps_measured_once_and_reused(backbone, tmp_path, monkeypatch):
    cfg = replace(EXPERIMENT.make_config("tiny"), steps=0, time_budget_s=60.0, min_steps=1)
    record = tmp_path / "rate.json"
    steps, sps = models.encoder_steps(backbone, _rows(), cfg, record)
    assert sps > 0 and steps == max(1, int(60.0 * sps / cfg.batch_size))
    assert json.loads(record.read_text())["data"] == sps

    def no_second_measurement(*args, **kwargs):
        raise AssertionError("throughput measured twice for one backbone")

    monkeypatch.setattr(models, "samples_per_second", no_second_measurement)
    assert models.encoder_steps(backbone, _rows(), cfg, record) == (steps, sps)
    floor = replace(cfg, min_steps=steps + 7)
    assert models.encoder_steps(backbone, _rows(), floor, record) == (steps + 7, sps)  # at least min_steps
    monkeypatch.setattr(models, "samples_per_second", lambda *a, **k: 123.0)
    other_batch = replace(cfg, batch_size=cfg.batch_size * 2)
    expected = max(1, int(60.0 * 123.0 / other_batch.batch_size))  # another batch size: measured again
    assert models.encoder_steps(backbone, _rows(), other_batch, record) == (expected, 123.0)


def test_model_a_and_b_train_the_same_budgeted_steps(backbone_dir, tmp_path):
    args = ["reproduce", "compositional", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(tmp_path),
            "--no-progress", "--conditions", "model_a,model_b", "--set", "steps=0", "--set", "time_budget_s=0.5",
            "--set", "min_steps=3"]
    assert main(args) == 0
    results = json.loads((tmp_path / "compositional" / "tiny" / "results.json").read_text())
    trains = {u["condition"]: u["runs"][0]["train"] for u in results["units"].values()}
    assert set(trains) == {"model_a", "model_b"}
    assert trains["model_a"]["steps"] == trains["model_b"]["steps"] >= 3
    assert trains["model_a"]["probe_samples_per_s"] == trains["model_b"]["probe_samples_per_s"] > 0
    rate = json.loads((tmp_path / "compositional" / "tiny" / "st" / "encoder_throughput.json").read_text())
    assert rate["data"] == trains["model_a"]["probe_samples_per_s"]  # one measurement in the backbone's folder
