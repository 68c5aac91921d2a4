"""Similarity-threshold calibration on labelled pairs: "a pair is a match when cos >= t".

    at_threshold(scores, labels, 0.7)            # {"threshold", "precision", "recall", "f1", "predicted"}
    threshold_for_precision(scores, labels, 0.9) # the lowest t whose precision reaches 0.9 (most recall), or None
    best_f1(scores, labels)                      # the t of the highest F1

Candidate thresholds are the observed scores; ties are all in or all out.
"""

from __future__ import annotations

import numpy as np


def _check(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    if s.ndim != 1 or s.shape != y.shape or s.size == 0:
        raise ValueError(f"scores and labels must be non-empty 1-D arrays of one length, got {s.shape}, {y.shape}")
    if not np.isin(y, (0, 1)).all() or y.sum() == 0:
        raise ValueError("labels must be 0/1 with at least one positive")
    return s, y.astype(bool)


def at_threshold(scores, labels, threshold: float) -> dict:
    s, y = _check(scores, labels)
    pred = s >= threshold
    tp = int((pred & y).sum())
    precision = tp / int(pred.sum()) if pred.any() else None
    recall = tp / int(y.sum())
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return {"threshold": float(threshold), "precision": precision, "recall": recall, "f1": f1,
            "predicted": int(pred.sum())}


def _curve(s: np.ndarray, y: np.ndarray):
    """(thresholds ascending, precision, recall) at the distinct scores (scikit-learn's precision_recall_curve,
    without its final threshold-less point)."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(y, s)
    return thresholds, precision[:-1], recall[:-1]


def threshold_for_precision(scores, labels, target: float) -> dict | None:
    """The lowest threshold whose precision is >= target (so the highest recall at that precision); None when no
    threshold reaches it."""
    s, y = _check(scores, labels)
    thresholds, precision, _ = _curve(s, y)
    ok = np.nonzero(precision >= target - 1e-12)[0]
    return None if ok.size == 0 else at_threshold(s, y, float(thresholds[ok[0]]))


def best_f1(scores, labels) -> dict:
    """The threshold of the highest F1 (the highest such threshold on ties)."""
    s, y = _check(scores, labels)
    thresholds, precision, recall = _curve(s, y)
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    return at_threshold(s, y, float(thresholds[len(f1) - 1 - int(np.argmax(f1[::-1]))]))
