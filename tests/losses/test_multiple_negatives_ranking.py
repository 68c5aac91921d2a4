"""spherekit's MultipleNegativesRankingLoss against sentence-transformers' own class: value and gradients
for every directions / partition_mode combination, with and without negative columns, two scales,
cos_sim and dot_score; plus the fused path really being taken, the fallbacks and the API surface."""

from __future__ import annotations

import itertools
import zlib

import pytest
import torch
from sentence_transformers import util
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STLoss

import spherekit.losses.multiple_negatives_ranking as mnrl_mod
from spherekit.losses import MultipleNegativesRankingLoss

Q2D, Q2Q, D2Q, D2D = "query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"
COMBOS = [
    ((Q2D,), "joint"),
    ((Q2D, Q2Q), "joint"),
    ((Q2D, D2Q), "joint"),
    ((Q2D, D2D), "joint"),
    ((Q2D, Q2Q, D2Q), "joint"),
    ((Q2D, Q2Q, D2D), "joint"),
    ((Q2D, D2Q, D2D), "joint"),
    ((Q2D, Q2Q, D2Q, D2D), "joint"),
    ((Q2D,), "per_direction"),
    ((Q2D, D2Q), "per_direction"),
    ((D2Q, Q2D), "per_direction"),
]
SIMS = {"cos_sim": util.cos_sim, "dot_score": util.dot_score}
ATOL, RTOL = 1e-5, 1e-5


def make_batch(batch, n_cols, dim, sim, seed):
    g = torch.Generator().manual_seed(seed)
    # dot_score: norms ~0.5-1.5 keep the logits (x scale) in a realistic range
    cols = [torch.randn(batch, dim, generator=g) for _ in range(n_cols)]
    if sim == "dot_score":
        cols = [c / c.norm(dim=1, keepdim=True) * (0.5 + torch.rand(batch, 1, generator=g)) for c in cols]
    return cols


def loss_and_grads(loss_fn, cols, upstream=1.0):
    leaves = [c.clone().requires_grad_(True) for c in cols]
    loss = loss_fn.compute_loss_from_embeddings(leaves, None)
    (loss * upstream).backward()
    return loss.detach(), [x.grad for x in leaves]


def assert_matches_st(ours, theirs, cols, upstream=1.0):
    lo, go = loss_and_grads(ours, cols, upstream)
    lt, gt = loss_and_grads(theirs, cols, upstream)
    torch.testing.assert_close(lo, lt, atol=ATOL, rtol=RTOL)
    for i, (a, b) in enumerate(zip(go, gt)):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=RTOL, msg=lambda m: f"grad of column {i}: {m}")




@pytest.mark.parametrize("directions,partition_mode", COMBOS, ids=lambda v: "+".join(v) if isinstance(v, tuple) else v)
@pytest.mark.parametrize("n_cols", [2, 4], ids=["pairs", "2neg"])
@pytest.mark.parametrize("scale", [20.0, 7.3])
@pytest.mark.parametrize("sim", list(SIMS))
def test_matches_sentence_transformers(directions, partition_mode, n_cols, scale, sim, count_fused):
    seed = zlib.crc32(repr((directions, partition_mode, n_cols, scale, sim)).encode())
    cols = make_batch(7, n_cols, 24, sim, seed=seed)
    kw = dict(scale=scale, similarity_fct=SIMS[sim], directions=directions, partition_mode=partition_mode)
    ours, theirs = MultipleNegativesRankingLoss(None, **kw), STLoss(None, **kw)
    assert_matches_st(ours, theirs, cols, upstream=0.37)
    assert ours.fused(cols)
    n_dirs = 2 if (partition_mode == "per_direction" and D2Q in directions) else 1
    assert len(count_fused) == n_dirs  # the fused op ran, once per softmax


def test_fused_call_count_per_direction(count_fused):
    cols = make_batch(5, 3, 16, "cos_sim", seed=1)
    loss = MultipleNegativesRankingLoss(None, directions=(Q2D, D2Q), partition_mode="per_direction")
    loss.compute_loss_from_embeddings(cols, None)
    assert len(count_fused) == 2
    count_fused.clear()
    MultipleNegativesRankingLoss(None, directions=(Q2D, Q2Q, D2Q, D2D)).compute_loss_from_embeddings(cols, None)
    assert len(count_fused) == 1 and "candidate_labels" in count_fused[0]


