"""Model A / Model B and verifier steps, learning rates and weight decays from the released code's fixed tables
(run_experiments.sh, run_frozen_vs_e2e_experiment.sh) by encoder size, never from a throughput measured on the
machine that runs them: 3,375 / 2,250 / 500 steps at batch 128 for MiniLM-L6 / MiniLM-L12 and gte-small /
gte-modernbert-base; the paper preset is that run (batch 128, steps from the table); A and B train the same steps;
every encoder's training record keeps the trainer's probe and its loss curve."""

import json

import pytest

from spherekit.cli import main
from spherekit.experiments.api.config import with_overrides
from spherekit.experiments.compositional import models, released
from spherekit.experiments.compositional.spec import EXPERIMENT, PAPER_BACKBONES

# about the parameters of the paper's four backbones and of the larger substitute (as their model cards round them)
SIZES = {"all-MiniLM-L6-v2": 22_700_000, "all-MiniLM-L12-v2": 33_400_000, "gte-small": 33_400_000,
         "gte-modernbert-base": 149_000_000, "all-mpnet-base-v2": 109_500_000}


def test_the_released_step_table_at_batch_128():
    steps = {name: released.encoder_steps(n, 128, 240.0, 500) for name, n in SIZES.items()}
    assert steps == {"all-MiniLM-L6-v2": 3375, "all-MiniLM-L12-v2": 2250, "gte-small": 2250,
                     "gte-modernbert-base": 500, "all-mpnet-base-v2": 750}  # 240 x 250 / 128 = 468 -> at least 500
    assert released.encoder_steps(SIZES["all-MiniLM-L6-v2"], 64, 240.0, 500) == 6750


def test_the_released_rate_tables():
    assert released.encoder_rules(SIZES["all-MiniLM-L6-v2"]) == {"lr": 1e-4, "weight_decay": 0.001,
                                                                  "e2e_encoder_lr": 2e-5,
                                                                  "e2e_encoder_weight_decay": 0.001}
    assert released.encoder_rules(SIZES["gte-small"])["lr"] == 8e-5
    assert released.encoder_rules(SIZES["gte-small"])["e2e_encoder_lr"] == 1.5e-5
    assert released.encoder_rules(SIZES["gte-modernbert-base"])["lr"] == 4e-5
    assert released.encoder_rules(SIZES["all-mpnet-base-v2"])["weight_decay"] == 0.01


def test_the_released_verifier_step_table():
    """run_frozen_vs_e2e_experiment.sh for gte-small (< 50M): batch 128 for F0-F2, 32 for F3/F4."""
    small = SIZES["gte-small"]
    got = {(r, v): released.verifier_steps(small, r, v, 32 if v in ("F3", "F4") else 128, 240.0)
           for r in ("frozen", "e2e") for v in ("F1", "F3", "F4")}
    assert got == {("frozen", "F1"): 1125, ("frozen", "F3"): 375, ("frozen", "F4"): 1500,
                   ("e2e", "F1"): 825, ("e2e", "F3"): 412, ("e2e", "F4"): 1125}
    assert released.verifier_steps(SIZES["gte-modernbert-base"], "e2e", "F4", 32, 240.0) == 300


def test_the_paper_preset_is_the_released_run(backbone):
    cfg = EXPERIMENT.make_config("paper")
    assert cfg.batch_size == 128 and cfg.steps == 0 and cfg.verifier_steps == 0 and cfg.backbones == PAPER_BACKBONES
    assert cfg.seeds == (42, 43, 44) and cfg.structural_fraction == 0.192
    assert models.encoder_steps(backbone, cfg) == released.encoder_steps(models.n_params(backbone), 128, 240.0, 500)
    frozen_small = models.verifier_steps(cfg, "frozen", "F1", backbone)
    assert frozen_small == 0  # no parameters: not trained, as in the released code
    assert models.verifier_steps(cfg, "e2e", "F4", backbone) == 1125  # the tiny backbone is < 50M


def test_fixed_steps_override_the_table(backbone):
    cfg = EXPERIMENT.make_config("tiny")
    assert cfg.steps == 2 and models.encoder_steps(backbone, cfg) == 2
    assert models.verifier_steps(cfg, "frozen", "F4", backbone) == 2


