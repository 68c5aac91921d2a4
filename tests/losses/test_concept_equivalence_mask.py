"""ConceptEquivalenceLoss with per-row hard-negative counts (labels = n_i: the first n_i columns are real, the rest
padding), checked against a per-row materialised formula (value and every gradient), against the unmasked loss when
every column is real, for padding that cannot leak, and for the clear errors on bad labels."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import spherekit
from spherekit.losses import ConceptEquivalenceLoss

ATOL, RTOL = 1e-5, 1e-5
MODES = ("bce", "softmax", "both")


def explicit_masked(cols, counts, scale=20.0, mode="bce", bce_weight=0.5, bce_scale=20.0, bce_bias=0.0,
                    bce_positive=True):
    """Row by row in float64: InfoNCE over every in-batch positive (plus the row's n_i real negatives in the
    softmax modes) and the BCE over the positive and the n_i real negatives (mean over n_i + 1; n_i alone without
    the positive, 0 for none)."""
    a, p, *hn = [F.normalize(c.double(), dim=-1) for c in cols]
    rows = []
    for i, n in enumerate(counts.tolist()):
        logits = a[i] @ p.T * scale
        negs = torch.stack([h[i] for h in hn[:n]]) if n else a.new_zeros(0, a.shape[1])
        cos_neg = negs @ a[i]
        parts = [logits] + ([cos_neg * scale] if mode in ("softmax", "both") else [])
        loss = torch.logsumexp(torch.cat(parts), 0) - logits[i]
        if mode in ("bce", "both"):
            terms = F.softplus(bce_scale * cos_neg + bce_bias).sum()
            if bce_positive:
                terms = (terms + F.softplus(-(bce_scale * (a[i] @ p[i]) + bce_bias))) / (n + 1)
            else:
                terms = terms / max(n, 1)
            loss = loss + bce_weight * terms
        rows.append(loss)
    return torch.stack(rows).mean()


def cols_of(batch, k, dim=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, dim, generator=g) * 3 for _ in range(2 + k)]


def grads(loss_fn, cols, labels, dtype=torch.float32):
    leaves = [c.clone().to(dtype).requires_grad_(True) for c in cols]
    out = loss_fn.compute_loss_from_embeddings(leaves, labels)
    (out * 0.7).backward()
    return out, [x.grad for x in leaves]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("positive", [True, False])
@pytest.mark.parametrize("batch,k", [(1, 1), (6, 3), (11, 5)])
def test_against_the_per_row_formula(mode, positive, batch, k):
    counts = torch.arange(batch) % (k + 1)          # every count 0..k, a row without any real negative included
    cols = cols_of(batch, k, seed=batch + k)
    loss = ConceptEquivalenceLoss(None, hard_negative_mode=mode, bce_positive=positive, bce_bias=-2.0)
    out, got = grads(loss, cols, counts)
    ref_leaves = [c.clone().double().requires_grad_(True) for c in cols]
    ref = explicit_masked(ref_leaves, counts, mode=mode, bce_positive=positive, bce_bias=-2.0)
    (ref * 0.7).backward()
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref.detach(), atol=ATOL, rtol=RTOL)
    for i, (g, leaf) in enumerate(zip(got, ref_leaves)):
        want = torch.zeros_like(leaf) if leaf.grad is None else leaf.grad  # a column of padding only: no gradient
        torch.testing.assert_close(g.double(), want, atol=ATOL, rtol=RTOL, msg=lambda m: f"column {i}: {m}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("positive", [True, False])
def test_all_real_equals_the_unmasked_loss(mode, positive):
    cols = cols_of(7, 4, seed=3)
    loss = ConceptEquivalenceLoss(None, hard_negative_mode=mode, bce_positive=positive, weight=0.7)
    masked, g_masked = grads(loss, cols, torch.full((7,), 4))
    plain, g_plain = grads(loss, cols, None)
    torch.testing.assert_close(masked, plain, atol=ATOL, rtol=RTOL)
    for a, b in zip(g_masked, g_plain):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("mode", MODES)
def test_padding_has_no_effect_and_no_gradient(mode):
    cols = cols_of(5, 3, seed=4)
    counts = torch.tensor([0, 1, 2, 3, 1])
    loss = ConceptEquivalenceLoss(None, hard_negative_mode=mode)
    out, got = grads(loss, cols, counts)
    other = [c.clone() for c in cols]
    for j in range(3):
        padded = counts <= j
        other[2 + j][padded] = torch.randn(int(padded.sum()), 16) * 50
        assert torch.all(got[2 + j][padded] == 0)
    torch.testing.assert_close(grads(loss, other, counts)[0], out, atol=ATOL, rtol=RTOL)


def test_low_precision_inputs_keep_their_dtype():
    cols = cols_of(6, 2, seed=5)
    loss = ConceptEquivalenceLoss(None, hard_negative_mode="both")
    ref = grads(loss, cols, torch.tensor([0, 1, 2, 2, 1, 0]))[0]
    out = grads(loss, cols, torch.tensor([0, 1, 2, 2, 1, 0]), dtype=torch.bfloat16)[0]
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=0.1, rtol=0.05)


def test_bad_labels_are_named():
    cols = cols_of(4, 2)
    loss = ConceptEquivalenceLoss(None)
    with pytest.raises(ValueError, match=r"labels must be a \(4,\) tensor"):
        loss.compute_loss_from_embeddings(cols, torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="integer counts"):
        loss.compute_loss_from_embeddings(cols, torch.zeros(4))
    with pytest.raises(ValueError, match="without hard-negative columns"):
        loss.compute_loss_from_embeddings(cols[:2], torch.zeros(4, dtype=torch.long))
    loss.compute_loss_from_embeddings(cols, torch.full((4,), 3))  # fast mode: no value scan
    with spherekit.checks("full"), pytest.raises(ValueError, match=r"must lie in \[0, 2\], got \[3, 3\]"):
        loss.compute_loss_from_embeddings(cols, torch.full((4,), 3))
