"""End to end: a tiny offline SentenceTransformer trains for 2 steps with SentenceTransformerTrainer on each spherekit
loss (and on the three-view ConceptEquivalenceLoss recipe of "Principles of Concept Representation in Sentence
Encoders"): the logged losses are finite, the loss really ran through the model, and the weights moved."""

from __future__ import annotations

import math

import pytest
import torch

from tests.losses._train import ANCHORS, NEG_1, NEG_2, POSITIVES, train_two_steps
from spherekit.losses import (
    CircularCSELoss,
    ConceptEquivalenceLoss,
    EntryBankLoss,
    MultipleNegativesRankingLoss,
    SincereLoss,
    SoftCSELoss,
)

datasets = pytest.importorskip("datasets")  # SentenceTransformerTrainer takes datasets.Dataset

TEXTS = ["i am thrilled", "what a joy", "so happy today", "i feel so sad", "this is grim", "sad and cold",
         "a nice sunny day", "he drove to work"]
LABELS = [0, 0, 0, 1, 1, 1, 2, 2]
ANGLES = [0.0, math.pi, math.pi / 2]


def pairs(with_negatives=False):
    data = {"anchor": ANCHORS, "positive": POSITIVES}
    if with_negatives:
        data.update(negative_1=NEG_1, negative_2=NEG_2)
    return datasets.Dataset.from_dict(data)


def labelled():
    return datasets.Dataset.from_dict({"text": TEXTS, "label": LABELS})


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
    """The recipe of "Concept Representation": a dict of losses, one per view (syn, t2d with hard negatives, d2d
    weighted 0.7)."""
    calls = []
    loss = {
        "syn": spy_on(ConceptEquivalenceLoss(tiny_model), calls),
        "t2d": spy_on(ConceptEquivalenceLoss(tiny_model), calls),
        "d2d": spy_on(ConceptEquivalenceLoss(tiny_model, weight=0.7), calls),
    }
    data = datasets.DatasetDict({"syn": pairs(), "t2d": pairs(with_negatives=True), "d2d": pairs()})
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
