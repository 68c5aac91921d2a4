"""The textbook reproduction's losses section (MNRL vs triplet vs cosine) on a small local backbone: every loss
gets a retrieval curve that starts at the untrained backbone and ends at the last step, each query's R@k is kept
(after training and as its mean over the curve) for the claims' bootstrap, and an interrupted unit resumes with
the next loss (finished losses are read back from the run's cache, not retrained) with the same result."""

import dataclasses
import types

import pytest

from spherekit.experiments.harness.context import UnitContext
from spherekit.experiments.textbook.data import Retrieval
from spherekit.experiments.textbook.sections import losses
from spherekit.experiments.textbook.spec import EXPERIMENT, LOSSES

TERMS = ["dog", "cat", "car", "tree", "river", "bread"]
GLOSSES = ["a domestic animal that barks", "a small animal that purrs", "a road vehicle with an engine",
           "a tall plant with a trunk", "a large stream of water", "food baked from flour"]


@pytest.fixture(scope="module")
def data():
    train = Retrieval(TERMS, GLOSSES, [{i} for i in range(len(TERMS))])
    test = Retrieval(TERMS[:3], GLOSSES + ["the price of milk"], [{0}, {1}, {2}])
    return types.SimpleNamespace(train=train, test=test)


@pytest.fixture(scope="module")
def cfg():
    return dataclasses.replace(EXPERIMENT.make_config("tiny"), num_negatives=2, batch_size=4, steps=2, eval_k=3)


TRAIN_ONE = losses._train_one


def _run(cfg, backbone_dir, data, run_dir, monkeypatch, trained, fail_at=None):
    def spy(ctx, columns, loss):
        if loss == fail_at:
            raise KeyboardInterrupt
        trained.append(loss)
        return TRAIN_ONE(ctx, columns, loss)

    monkeypatch.setattr(losses, "_train_one", spy)
    ctx = UnitContext(experiment=EXPERIMENT, cfg=cfg, backbone=str(backbone_dir),
                      condition=EXPERIMENT.conditions["losses"], seed=0, data=data, run_dir=run_dir, root=run_dir,
                      fingerprint="run", unit_fingerprint="unit", progress=False, is_main=True, requirements={})
    return {**losses.run(ctx), "training": ctx.training}


def _comparable(result):
    return result["metrics"], result["details"]["curves"]


def test_every_loss_has_a_curve_from_the_backbone_to_the_last_step(cfg, backbone_dir, data, tmp_path, monkeypatch):
    trained = []
    result = _run(cfg, backbone_dir, data, tmp_path / "run", monkeypatch, trained)
    assert trained == list(LOSSES)
    key = f"R@{cfg.eval_k}"
    for loss in LOSSES:
        curve = result["details"]["curves"][loss]
        assert curve[0]["step"] == 0 and curve[0][key] == result["metrics"][f"start/{key}"]
        assert curve[-1]["step"] == cfg.steps and result["metrics"][f"{loss}/{key}"] == curve[-1][key]
        assert [c["step"] for c in curve] == sorted({c["step"] for c in curve})
        assert result["training"][f"losses {loss}"]["steps"] == cfg.steps  # the run's record of that training
        assert (tmp_path / "run" / "cache" / f"train-{loss}.json").is_file()
        for name in (f"{loss}/{key}", f"{loss}/{key} (mean over the training curve)", f"start/{key}"):
            values = result["per_item"][name]
            assert len(values) == len(data.test.queries) and all(0 <= v <= 1 for v in values), name
            assert sum(values) / len(values) == pytest.approx(result["metrics"][name], abs=1e-3), name
    assert (tmp_path / "cache" / "start.json").is_file()  # the backbone's retrieval: once for every seed


def test_interrupted_unit_resumes_with_the_next_loss(cfg, backbone_dir, data, tmp_path, monkeypatch):
    trained = []
    straight = _run(cfg, backbone_dir, data, tmp_path / "straight", monkeypatch, trained)
    trained.clear()
    with pytest.raises(KeyboardInterrupt):
        _run(cfg, backbone_dir, data, tmp_path / "resumed", monkeypatch, trained, fail_at=LOSSES[1])
    assert trained == [LOSSES[0]]
    assert (tmp_path / "resumed" / "cache" / f"train-{LOSSES[0]}.json").is_file()
    trained.clear()
    resumed = _run(cfg, backbone_dir, data, tmp_path / "resumed", monkeypatch, trained)
    assert trained == list(LOSSES[1:])  # the finished loss is read back, not retrained
    assert _comparable(resumed) == _comparable(straight)
    trained.clear()
    again = _run(cfg, backbone_dir, data, tmp_path / "resumed", monkeypatch, trained)
    assert trained == [] and _comparable(again) == _comparable(straight)
