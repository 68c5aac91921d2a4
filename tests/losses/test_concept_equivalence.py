"""ConceptEquivalenceLoss: the per-view objective of "Principles of Concept Representation in Sentence Encoders"
(InfoNCE + 0.5 BCE on hard negatives), checked against a plain materialised formula written out here (value and every
gradient), against sentence-transformers' MNRL without hard negatives, and for its options."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STLoss

from spherekit.losses import ConceptEquivalenceLoss

ATOL, RTOL = 1e-5, 1e-5


def explicit(cols, scale=20.0, mode="bce", bce_weight=0.5, bce_scale=20.0, bce_bias=0.0, weight=1.0,
             bce_positive=True):
    """000 section 4.3 for one view, materialised in float64: InfoNCE over in-batch positives plus the BCE."""
    a, p, *hn = [F.normalize(c.double(), dim=-1) for c in cols]
    logits = a @ p.T * scale
    pos = logits.diagonal()
    parts = [logits]
    total = 0.0
    if hn:
        h = torch.stack(hn, dim=1)  # (B, k, d)
        hn_cos = torch.einsum("bd,bkd->bk", a, h)
        if mode in ("softmax", "both"):
            parts.append(hn_cos * scale)
        if mode in ("bce", "both"):
            z_pos = bce_scale * (a * p).sum(-1) + bce_bias
            z_neg = bce_scale * hn_cos + bce_bias
            # BCE with label 1 for the positive pair and 0 for each hard negative, mean over the k + 1 pairs
            # (bce_positive=False: the hard negatives alone, mean over the k)
            bce = F.binary_cross_entropy_with_logits(z_neg, torch.zeros_like(z_neg), reduction="none").sum(1)
            if bce_positive:
                bce = bce + F.binary_cross_entropy_with_logits(z_pos, torch.ones_like(z_pos), reduction="none")
            total = bce_weight * bce / (len(hn) + bce_positive)
    nce = torch.logsumexp(torch.cat(parts, dim=1), dim=1) - pos
    return weight * (nce + total).mean()


def make_cols(batch, n_cols, dim=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, dim, generator=g) * 3 for _ in range(n_cols)]


def check(loss_fn, ref_fn, cols, upstream=0.7):
    leaves = [c.clone().requires_grad_(True) for c in cols]
    ref_leaves = [c.clone().double().requires_grad_(True) for c in cols]
    out = loss_fn.compute_loss_from_embeddings(leaves, None)
    ref = ref_fn(ref_leaves)
    (out * upstream).backward()
    (ref * upstream).backward()
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref.detach(), atol=ATOL, rtol=RTOL)
    for i, (a, b) in enumerate(zip(leaves, ref_leaves)):
        torch.testing.assert_close(a.grad.double(), b.grad, atol=ATOL, rtol=RTOL, msg=lambda m: f"column {i}: {m}")


@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
@pytest.mark.parametrize("batch,k", [(1, 1), (5, 1), (13, 5)])
def test_against_explicit_formula(mode, batch, k):
    cols = make_cols(batch, 2 + k, seed=batch * 10 + k)
    loss = ConceptEquivalenceLoss(None, hard_negative_mode=mode)
    check(loss, lambda c: explicit(c, mode=mode), cols)


@pytest.mark.parametrize("batch", [2, 9])
def test_pairs_only_is_st_mnrl(batch):
    """Without hard negatives (that paper's B3) it is MNRL; weight scales it."""
    cols = make_cols(batch, 2, seed=batch)
    ours = ConceptEquivalenceLoss(None, scale=14.0, weight=0.7)
    st = STLoss(None, scale=14.0)
    check(ours, lambda c: 0.7 * st.compute_loss_from_embeddings([x.float() for x in c], None).double(), cols)


@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
@pytest.mark.parametrize("bias", [0.0, -10.0])
def test_bce_without_the_positive_term(mode, bias):
    cols = make_cols(11, 2 + 3, seed=7)
    kw = dict(hard_negative_mode=mode, bce_bias=bias, bce_positive=False)
    check(ConceptEquivalenceLoss(None, **kw), lambda c: explicit(c, mode=mode, bce_bias=bias, bce_positive=False),
          cols)
    if mode == "softmax":  # no BCE term at all: the positive term changes nothing
        check(ConceptEquivalenceLoss(None, **kw), lambda c: explicit(c, mode=mode), cols)
    else:
        with_pos = ConceptEquivalenceLoss(None, hard_negative_mode=mode, bce_bias=bias)
        assert float(with_pos.compute_loss_from_embeddings(cols, None)) != pytest.approx(
            float(ConceptEquivalenceLoss(None, **kw).compute_loss_from_embeddings(cols, None)))


def test_weight_and_options_are_used():
    cols = make_cols(6, 5, seed=3)
    kw = dict(scale=10.0, bce_weight=1.5, bce_scale=7.0, bce_bias=-2.0, weight=0.7)
    check(ConceptEquivalenceLoss(None, **kw), lambda c: explicit(c, **kw), cols, upstream=-1.3)


def test_single_pair_without_hard_negatives_is_zero():
    cols = make_cols(1, 2, seed=4)
    leaves = [c.clone().requires_grad_(True) for c in cols]
    out = ConceptEquivalenceLoss(None).compute_loss_from_embeddings(leaves, None)
    out.backward()
    assert out.item() == 0.0
    assert all(torch.count_nonzero(x.grad) == 0 for x in leaves)


def test_reference_backend_agrees():
    cols = make_cols(7, 4, seed=5)
    check(ConceptEquivalenceLoss(None, backend="reference"), lambda c: explicit(c), cols)


def test_validation_and_api():
    with pytest.raises(ValueError, match="hard_negative_mode"):
        ConceptEquivalenceLoss(None, hard_negative_mode="margin")
    with pytest.raises(ValueError, match="scale"):
        ConceptEquivalenceLoss(None, scale=-1.0)
    loss = ConceptEquivalenceLoss(None, weight=0.7)
    with pytest.raises(ValueError, match="at least 2 input column"):
        loss.compute_loss_from_embeddings([torch.randn(3, 4)], None)
    with pytest.raises(ValueError, match="embeddings\\[2\\] has shape"):
        loss.compute_loss_from_embeddings([torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4)], None)
    assert loss.get_config_dict() == {
        "scale": 20.0, "hard_negative_mode": "bce", "bce_weight": 0.5, "bce_scale": 20.0, "bce_bias": 0.0,
        "bce_positive": True, "weight": 0.7, "gather_across_devices": False, "backend": "auto",
    }
    assert loss.temperature == pytest.approx(0.05)
    assert "2606.06994" in loss.citation and loss.citation.strip().startswith("@")
    doc = ConceptEquivalenceLoss.__init__.__doc__
    for part in ("Args:", "References:", "Inputs:", "Example:", "0.7"):
        assert part in doc
