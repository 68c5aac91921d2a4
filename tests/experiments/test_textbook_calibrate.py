"""Threshold calibration (textbook section 6) on a hand-made labelled fixture whose answers are worked out below,
the claims' own F1 (the corpus-transfer bootstrap) and calibration part, and the concentration-of-measure number:
std of random unit-vector cosines ~ 1/sqrt(d)."""

import math

import numpy as np
import pytest

from spherekit.experiments.textbook.calibrate import at_threshold, best_f1, threshold_for_precision
from spherekit.experiments.textbook.sections.concentration import cosine_std

# sorted by score: tp / predicted at each distinct threshold (4 positives in all)
#   0.95: 1/1 (P 1.00, R .25)   0.90: 2/2 (P 1.00, R .50)   0.80: 3/4 (P .75, R .75; the two 0.8s tie)
#   0.60: 4/5 (P .80, R 1.00)   0.50: 4/6 (P .667)           0.30: 4/7 (P .571)
SCORES = [0.8, 0.3, 0.95, 0.6, 0.8, 0.9, 0.5]
LABELS = [0, 0, 1, 1, 1, 1, 0]


@pytest.mark.parametrize("target, threshold, recall", [
    (1.0, 0.9, 0.5), (0.9, 0.9, 0.5), (0.8, 0.6, 1.0), (0.75, 0.6, 1.0), (0.6, 0.5, 1.0), (0.5, 0.3, 1.0)])
def test_threshold_for_precision_by_hand(target, threshold, recall):
    got = threshold_for_precision(SCORES, LABELS, target)
    assert got["threshold"] == pytest.approx(threshold) and got["recall"] == pytest.approx(recall)
    assert got["precision"] >= target - 1e-12


def test_at_threshold_counts_ties_and_the_rule_of_thumb():
    got = at_threshold(SCORES, LABELS, 0.7)  # 0.95, 0.9, 0.8, 0.8 predicted: 3 right
    assert got["predicted"] == 4 and got["precision"] == pytest.approx(0.75) and got["recall"] == pytest.approx(0.75)
    assert at_threshold(SCORES, LABELS, 0.8)["predicted"] == 4
    assert at_threshold(SCORES, LABELS, 0.99)["precision"] is None


def test_best_f1_by_hand():
    got = best_f1(SCORES, LABELS)  # F1: 0.9 -> .667, 0.8 -> .75, 0.6 -> .889, 0.5 -> .8
    assert got["threshold"] == pytest.approx(0.6) and got["f1"] == pytest.approx(2 * 0.8 / 1.8)


def test_unreachable_precision_and_bad_input():
    assert threshold_for_precision([0.9, 0.8], [0, 1], 0.9) is None
    with pytest.raises(ValueError, match="positive"):
        threshold_for_precision([0.9, 0.8], [0, 0], 0.5)
    with pytest.raises(ValueError):
        at_threshold([0.9], [1, 0], 0.5)


@pytest.mark.parametrize("d", [64, 384, 768])
def test_random_unit_vector_cosines_have_std_one_over_sqrt_d(d):
    std = cosine_std(1500, d, seed=0)
    assert std == pytest.approx(1 / math.sqrt(d), rel=0.03)
    assert abs(std - 1 / math.sqrt(2 * d)) > 0.2 / math.sqrt(d)  # not just any small number


def test_the_chapters_number_at_768():
    assert round(cosine_std(2000, 768, seed=0), 3) == 0.036


@pytest.mark.parametrize("t", [0.3, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])
def test_the_claims_f1_is_the_calibration_f1(t):
    from spherekit.experiments.textbook.checks import f1_at

    assert f1_at(np.array(SCORES), np.array(LABELS, float), t) == pytest.approx(at_threshold(SCORES, LABELS, t)["f1"])


def test_calibration_part_is_a_seeded_share_of_the_queries():
    import dataclasses

    from spherekit.experiments.textbook.sections.thresholds import calibration_queries
    from spherekit.experiments.textbook.spec import EXPERIMENT

    cfg = EXPERIMENT.make_config("tiny")
    mask = calibration_queries(101, cfg)
    assert mask.sum() == round(cfg.calibration_share * 101) and mask.tolist() == calibration_queries(101, cfg).tolist()
    other = calibration_queries(101, dataclasses.replace(cfg, data_seed=1))
    assert other.tolist() != mask.tolist()
    assert calibration_queries(10, dataclasses.replace(cfg, calibration_share=0.3)).sum() == 3
