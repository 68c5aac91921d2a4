"""The drop-in losses inside a mixed-precision training loop: torch.autocast("cpu", torch.bfloat16) around the
forward (the model's matmuls then run in bf16, the embeddings arrive in bf16 or fp32). Each loss returns an fp32
scalar, back-propagates into every parameter of the tiny BERT, and stays close to the same loss without autocast
(what sentence-transformers' MNRL gives under the same autocast is the yardstick for "close")."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STLoss

from spherekit.losses import (
    CachedConceptEquivalenceLoss,
    CachedMultipleNegativesRankingLoss,
    ConceptEquivalenceLoss,
    MultipleNegativesRankingLoss,
    SincereLoss,
)
from tests.losses._train import ANCHORS, NEG_1, POSITIVES

COLUMNS = [ANCHORS, POSITIVES, NEG_1]
LOSSES = {
    "mnrl": lambda m: MultipleNegativesRankingLoss(m),
    "cached-mnrl": lambda m: CachedMultipleNegativesRankingLoss(m, mini_batch_size=4),
    "concept": lambda m: ConceptEquivalenceLoss(m),
    "cached-concept": lambda m: CachedConceptEquivalenceLoss(m, mini_batch_size=4),
}


def _loss_and_grads(model, loss_fn, columns, autocast: bool):
    model.zero_grad(set_to_none=True)
    features = [model.preprocess(texts) for texts in columns]
    with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
        loss = loss_fn(features, None)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _max_relative_gap(a: dict, b: dict) -> float:
    """max over parameters of |a_n - b_n| / max(|b_n|, 1e-4 |b|): a parameter whose reference gradient is below
    1e-4 of the whole gradient's norm is measured against that floor, since its own norm is rounding noise (the
    attention key bias has a gradient of exactly zero in exact arithmetic: softmax is shift-invariant per query)."""
    floor = 1e-4 * float(torch.sqrt(sum(g.norm() ** 2 for g in b.values())))
    return max(float((a[n] - b[n]).norm()) / max(float(b[n].norm()), floor) for n in b)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_under_bf16_autocast_is_fp32_and_close_to_fp32(name, tiny_model):
    tiny_model.eval()
    loss_fn = LOSSES[name](tiny_model)
    loss, grads = _loss_and_grads(tiny_model, loss_fn, COLUMNS, autocast=True)
    ref, ref_grads = _loss_and_grads(tiny_model, loss_fn, COLUMNS, autocast=False)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert grads.keys() == ref_grads.keys() and len(grads) > 10
    st = STLoss(tiny_model)
    st_loss, st_grads = _loss_and_grads(tiny_model, st, COLUMNS, autocast=True)
    st_ref, st_ref_grads = _loss_and_grads(tiny_model, st, COLUMNS, autocast=False)
    # as close to our fp32 loss as sentence-transformers' own MNRL under autocast is to its fp32 loss (x2, + floor)
    assert abs(float(loss - ref)) <= 2 * abs(float(st_loss - st_ref)) + 1e-3
    assert _max_relative_gap(grads, ref_grads) <= 2 * _max_relative_gap(st_grads, st_ref_grads) + 1e-2


def test_labelled_loss_under_bf16_autocast(tiny_model):
    tiny_model.eval()
    loss_fn = SincereLoss(tiny_model, temperature=0.1)
    features = [tiny_model.preprocess(ANCHORS)]
    labels = torch.arange(len(ANCHORS)) % 3
    with torch.autocast("cpu", torch.bfloat16):
        loss = loss_fn(features, labels)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
