"""The gradient-cached losses on the tiny offline BERT: spherekit's CachedMultipleNegativesRankingLoss against
sentence-transformers' (loss and every parameter gradient, dropout on and off, several mini-batch splits) and
against spherekit's non-cached MNRL; CachedConceptEquivalenceLoss against ConceptEquivalenceLoss; the
evaluation path, the API surface, 2 training steps with SentenceTransformerTrainer, and weighted sums of
cached losses back-propagated once."""

from __future__ import annotations


import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers import util
from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss as STCached

from tests.losses._train import ANCHORS, NEG_1, NEG_2, POSITIVES, train_two_steps
from spherekit.losses import (
    CachedConceptEquivalenceLoss,
    CachedMultipleNegativesRankingLoss,
    ConceptEquivalenceLoss,
    MultipleNegativesRankingLoss,
)

Q2D, Q2Q, D2Q, D2D = "query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"
ATOL, RTOL = 1e-5, 1e-4

COLUMNS = {0: [ANCHORS, POSITIVES], 2: [ANCHORS, POSITIVES, NEG_1, NEG_2]}  # by number of negative columns


def loss_and_grads(model, loss_fn, columns, seed=0, no_grad=False):
    """(loss, {parameter name: gradient}) of one forward + backward of loss_fn on fresh features."""
    model.zero_grad(set_to_none=True)
    features = [model.preprocess(texts) for texts in columns]
    torch.manual_seed(seed)
    if no_grad:
        with torch.no_grad():
            return loss_fn(features, None), {}
    loss = loss_fn(features, None)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


def assert_same(result, expected):
    (loss, grads), (loss_ref, grads_ref) = result, expected
    torch.testing.assert_close(loss, loss_ref, atol=ATOL, rtol=RTOL)
    assert loss_ref.item() > 0
    assert grads.keys() == grads_ref.keys() and len(grads_ref) > 10  # every parameter of the tiny BERT
    for name, grad in grads.items():
        torch.testing.assert_close(grad, grads_ref[name], atol=ATOL, rtol=RTOL, msg=lambda m: f"{name}: {m}")
    assert sum(g.abs().sum() for g in grads_ref.values()) > 0




MNRL_CASES = {
    "pairs": (0, dict(mini_batch_size=4)),
    "2neg": (2, dict(mini_batch_size=4)),
    "d2q-per-direction": (2, dict(mini_batch_size=4, directions=(Q2D, D2Q), partition_mode="per_direction")),
    "d2q-joint": (0, dict(mini_batch_size=4, directions=(Q2D, D2Q))),
    "gte-joint": (2, dict(mini_batch_size=5, directions=(Q2D, Q2Q, D2Q, D2D))),
    "mini-batch-larger": (2, dict(mini_batch_size=16, directions=(Q2D, D2Q), partition_mode="per_direction")),
    "dot-score": (0, dict(mini_batch_size=4, similarity_fct=util.dot_score, scale=1.0)),
}


@pytest.mark.parametrize("train", [True, False], ids=["dropout", "eval"])
@pytest.mark.parametrize("case", list(MNRL_CASES))
def test_cached_mnrl_matches_sentence_transformers(case, train, tiny_model, count_fused):
    n_neg, kw = MNRL_CASES[case]
    tiny_model.train(train)
    ours = loss_and_grads(tiny_model, CachedMultipleNegativesRankingLoss(tiny_model, **kw), COLUMNS[n_neg])
    assert len(count_fused) >= 1  # the fused op computed our loss stage
    theirs = loss_and_grads(tiny_model, STCached(tiny_model, **kw), COLUMNS[n_neg])
    assert_same(ours, theirs)


def test_dropout_is_active_in_train_mode(tiny_model):
    """The train-mode comparisons above are meaningful: another seed draws other dropout masks."""
    tiny_model.train()
    loss = CachedMultipleNegativesRankingLoss(tiny_model, mini_batch_size=4)
    a, _ = loss_and_grads(tiny_model, loss, COLUMNS[2], seed=0)
    b, _ = loss_and_grads(tiny_model, loss, COLUMNS[2], seed=1)
    assert abs(a.item() - b.item()) > 1e-4


