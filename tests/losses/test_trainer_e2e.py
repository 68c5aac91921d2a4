"""End to end: a tiny offline SentenceTransformer trains for 2 steps with SentenceTransformerTrainer on each
spherekit loss (and on the three-view ConceptEquivalenceLoss recipe of seed 000): the logged losses are
finite, the loss really ran through the model, and the weights moved."""

from __future__ import annotations

import math

import pytest
import torch
from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

from spherekit.losses import (
    CircularCSELoss,
    ConceptEquivalenceLoss,
    EntryBankLoss,
    MultipleNegativesRankingLoss,
    SincereLoss,
    SoftCSELoss,
)

ANCHORS = ["dirty cup", "clean plate", "mammal", "death place", "revitalize", "cup"]
POSITIVES = ["filthy cup", "free of dirt plate", "a warm blooded vertebrate that feeds its young with milk",
             "where someone drew last breath", "give new life or vigor to", "a small open container"]
NEG_1 = ["clean cup", "dirty plate", "not a warm blooded vertebrate", "where someone drew first breath",
         "give no life to", "a small closed container"]
NEG_2 = ["a cup", "a plate", "a cold blooded vertebrate", "a place", "imbue something", "a drinking place"]
TEXTS = ["i am thrilled", "what a joy", "so happy today", "i feel so sad", "this is grim", "sad and cold",
         "a nice sunny day", "he drove to work"]
LABELS = [0, 0, 0, 1, 1, 1, 2, 2]
ANGLES = [0.0, math.pi, math.pi / 2]


def pairs(with_negatives=False):
    data = {"anchor": ANCHORS, "positive": POSITIVES}
    if with_negatives:
        data.update(negative_1=NEG_1, negative_2=NEG_2)
    return Dataset.from_dict(data)


def labelled():
    return Dataset.from_dict({"text": TEXTS, "label": LABELS})


def train_two_steps(model, tmp_path, dataset, loss, batch_size=4, **extra):
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=batch_size,
        learning_rate=5e-3, warmup_steps=0, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
        dataloader_num_workers=0, seed=0, **extra,
    )
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    trainer.train()
    logged = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert trainer.state.global_step == 2 and len(logged) == 2
    assert all(math.isfinite(x) for x in logged), logged
    changed = sum(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert changed > 0, "no weight moved"
    return logged


def spy_on(loss, calls):
    real = loss.compute_loss_from_embeddings

    def spy(embeddings, labels):
        out = real(embeddings, labels)
        calls.append((type(loss).__name__, out.detach(), embeddings[0].requires_grad))
        return out

    loss.compute_loss_from_embeddings = spy
    return loss


def test_mnrl_trains(tiny_model, tmp_path):
    calls = []
    loss = spy_on(MultipleNegativesRankingLoss(tiny_model, directions=("query_to_doc", "doc_to_query")), calls)
    logged = train_two_steps(tiny_model, tmp_path, pairs(with_negatives=True), loss)
    assert len(calls) == 2 and all(requires_grad for _, _, requires_grad in calls)
    assert [c[1].item() for c in calls] == pytest.approx(logged, rel=1e-4)
    assert all(c[1].item() > 0 for c in calls)


def test_concept_equivalence_three_views_train(tiny_model, tmp_path):
    """Seed 000's recipe: a dict of losses, one per view (syn, t2d with hard negatives, d2d weighted 0.7)."""
    calls = []
    loss = {
        "syn": spy_on(ConceptEquivalenceLoss(tiny_model), calls),
        "t2d": spy_on(ConceptEquivalenceLoss(tiny_model), calls),
        "d2d": spy_on(ConceptEquivalenceLoss(tiny_model, weight=0.7), calls),
    }
    data = DatasetDict({"syn": pairs(), "t2d": pairs(with_negatives=True), "d2d": pairs()})
    logged = train_two_steps(tiny_model, tmp_path, data, loss, batch_size=3)
    assert len(calls) == 2 and all(c[1].item() > 0 for c in calls)
    assert [c[1].item() for c in calls] == pytest.approx(logged, rel=1e-4)


@pytest.mark.parametrize("make", [
    lambda m: SincereLoss(m),
    lambda m: SoftCSELoss(m, ANGLES),
    lambda m: CircularCSELoss(m, ANGLES, margin=0.1),
    lambda m: EntryBankLoss(m, torch.randn(3, 32), normalize=True),
], ids=["sincere", "softcse", "circular", "entry-bank"])
def test_label_losses_train(make, tiny_model, tmp_path):
    from sentence_transformers.base.sampler import BatchSamplers

    calls = []
    loss = spy_on(make(tiny_model), calls)
    train_two_steps(tiny_model, tmp_path, labelled(), loss, batch_size=4, batch_sampler=BatchSamplers.GROUP_BY_LABEL)
    assert len(calls) == 2 and all(c[1].item() > 0 for c in calls)
