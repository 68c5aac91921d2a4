"""The shared training path: summed loss views, the loss falls on a tiny BERT (logged and on the probe's fixed
rows), an interrupted run resumed from its checkpoint ends with exactly the weights (and the probe) of an
uninterrupted run, and bad settings."""

import pytest
import torch
from transformers import TrainerCallback

from spherekit.training.trainer import (PROBE_FILE, MultiViewLoss, TrainConfig, clear_checkpoints,
                                            last_complete_checkpoint, loss_curve, resolve_precision, train)
from spherekit.losses import ConceptEquivalenceLoss

ANCHORS = ["dirty cup", "clean plate", "mammal", "death place", "revitalize", "cup", "a cup", "a plate"]
POSITIVES = ["filthy cup", "free of dirt plate", "a warm blooded vertebrate", "where someone drew last breath",
             "give new life", "a small open container", "the cup", "the plate"]


def views_dataset():
    return pytest.importorskip("datasets").Dataset.from_dict({"syn_a": ANCHORS, "syn_p": POSITIVES,
                                                              "t2d_a": POSITIVES, "t2d_p": ANCHORS,
                                                              "t2d_n1": ANCHORS[::-1]})


def views_loss(model):
    return MultiViewLoss(model, {"syn": (ConceptEquivalenceLoss(model), 2),
                                 "t2d": (ConceptEquivalenceLoss(model, weight=0.7, bce_weight=0.5 / 0.7), 3)})


def test_multiview_returns_each_view_on_its_columns(backbone):
    loss = views_loss(backbone)
    feats = [backbone.preprocess(list(c)) for c in (ANCHORS[:4], POSITIVES[:4], POSITIVES[:4], ANCHORS[:4],
                                                    ANCHORS[4:])]
    out = loss(feats, None)
    assert set(out) == {"syn", "t2d"}
    syn = ConceptEquivalenceLoss(backbone)(feats[:2], None)
    t2d = ConceptEquivalenceLoss(backbone, weight=0.7, bce_weight=0.5 / 0.7)(feats[2:], None)
    torch.testing.assert_close(out["syn"], syn)
    torch.testing.assert_close(out["t2d"], t2d)
    with pytest.raises(ValueError, match="expects 5 columns"):
        loss(feats[:4], None)
    with pytest.raises(ValueError, match="number of columns"):
        MultiViewLoss(backbone, {"syn": (ConceptEquivalenceLoss(backbone), 0)})


def test_loss_falls_and_views_are_logged(backbone, tmp_path):
    cfg = TrainConfig(steps=24, batch_size=4, lr=3e-3, warmup_steps=2, logging_steps=1, layer_decay=0.9,
                      head_multiplier=5.0)
    result = train(backbone, views_dataset(), views_loss(backbone), cfg, tmp_path, progress=False)
    curve = loss_curve(result.log_history)
    assert result.steps == 24 and curve["step"] == list(range(1, 25))
    assert {"loss", "syn", "t2d"} <= set(curve)
    first, last = sum(curve["loss"][:6]) / 6, sum(curve["loss"][-6:]) / 6
    assert last < 0.8 * first, (first, last)
    for s, total, a, b in zip(curve["step"], curve["loss"], curve["syn"], curve["t2d"]):
        assert total == pytest.approx(a + b, abs=2e-3), s  # the views are logged rounded to 4 digits
    # the probe: the summed views' loss of the same first rows (fixed batches, eval mode) before and after
    before, after = result.probe
    assert after < 0.8 * before, result.probe
    # a second training scores the same rows before its first update: the first training's "after"
    again = train(backbone, views_dataset(), views_loss(backbone), TrainConfig(steps=1, batch_size=4, lr=1e-9),
                  tmp_path / "again", progress=False)
    assert again.probe[0] == pytest.approx(after, rel=1e-4)
    # the first score is kept beside the checkpoints until the training is cleared away
    assert (tmp_path / PROBE_FILE).is_file()
    clear_checkpoints(tmp_path)
    assert not (tmp_path / PROBE_FILE).exists() and not (tmp_path / "trainer").exists()


class Interrupt(TrainerCallback):
    def __init__(self, at):
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            raise KeyboardInterrupt


def test_resume_gives_the_weights_of_an_uninterrupted_run(backbone_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    cfg = TrainConfig(steps=6, batch_size=4, lr=2e-3, warmup_steps=1, save_steps=2, logging_steps=1, seed=3)

    def fresh():
        return SentenceTransformer(str(backbone_dir), device="cpu")

    whole = fresh()
    whole_result = train(whole, views_dataset(), views_loss(whole), cfg, tmp_path / "whole", progress=False)

    cut = fresh()
    with pytest.raises(KeyboardInterrupt):
        train(cut, views_dataset(), views_loss(cut), cfg, tmp_path / "cut", callbacks=[Interrupt(3)], progress=False)
    assert last_complete_checkpoint(tmp_path / "cut" / "trainer").name == "checkpoint-2"
    resumed = fresh()  # a new process would start from the original weights
    result = train(resumed, views_dataset(), views_loss(resumed), cfg, tmp_path / "cut", progress=False)
    assert result.resumed_from == 2 and result.steps == 6
    # the probe's first score was kept by the interrupted attempt: the resumed run reports the uninterrupted one's
    assert result.probe == pytest.approx(whole_result.probe, rel=1e-5)
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=lambda m: f"{name}: {m}")
    assert not torch.equal(whole[0].auto_model.embeddings.word_embeddings.weight,
                           fresh()[0].auto_model.embeddings.word_embeddings.weight)