def test_released_steps_train_the_released_counts_at_the_presets_batch(backbone):
    """released_steps: those verifier conditions train for the released code's count (its table at its own batches,
    128 / 32), whatever verifier_steps and the preset's batches (cpu: 60 steps at 64 / 16); the others as before."""
    cfg = EXPERIMENT.make_config("cpu")
    assert cfg.released_steps == () and models.verifier_steps(cfg, "frozen", "F4", backbone) == 60
    cfg = with_overrides(cfg, {"released_steps": ["frozen_F3", "frozen_F4", "e2e_F3", "e2e_F4"]})
    got = {(r, v): models.verifier_steps(cfg, r, v, backbone) for r in ("frozen", "e2e") for v in ("F1", "F3", "F4")}
    assert got == {("frozen", "F1"): 0, ("frozen", "F3"): 375, ("frozen", "F4"): 1500,  # the tiny backbone: < 50M
                   ("e2e", "F1"): 60, ("e2e", "F3"): 412, ("e2e", "F4"): 1125}
    assert cfg.verifier_batch("F4") == 16  # trained at the preset's batch
    table, short = (with_overrides(cfg, {"time_budget_s": s, "verifier_steps": 0}) for s in (240.0, 60.0))
    assert models.verifier_steps(short, "e2e", "F1", backbone) * 4 <= models.verifier_steps(table, "e2e", "F1",
                                                                                           backbone)
    # a quarter of the budget: the table's counts fall with it, the released ones do not
    assert models.verifier_steps(short, "e2e", "F4", backbone) == 1125
    with pytest.raises(ValueError, match="not verifier conditions"):
        with_overrides(cfg, {"released_steps": ["model_a"]})


def test_released_steps_redo_only_the_verifiers_they_name(tmp_path, backbone):
    """A unit's fingerprint sees released_steps only where it names the unit's own condition: setting it for two
    verifiers changes their runs' fingerprints and no other's (the rest of a card is reused, not retrained), and the
    condition's own view still trains the released count."""
    from spherekit.experiments.harness.runner import RunStore

    before = EXPERIMENT.make_config("cpu")
    after = with_overrides(before, {"released_steps": ["frozen_F4", "e2e_F4"]})

    def prints(cfg):
        store = RunStore(tmp_path, EXPERIMENT, cfg)
        return {c: store.fingerprints("all-MiniLM-L6-v2", c, 42) for c in EXPERIMENT.conditions}

    old, new = prints(before), prints(after)
    assert {c for c in old if old[c] != new[c]} == {"frozen_F4", "e2e_F4"}
    assert prints(with_overrides(before, {"released_steps": ["e2e_F4", "frozen_F4"]})) == new  # order-free
    own = EXPERIMENT.unit_config(after, "frozen_F4")
    assert own.released_steps == ("frozen_F4",) and models.verifier_steps(own, "frozen", "F4", backbone) == 1500
    assert EXPERIMENT.unit_config(after, "model_a").released_steps == ()


def test_model_a_and_b_train_the_same_table_steps(backbone_dir, tmp_path):
    args = ["reproduce", "compositional", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(tmp_path),
            "--no-progress", "--conditions", "model_a,model_b", "--set", "steps=0", "--set", "time_budget_s=0.01",
            "--set", "min_steps=3"]
    assert main(args) == 0
    results = json.loads((tmp_path / "compositional" / "tiny" / "results.json").read_text())
    trains = {u["condition"]: u["runs"][0]["training"]["encoder"] for u in results["units"].values()}
    assert set(trains) == {"model_a", "model_b"}
    assert trains["model_a"]["steps"] == trains["model_b"]["steps"] == 4  # 0.01 s x 1,800 samples/s / batch 4
    for train in trains.values():
        assert train["lr"] == 1e-4 and train["weight_decay"] == 0.001  # the < 30M row
        assert len(train["probe"]) == 2 and train["probe"][0] > 0 and len(train["curve"]["loss"]) == 4