@pytest.mark.parametrize("kw", [
    dict(hardness_mode="hard_negatives", hardness_strength=5.0),
    dict(hardness_mode="in_batch_negatives", hardness_strength=9.0, directions=(Q2D, D2Q)),
    dict(similarity_fct=util.euclidean_sim, scale=1.0),
], ids=["hard-negatives", "hard-in-batch", "euclidean"])
def test_unfused_fallback_matches_sentence_transformers(kw, tiny_model, count_fused):
    tiny_model.train()
    ours = loss_and_grads(tiny_model, CachedMultipleNegativesRankingLoss(tiny_model, mini_batch_size=4, **kw),
                          COLUMNS[2])
    theirs = loss_and_grads(tiny_model, STCached(tiny_model, mini_batch_size=4, **kw), COLUMNS[2])
    assert count_fused == []
    assert_same(ours, theirs)


@pytest.mark.parametrize("n_neg,kw", [
    (0, dict()),
    (2, dict(directions=(Q2D, D2Q), partition_mode="per_direction")),
    (2, dict(directions=(Q2D, Q2Q, D2Q, D2D), scale=12.0)),
], ids=["pairs", "2neg-per-direction", "2neg-gte"])
def test_cached_mnrl_matches_non_cached(n_neg, kw, tiny_model):
    tiny_model.eval()
    cached = loss_and_grads(tiny_model, CachedMultipleNegativesRankingLoss(tiny_model, mini_batch_size=4, **kw),
                            COLUMNS[n_neg])
    plain = loss_and_grads(tiny_model, MultipleNegativesRankingLoss(tiny_model, **kw), COLUMNS[n_neg])
    assert_same(cached, plain)


@pytest.mark.parametrize("n_neg", [0, 2], ids=["pairs", "2neg"])
@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
def test_cached_concept_equivalence_matches_non_cached(mode, n_neg, tiny_model):
    tiny_model.eval()
    kw = dict(hard_negative_mode=mode, weight=0.7, bce_weight=0.8, scale=15.0)
    cached = loss_and_grads(tiny_model, CachedConceptEquivalenceLoss(tiny_model, mini_batch_size=4, **kw),
                            COLUMNS[n_neg])
    plain = loss_and_grads(tiny_model, ConceptEquivalenceLoss(tiny_model, **kw), COLUMNS[n_neg])
    assert_same(cached, plain)


def test_cached_concept_equivalence_token_budget(tiny_model):
    """mini_batch_num_tokens packs the mini-batches by token count: same loss and gradients."""
    tiny_model.eval()
    cached = CachedConceptEquivalenceLoss(tiny_model, mini_batch_num_tokens=12)
    ranges_seen = []
    real = cached.embed_minibatch

    def spy(sentence_feature, begin, end, *args, **kwargs):
        ranges_seen.append(end - begin)
        return real(sentence_feature, begin, end, *args, **kwargs)

    cached.embed_minibatch = spy
    result = loss_and_grads(tiny_model, cached, COLUMNS[2])
    assert min(ranges_seen) >= 1 and 1 < len(ranges_seen)
    assert any(n not in (4, 6) for n in ranges_seen)  # not split by texts: by tokens
    assert_same(result, loss_and_grads(tiny_model, ConceptEquivalenceLoss(tiny_model), COLUMNS[2]))