@pytest.mark.parametrize("directions,partition_mode", [((Q2D,), "joint"), ((Q2D, Q2Q, D2Q, D2D), "joint"),
                                                       ((Q2D, D2Q), "per_direction")])
def test_duplicate_rows_and_large_scale(directions, partition_mode):
    """Duplicated texts (exact ties) and a large scale (sharp softmax) still match."""
    cols = make_batch(6, 3, 8, "cos_sim", seed=3)
    cols[1][3] = cols[1][1]  # two identical positives
    cols[0][4] = cols[0][2]  # two identical anchors
    kw = dict(scale=50.0, directions=directions, partition_mode=partition_mode)
    assert_matches_st(MultipleNegativesRankingLoss(None, **kw), STLoss(None, **kw), cols)


@pytest.mark.parametrize("directions,partition_mode", [((Q2D,), "joint"), ((Q2D, Q2Q, D2D), "joint"),
                                                       ((Q2D, D2Q), "per_direction")])
def test_batch_of_one(directions, partition_mode, count_fused):
    """One pair: every denominator holds only the positive -> 0 with zero gradients, as in ST."""
    cols = make_batch(1, 2, 8, "cos_sim", seed=4)
    kw = dict(directions=directions, partition_mode=partition_mode)
    lo, go = loss_and_grads(MultipleNegativesRankingLoss(None, **kw), cols)
    lt, gt = loss_and_grads(STLoss(None, **kw), cols)
    assert lo.item() == 0.0 and lt.item() == pytest.approx(0.0, abs=1e-6)
    for a, b in zip(go, gt):
        assert a is not None and torch.count_nonzero(a) == 0
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_batch_of_one_with_negatives_and_d2q():
    """One anchor with negative columns: query_to_doc has negatives, doc_to_query has none (term 0)."""
    cols = make_batch(1, 3, 8, "dot_score", seed=5)
    for kw in (dict(directions=(Q2D, D2Q), partition_mode="per_direction"), dict(directions=(Q2D, D2Q, D2D))):
        assert_matches_st(MultipleNegativesRankingLoss(None, **kw), STLoss(None, **kw), cols)


def test_model_similarity_bound_method_is_fused(count_fused):
    class Owner:
        similarity_fn_name = "dot"

        def similarity(self, a, b):
            return util.dot_score(a, b)

    cols = make_batch(5, 2, 8, "dot_score", seed=6)
    ours = MultipleNegativesRankingLoss(None, similarity_fct=Owner().similarity, scale=1.0)
    assert mnrl_mod.similarity_kind(Owner().similarity) == "dot"
    assert_matches_st(ours, STLoss(None, similarity_fct=util.dot_score, scale=1.0), cols)
    assert len(count_fused) == 1


@pytest.mark.parametrize("kw", [
    dict(similarity_fct=util.euclidean_sim, scale=1.0),
    dict(similarity_fct=util.manhattan_sim, scale=0.5, directions=(Q2D, Q2Q, D2Q, D2D)),
    dict(hardness_mode="in_batch_negatives", hardness_strength=9.0),
    dict(hardness_mode="hard_negatives", hardness_strength=5.0),
    dict(hardness_mode="all_negatives", hardness_strength=3.0, directions=(Q2D, D2Q), partition_mode="per_direction"),
], ids=["euclidean", "manhattan-gte", "hard-in-batch", "hard-hn", "hard-all"])
def test_unfused_fallbacks_match_st(kw, count_fused):
    cols = make_batch(6, 3, 12, "cos_sim", seed=7)
    ours = MultipleNegativesRankingLoss(None, **kw)
    assert not ours.fused(cols)
    assert_matches_st(ours, STLoss(None, **kw), cols)
    assert count_fused == []


def test_hardness_mode_without_strength_is_fused(count_fused):
    cols = make_batch(6, 3, 12, "cos_sim", seed=8)
    kw = dict(hardness_mode="hard_negatives", hardness_strength=0.0)
    assert_matches_st(MultipleNegativesRankingLoss(None, **kw), STLoss(None, **kw), cols)
    assert len(count_fused) == 1


