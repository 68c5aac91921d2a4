"""ROC-AUC, Spearman and Pearson vs scikit-learn / scipy and hand-computed cases."""

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import roc_auc_score

from spherekit.evaluation.metrics import pearson, roc_auc, spearman


def test_roc_auc_hand_computed_with_ties():
    # positives 0.9, 0.5; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.5=0.5 -> 1/2, 0.5>0.1) = 3.5 / 4
    assert roc_auc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0]) == pytest.approx(0.875)
    assert roc_auc(torch.tensor([0.1, 0.2]), torch.tensor([True, False])) == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_auc_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 401)
    scores = np.round(rng.standard_normal(401) + labels, 1)  # rounding creates ties
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_spearman_pearson_match_scipy(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(137), 1)
    y = x + rng.standard_normal(137)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(torch.from_numpy(x), y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: roc_auc([0.1, 0.2], [1, 1]), "both classes"),
        (lambda: roc_auc([0.1, 0.2], [1, 2]), "0/1"),
        (lambda: roc_auc([0.1, 0.2, 0.3], [1, 0]), "same length"),
        (lambda: roc_auc([0.1, float("nan")], [1, 0]), "NaN"),
        (lambda: spearman([1, 1, 1], [1, 2, 3]), "constant"),
        (lambda: pearson([[1, 2]], [[1, 2]]), "1-D"),
        (lambda: pearson([1], [2]), "at least 2"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