@pytest.mark.parametrize("make_cached,make_plain", [
    (lambda m: CachedMultipleNegativesRankingLoss(m, mini_batch_size=4, directions=(Q2D, D2Q)),
     lambda m: MultipleNegativesRankingLoss(m, directions=(Q2D, D2Q))),
    (lambda m: CachedConceptEquivalenceLoss(m, mini_batch_size=4, weight=0.7),
     lambda m: ConceptEquivalenceLoss(m, weight=0.7)),
], ids=["mnrl", "concept-equivalence"])
def test_no_grad_evaluation_path(make_cached, make_plain, tiny_model):
    tiny_model.eval()
    cached = make_cached(tiny_model)
    value, _ = loss_and_grads(tiny_model, cached, COLUMNS[2], no_grad=True)
    assert not value.requires_grad and value.grad_fn is None and value._backward_hooks is None
    expected, _ = loss_and_grads(tiny_model, make_plain(tiny_model), COLUMNS[2], no_grad=True)
    torch.testing.assert_close(value, expected, atol=ATOL, rtol=RTOL)
    assert all(p.grad is None for p in tiny_model.parameters())
    # with gradients, the same call returns a leaf carrying the GradCache hook
    training = cached([tiny_model.preprocess(t) for t in COLUMNS[2]], None)
    assert training.requires_grad and training._backward_hooks
    torch.testing.assert_close(training.detach(), expected, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("inner_weight", [False, True], ids=["grad-output-0.7", "loss-weight-0.7"])
def test_sum_of_cached_losses_backward_once(inner_weight, tiny_model):
    """Two cached view losses on different column groups, added with weights 1.0 and 0.7 and back-propagated
    once, give the gradients of the same sum of the non-cached losses (each hook is scaled by grad_output)."""
    tiny_model.eval()
    groups = ([ANCHORS, POSITIVES, NEG_1, NEG_2], [POSITIVES, NEG_2])
    w, outer = (0.7, 1.0) if inner_weight else (1.0, 0.7)

    def total(first, second):
        def loss_fn(_features, _labels):
            features = [[tiny_model.preprocess(t) for t in group] for group in groups]
            return first(features[0], None) + outer * second(features[1], None)
        return loss_and_grads(tiny_model, loss_fn, [])

    cached = total(CachedConceptEquivalenceLoss(tiny_model, mini_batch_size=4),
                   CachedMultipleNegativesRankingLoss(tiny_model, mini_batch_size=4) if not inner_weight else
                   CachedConceptEquivalenceLoss(tiny_model, mini_batch_size=4, weight=w))
    plain = total(ConceptEquivalenceLoss(tiny_model),
                  MultipleNegativesRankingLoss(tiny_model) if not inner_weight else
                  ConceptEquivalenceLoss(tiny_model, weight=w))
    assert_same(cached, plain)
    # and the second loss really contributes: without it the gradients differ
    alone = loss_and_grads(tiny_model, lambda f, _: ConceptEquivalenceLoss(tiny_model)(f, None), groups[0])
    diff = sum((alone[1][k] - plain[1][k]).abs().sum() for k in plain[1])
    assert diff > 1e-3


def test_mnrl_api_surface(tiny_model):
    kw = dict(scale=12.0, mini_batch_size=8, directions=(Q2D, Q2Q, D2Q, D2D), partition_mode="joint")
    ours, theirs = CachedMultipleNegativesRankingLoss(tiny_model, backend="cpu", **kw), STCached(tiny_model, **kw)
    assert isinstance(ours, STCached) and isinstance(ours.loss, MultipleNegativesRankingLoss)
    assert ours.loss.backend == "cpu" and ours.backend == "cpu"
    assert ours.get_config_dict() == {**theirs.get_config_dict(), "backend": "cpu"}
    assert ours.citation == theirs.citation and "2101.06983" in ours.citation
    assert ours.temperature == pytest.approx(1 / 12.0)
    ours.backend = "reference"  # delegated to the wrapped loss, like ST's hyperparameters
    ours.scale = 7.0
    assert ours.loss.backend == "reference" and ours.loss.scale == 7.0 and ours.get_config_dict()["scale"] == 7.0


def test_concept_equivalence_api_surface(tiny_model):
    kw = dict(scale=10.0, hard_negative_mode="both", bce_weight=0.3, bce_scale=15.0, bce_bias=-5.0, weight=0.7,
              backend="cpu")
    cached = CachedConceptEquivalenceLoss(tiny_model, mini_batch_size=8, mini_batch_num_tokens=64, **kw)
    plain = ConceptEquivalenceLoss(tiny_model, **kw)
    assert isinstance(cached.loss, ConceptEquivalenceLoss)
    assert cached.get_config_dict() == {**plain.get_config_dict(), "mini_batch_size": 8, "mini_batch_num_tokens": 64}
    for name in ("scale", "temperature", "hard_negative_mode", "bce_weight", "bce_scale", "bce_bias", "weight",
                 "gather_across_devices", "backend"):
        assert getattr(cached, name) == getattr(plain, name), name
        with pytest.raises(AttributeError):
            setattr(cached, name, getattr(plain, name))
    assert cached.citation == plain.citation and "@misc" in cached.citation


@pytest.mark.parametrize("cls", [CachedMultipleNegativesRankingLoss, CachedConceptEquivalenceLoss])
def test_docstrings(cls):
    doc = cls.__init__.__doc__
    for part in ("Args:", "References:", "Inputs:", "Example:", "SentenceTransformerTrainer", "2101.06983",
                 "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup"):
        assert part in doc, part


@pytest.mark.parametrize("cls", [CachedMultipleNegativesRankingLoss, CachedConceptEquivalenceLoss])
@pytest.mark.parametrize("kw,match", [
    (dict(mini_batch_num_tokens=0), "mini_batch_num_tokens must be a positive integer or None"),
    (dict(mini_batch_size=0), "mini_batch_size must be a positive integer"),
    (dict(mini_batch_size=2.5), "mini_batch_size must be a positive integer"),
])
def test_bad_mini_batching(cls, kw, match, tiny_model):
    with pytest.raises(ValueError, match=match):
        cls(tiny_model, **kw)


@pytest.mark.parametrize("make,match", [
    (lambda m: CachedConceptEquivalenceLoss(m, hard_negative_mode="margin"), "hard_negative_mode must be"),
    (lambda m: CachedConceptEquivalenceLoss(m, scale=-1.0), "scale must be"),
    (lambda m: CachedMultipleNegativesRankingLoss(m, partition_mode="both"), "partition_mode must be"),
    (lambda m: CachedMultipleNegativesRankingLoss(m, directions=(Q2D, "sideways")), "Invalid directions"),
])
def test_bad_loss_arguments(make, match, tiny_model):
    with pytest.raises(ValueError, match=match):
        make(tiny_model)


@pytest.mark.parametrize("cls", [CachedMultipleNegativesRankingLoss, CachedConceptEquivalenceLoss])
def test_static_embedding_model_is_rejected(cls, tiny_model):
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    static = SentenceTransformer(modules=[StaticEmbedding(tiny_model.tokenizer, embedding_dim=8)], device="cpu")
    with pytest.raises(ValueError, match="StaticEmbedding"):
        cls(static)


def test_one_column_is_rejected(tiny_model):
    with pytest.raises(ValueError, match="at least 2 input column"):
        CachedConceptEquivalenceLoss(tiny_model)([tiny_model.preprocess(ANCHORS)], None)


# ------------------------------------------------------------------------------------------------
# end to end with SentenceTransformerTrainer
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda m: CachedMultipleNegativesRankingLoss(m, mini_batch_size=2, directions=(Q2D, D2Q)),
    lambda m: CachedConceptEquivalenceLoss(m, mini_batch_size=2, weight=0.7),
], ids=["mnrl", "concept-equivalence"])
def test_cached_losses_train(make, tiny_model, tmp_path):
    loss = make(tiny_model)
    calls = []
    real = loss.calculate_loss

    def spy(reps, labels=None, *, with_backward=False):
        out = real(reps, labels, with_backward=with_backward)
        calls.append((out.item(), with_backward, [len(column) for column in reps]))
        return out

    loss.calculate_loss = spy
    data = pytest.importorskip("datasets").Dataset.from_dict(
        {"anchor": ANCHORS, "positive": POSITIVES, "negative_1": NEG_1, "negative_2": NEG_2})
    logged = train_two_steps(tiny_model, tmp_path, data, loss, batch_size=3)
    assert len(calls) == 2 and all(with_backward for _, with_backward, _ in calls)
    assert all(n_mini == [2, 2, 2, 2] for _, _, n_mini in calls)  # 3 rows in mini-batches of 2
    assert [value for value, _, _ in calls] == pytest.approx(logged, rel=1e-4)
    assert all(value > 0 for value, _, _ in calls)
