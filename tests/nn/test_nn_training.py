"""A tiny BERT + nGPT head trains: the loss falls and the head's weights stay on the unit sphere, through
SentenceTransformerTrainer + RenormalizeCallback and through a custom loop + renormalize_all_."""

import math

import pytest
import torch

from spherekit.losses import MultipleNegativesRankingLoss, SincereLoss
from spherekit.nn import RenormalizeCallback, freeze_backbone, renormalize_all_, unit_norm_weights

WORDS = ("cup plate mammal animal car office weather milk death price life container joy sad "
         "work breath").split()
ANCHORS = [f"the {w}" for w in WORDS]
POSITIVES = [f"a {w} it is" for w in WORDS]


def max_norm_error(model):
    pairs = unit_norm_weights(model)
    assert len(pairs) >= 4
    return max(float((w.detach().norm(dim=dim) - 1).abs().max()) for w, dim in pairs)


def _pairs():
    """The (anchor, positive) training set (skips where the optional `datasets` package is missing)."""
    return pytest.importorskip("datasets").Dataset.from_dict({"anchor": ANCHORS, "positive": POSITIVES})


def train(model, tmp_path, loss, dataset, steps, callbacks, batch_size=8, lr=1e-3, **extra):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=steps, per_device_train_batch_size=batch_size,
        learning_rate=lr, lr_scheduler_type="constant", warmup_steps=0, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, dataloader_num_workers=0, seed=0, **extra)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss,
                                         callbacks=callbacks)
    trainer.train()
    logged = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert len(logged) == steps and all(math.isfinite(x) for x in logged)
    return logged


def test_trainer_with_callback_learns_and_keeps_unit_norm(head_model, tmp_path):
    model = head_model("ngpt", "mean")
    callback = RenormalizeCallback()
    loss = MultipleNegativesRankingLoss(model)
    logged = train(model, tmp_path, loss, _pairs(), 8,
                   [callback], lr=3e-3)
    first, last = sum(logged[:3]) / 3, sum(logged[-3:]) / 3
    assert last < 0.5 * first, (first, last)
    assert callback.calls == 9  # train begin + one per optimiser step
    assert max_norm_error(model) < 1e-5


def test_without_renormalisation_weights_leave_the_sphere(head_model, tmp_path):
    """The control for the test above: the optimiser alone moves the weights off the sphere."""
    model = head_model("ngpt", "mean")
    train(model, tmp_path, MultipleNegativesRankingLoss(model),
          _pairs(), 2, [])
    assert max_norm_error(model) > 1e-3


def test_custom_loop_frozen_backbone_sincere(head_model):
    """The LLM recipe of "Mapping the Circumplex of Affect": frozen backbone, only the head trains (SINCERE on
    labelled texts)."""
    torch.manual_seed(0)
    model = head_model("ngpt", "mean")
    freeze_backbone(model)
    backbone_before = {k: v.clone() for k, v in model[0].state_dict().items()}
    texts = ANCHORS[:12] + POSITIVES[:12]
    labels = torch.arange(12).repeat(2) % 4
    loss_fn = SincereLoss(model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2)
    features = model.preprocess(texts)
    losses = []
    for _ in range(20):
        value = loss_fn([features], labels)
        opt.zero_grad()
        value.backward()
        opt.step()
        renormalize_all_(model)
        losses.append(value.item())
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3, losses
    assert max_norm_error(model) < 1e-5
    for k, v in model[0].state_dict().items():
        assert torch.equal(v, backbone_before[k]), k


@pytest.mark.parametrize("accum", [2])
def test_callback_runs_once_per_optimizer_step(head_model, tmp_path, accum):
    model = head_model("ngpt", "cls")
    callback = RenormalizeCallback()
    train(model, tmp_path, MultipleNegativesRankingLoss(model),
          _pairs(), 2, [callback], batch_size=4,
          gradient_accumulation_steps=accum)
    assert callback.calls == 3
    assert max_norm_error(model) < 1e-5
