"""Ranking metrics vs hand-computed cases, sklearn's ndcg_score and a plain-Python loop oracle."""

import math
import random

import numpy as np
import pytest
import torch

from spherekit.evaluation.metrics import accuracy_at_1, mrr, ndcg_at_k, recall_at_k


def _loop_oracle(ranked, relevant, k):
    """Per-query (recall@k, mrr@k, ndcg@k, acc@1) written as plain loops."""
    out = []
    for row, rel in zip(ranked.tolist(), relevant):
        rel = rel if isinstance(rel, dict) else {d: 1.0 for d in rel}
        seen, gains = set(), []
        for d in row[:k]:
            gains.append(rel.get(d, 0.0) if d >= 0 and d not in seen else 0.0)
            seen.add(d)
        dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains))
        ideal = sorted(rel.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
        first = next((r + 1 for r, g in enumerate(gains) if g > 0), None)
        out.append((sum(g > 0 for g in gains) / len(rel), 1.0 / first if first else 0.0, dcg / idcg, float(gains[0] > 0)))
    return np.array(out)


def test_hand_computed():
    ranked = torch.tensor([[5, 3, 9, 1], [2, 7, 4, 8]])
    relevant = [{3: 1, 1: 1}, {8}]
    # query 0: hits at ranks 2 and 4; query 1: hit at rank 4
    assert recall_at_k(ranked, relevant, 2) == pytest.approx((0.5 + 0.0) / 2)
    assert recall_at_k(ranked, relevant, 4) == pytest.approx(1.0)
    assert mrr(ranked, relevant) == pytest.approx((1 / 2 + 1 / 4) / 2)
    assert mrr(ranked, relevant, k=3) == pytest.approx((1 / 2 + 0) / 2)
    assert accuracy_at_1(ranked, relevant) == 0.0
    dcg0 = 1 / math.log2(3) + 1 / math.log2(5)
    idcg0 = 1 + 1 / math.log2(3)
    dcg1 = 1 / math.log2(5)
    assert ndcg_at_k(ranked, relevant, k=10) == pytest.approx((dcg0 / idcg0 + dcg1 / 1.0) / 2)
    per = ndcg_at_k(ranked, relevant, k=10, reduction="none")
    assert per.shape == (2,) and per.dtype == torch.float64
    assert per[1].item() == pytest.approx(dcg1)


def test_graded_gains_and_ideal_order():
    ranked = torch.tensor([[10, 20, 30]])
    relevant = [{30: 3, 10: 1}]
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(ranked, relevant, k=3) == pytest.approx(dcg / idcg)
    # k=1: only the top rank counts, the ideal is the largest gain
    assert ndcg_at_k(ranked, relevant, k=1) == pytest.approx(1 / 3)
    assert accuracy_at_1(ranked, relevant) == 1.0


def test_padding_and_duplicates_do_not_count():
    ranked = torch.tensor([[4, 4, -1, 7], [-1, -1, -1, -1]])
    relevant = [{4, 7}, {0}]
    assert recall_at_k(ranked, relevant, 4, reduction="none").tolist() == [1.0, 0.0]
    assert mrr(ranked, relevant, reduction="none").tolist() == [1.0, 0.0]
    dcg = 1 + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert ndcg_at_k(ranked, relevant, 10, reduction="none")[0].item() == pytest.approx(dcg / idcg)


def test_matches_sklearn_ndcg_on_full_rankings():
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(0)
    n_q, n_docs = 13, 37
    y_true = rng.integers(0, 4, size=(n_q, n_docs)) * (rng.random((n_q, n_docs)) < 0.2)
    y_true[:, 0] = np.maximum(y_true[:, 0], 1)  # every query has a relevant doc
    scores = rng.standard_normal((n_q, n_docs))
    ranked = torch.from_numpy(np.argsort(-scores, axis=1).copy())
    relevant = [{d: float(g) for d, g in enumerate(row) if g > 0} for row in y_true]
    for k in (1, 5, 10, 37):
        assert ndcg_at_k(ranked, relevant, k=k) == pytest.approx(ndcg_score(y_true, scores, k=k), abs=1e-12)


@pytest.mark.parametrize("k", [1, 3, 10, 50])
def test_random_against_loop_oracle(k):
    rnd = random.Random(k)
    n_q, width = 41, 17
    ranked = torch.tensor([[rnd.choice([-1] + list(range(30))) for _ in range(width)] for _ in range(n_q)])
    relevant = []
    for _ in range(n_q):
        ids = rnd.sample(range(30), rnd.randint(1, 5))
        relevant.append({d: float(rnd.randint(1, 3)) for d in ids} if rnd.random() < 0.5 else set(ids))
    expect = _loop_oracle(ranked, relevant, k)
    np.testing.assert_allclose(recall_at_k(ranked, relevant, k, reduction="none").numpy(), expect[:, 0], atol=1e-12)
    np.testing.assert_allclose(mrr(ranked, relevant, k, reduction="none").numpy(), expect[:, 1], atol=1e-12)
    np.testing.assert_allclose(ndcg_at_k(ranked, relevant, k, reduction="none").numpy(), expect[:, 2], atol=1e-12)
    np.testing.assert_allclose(accuracy_at_1(ranked, relevant, reduction="none").numpy(), _loop_oracle(ranked, relevant, 1)[:, 3])


def test_large_ids_and_numpy_input():
    ranked = np.array([[10**12, 3], [7, 10**12]])
    relevant = [{10**12}, {10**12: 2.0}]
    assert mrr(ranked, relevant) == pytest.approx(0.75)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mrr(torch.zeros(3, dtype=torch.long), [{1}] * 3), "2 dimensions"),
        (lambda: mrr(torch.zeros(2, 3), [{1}] * 2), "integer dtype"),
        (lambda: mrr(torch.zeros(2, 3, dtype=torch.long), [{1}]), "expected 2"),
        (lambda: mrr(torch.zeros(1, 3, dtype=torch.long), [set()]), r"relevant\[0\] is empty"),
        (lambda: mrr(torch.zeros(1, 3, dtype=torch.long), [{1: 0}]), "gain > 0"),
        (lambda: mrr(torch.zeros(1, 3, dtype=torch.long), [{-1}]), ">= 0"),
        (lambda: mrr(torch.zeros(1, 3, dtype=torch.long), ["abc"]), "dict"),
        (lambda: recall_at_k(torch.zeros(1, 3, dtype=torch.long), [{1}], 0), "k must be"),
        (lambda: mrr(torch.zeros(1, 3, dtype=torch.long), [{1}], reduction="sum"), "reduction"),
        (lambda: mrr(torch.zeros(0, 3, dtype=torch.long), []), "empty"),
    ],
)
def test_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