def test_incomplete_checkpoints_are_skipped_and_removed(tmp_path):
    good, bad = tmp_path / "checkpoint-2", tmp_path / "checkpoint-4"
    good.mkdir()
    (good / "trainer_state.json").write_text("{}")
    bad.mkdir()
    (bad / "model.safetensors").write_text("half")
    assert last_complete_checkpoint(tmp_path) == good
    assert not bad.exists()
    assert last_complete_checkpoint(tmp_path / "missing") is None


@pytest.mark.parametrize("kw, match", [
    ({"steps": 0}, "steps"), ({"batch_size": 1.5}, "batch_size"), ({"lr": 0.0}, "lr"),
    ({"schedule": "cosine"}, "schedule"), ({"precision": "fp8"}, "precision"), ({"warmup_steps": -1}, "warmup"),
])
def test_bad_train_config(kw, match):
    base = dict(steps=10, batch_size=4, lr=1e-4)
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{**base, **kw})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU answer")
def test_precision_on_cpu():
    assert resolve_precision("auto") == "fp32"
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        resolve_precision("bf16")


def test_report_to_reaches_every_training_within_reporting(tmp_path, monkeypatch):
    import os

    from spherekit.training.trainer import _tensorboard_dir, reporting, training_arguments

    cfg = TrainConfig(steps=2, batch_size=2, lr=1e-3)
    assert training_arguments(cfg, tmp_path / "trainer", progress=False).report_to == []
    with reporting(("tensorboard",)):
        assert training_arguments(cfg, tmp_path / "trainer", progress=False).report_to == ["tensorboard"]
    assert training_arguments(cfg, tmp_path / "trainer", progress=False).report_to == []
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    with _tensorboard_dir(tmp_path / "logs"):  # outside <out_dir>/trainer/, which is removed after training
        assert os.environ["TENSORBOARD_LOGGING_DIR"] == str(tmp_path / "logs")
    assert "TENSORBOARD_LOGGING_DIR" not in os.environ


def test_distributed_timeout_default_and_override(monkeypatch):
    from datetime import timedelta

    from spherekit.training.trainer import DISTRIBUTED_TIMEOUT_ENV, distributed_timeout

    monkeypatch.delenv(DISTRIBUTED_TIMEOUT_ENV, raising=False)
    assert distributed_timeout() == timedelta(hours=6)  # above torch's and transformers' 30 minutes
    monkeypatch.setenv(DISTRIBUTED_TIMEOUT_ENV, "90.5")
    assert distributed_timeout() == timedelta(seconds=90.5)
    for bad in ("abc", "0", "-3", "inf", "nan", ""):
        monkeypatch.setenv(DISTRIBUTED_TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=DISTRIBUTED_TIMEOUT_ENV):
            distributed_timeout()


def test_barrier_and_trainer_use_the_distributed_timeout(tmp_path, monkeypatch):
    from datetime import timedelta

    import accelerate

    from spherekit.training.trainer import DISTRIBUTED_TIMEOUT_ENV, barrier, training_arguments

    monkeypatch.setenv(DISTRIBUTED_TIMEOUT_ENV, "7200")
    cfg = TrainConfig(steps=2, batch_size=2, lr=1e-3)
    assert training_arguments(cfg, tmp_path / "trainer", progress=False).ddp_timeout == 7200
    seen = []

    class FakeState:
        def __init__(self, **kwargs):
            seen.append(kwargs)

        def wait_for_everyone(self):
            seen.append("waited")

    monkeypatch.setattr(accelerate, "PartialState", FakeState)
    monkeypatch.setenv("WORLD_SIZE", "1")
    barrier()
    assert seen == []  # a single process never touches the process group
    monkeypatch.setenv("WORLD_SIZE", "2")
    barrier()
    assert seen[0]["timeout"] == timedelta(seconds=7200) and seen[1] == "waited"


def test_put_model_back_in_loss_undoes_the_trainers_wrapper():
    from torch import nn

    from spherekit.training.trainer import put_model_back_in_loss

    class Wrapper(nn.Module):  # what DDP / torch.compile look like to the loss: the model under .module / ._orig_mod
        def __init__(self, model, attr):
            super().__init__()
            setattr(self, attr, model)

    class Loss(nn.Module):
        def __init__(self, model, inner=None):
            super().__init__()
            self.model = model
            self.inner = inner

    model, other = nn.Linear(2, 2), nn.Linear(2, 2)
    inner = Loss(Wrapper(model, "_orig_mod"))
    outer = Loss(Wrapper(model, "module"), inner)
    guide = Loss(Wrapper(other, "module"))  # wraps another model: not the trainer's doing, left alone
    outer.guide = guide
    put_model_back_in_loss(outer, model)
    assert outer.model is model and inner.model is model
    assert isinstance(guide.model, Wrapper) and guide.model.module is other


def test_plot_loss_writes_the_curve(tmp_path):
    from spherekit.training.trainer import plot_loss

    path = plot_loss({"step": [1, 2, 3], "loss": [3.0, 2.0, 1.5], "t2d": [2.0, 1.5, 1.0]}, tmp_path / "loss.png", "x")
    assert path.is_file() and path.read_bytes()[:4] == b"\x89PNG"