def test_reference_backend_and_grad_output():
    cols = make_batch(9, 3, 16, "cos_sim", seed=9)
    kw = dict(directions=(Q2D, Q2Q, D2Q, D2D))
    assert_matches_st(MultipleNegativesRankingLoss(None, backend="reference", **kw), STLoss(None, **kw), cols,
                      upstream=-2.5)


@pytest.mark.parametrize("kw,match", [
    (dict(scale=0.0), "Scale must be a positive"),
    (dict(directions=()), "At least one direction"),
    (dict(directions=(D2Q,)), "'query_to_doc' direction is required"),
    (dict(directions=(Q2D, "sideways")), "Invalid directions"),
    (dict(partition_mode="both"), "partition_mode must be"),
    (dict(directions=(Q2D, Q2Q), partition_mode="per_direction"), "per_direction"),
    (dict(hardness_mode="some"), "hardness_mode must be"),
    (dict(hardness_strength=-1.0), "hardness_strength must be non-negative"),
])
def test_constructor_validation_is_st(kw, match):
    with pytest.raises(ValueError, match=match):
        STLoss(None, **kw)
    with pytest.raises(ValueError, match=match):
        MultipleNegativesRankingLoss(None, **kw)


def test_too_few_columns():
    with pytest.raises(ValueError, match="at least 2 embeddings"):
        MultipleNegativesRankingLoss(None).compute_loss_from_embeddings([torch.randn(3, 4)], None)


def test_bad_backend_is_reported():
    cols = make_batch(4, 2, 8, "cos_sim", seed=10)
    with pytest.raises(ValueError, match="backend"):
        MultipleNegativesRankingLoss(None, backend="gpu-please").compute_loss_from_embeddings(cols, None)


def test_config_citation_and_subclass():
    kw = dict(scale=12.0, directions=(Q2D, Q2Q, D2Q, D2D), partition_mode="joint")
    ours, theirs = MultipleNegativesRankingLoss(None, backend="cpu", **kw), STLoss(None, **kw)
    assert isinstance(ours, STLoss) and isinstance(ours, torch.nn.Module)
    assert ours.get_config_dict() == {**theirs.get_config_dict(), "backend": "cpu"}
    assert ours.citation == theirs.citation and "@misc" in ours.citation
    assert ours.temperature == pytest.approx(1 / 12.0)
    for doc in ("Args:", "References:", "Inputs:", "Example:"):
        assert doc in MultipleNegativesRankingLoss.__init__.__doc__


def test_forward_through_a_model_matches_st(tiny_model):
    """forward(sentence_features, labels) on a real (tiny) SentenceTransformer, eval mode."""
    model = tiny_model
    model.eval()
    texts = [["dirty cup", "clean plate", "mammal"], ["filthy cup", "free of dirt plate", "warm blooded animal"],
             ["clean cup", "dirty plate", "cold blooded animal"]]
    kw = dict(directions=(Q2D, Q2Q, D2Q, D2D))
    results = []
    for cls in (MultipleNegativesRankingLoss, STLoss):
        model.zero_grad()
        features = [model.preprocess(t) for t in texts]
        loss = cls(model, **kw)(features, None)
        loss.backward()
        grad = model[0].auto_model.embeddings.word_embeddings.weight.grad.clone()
        results.append((loss.detach(), grad))
    torch.testing.assert_close(results[0][0], results[1][0], atol=ATOL, rtol=RTOL)
    torch.testing.assert_close(results[0][1], results[1][1], atol=ATOL, rtol=RTOL)
    assert results[0][1].abs().sum() > 0


def test_combos_cover_all_st_supports():
    """COMBOS holds every directions subset ST accepts: all with query_to_doc in joint mode, and both
    per_direction ones (per_direction refuses query_to_query / doc_to_doc)."""
    others = [Q2Q, D2Q, D2D]
    subsets = {frozenset((Q2D,) + s) for r in range(4) for s in itertools.combinations(others, r)}
    assert {frozenset(d) for d, mode in COMBOS if mode == "joint"} == subsets
    assert {frozenset(d) for d, mode in COMBOS if mode == "per_direction"} == {frozenset((Q2D,)), frozenset((Q2D, D2Q))}
