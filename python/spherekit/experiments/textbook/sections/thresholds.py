"""Section 6: threshold calibration. Labelled pairs from the retrieval set, the same for every model: per query
its gloss (label 1), its best BM25 non-relevant gloss (a hard 0) and a random non-relevant gloss (an easy 0).
For the backbone: the threshold reaching target_precision (calibrate.threshold_for_precision), the best-F1
threshold, and precision / recall / F1 at the rule of thumb 0.7."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

GRID = np.round(np.linspace(-0.2, 1.0, 61), 3)


def labelled_pairs(data, cfg) -> tuple[list[tuple[str, str]], list[int], list[str]]:
    """(pairs, labels, kinds) on data.test: kinds "positive" | "bm25" | "random"."""
    from ..mining import bm25_negatives, random_negatives

    one = dataclasses.replace(cfg, num_negatives=1)
    hard, _ = bm25_negatives(None, data.test, one, random.Random(cfg.seed))
    easy, _ = random_negatives(None, data.test, one, random.Random(cfg.seed + 1))
    pairs, labels, kinds = [], [], []
    for q, rel, h, e in zip(data.test.queries, data.test.relevant, hard, easy):
        for doc, label, kind in ((min(rel), 1, "positive"), (h[0], 0, "bm25"), (e[0], 0, "random")):
            pairs.append((q, data.test.corpus[doc]))
            labels.append(label)
            kinds.append(kind)
    return pairs, labels, kinds


def pair_cosines(model, pairs, cfg) -> np.ndarray:
    from ..evaluate import embed

    a, b = embed(model, [p[0] for p in pairs], cfg), embed(model, [p[1] for p in pairs], cfg)
    return (a * b).sum(1).double().numpy()


def run(cfg, backbone: str, data, unit_dir, progress: bool) -> dict:
    from ..calibrate import at_threshold, best_f1, threshold_for_precision
    from ..models import load

    pairs, labels, kinds = labelled_pairs(data, cfg)
    scores = pair_cosines(load(backbone, cfg), pairs, cfg)
    y, kinds = np.asarray(labels), np.asarray(kinds)
    calibrated = threshold_for_precision(scores, y, cfg.target_precision)
    rule = at_threshold(scores, y, cfg.rule_of_thumb)
    best = best_f1(scores, y)
    metrics = {
        "calibrated_threshold": None if calibrated is None else round(calibrated["threshold"], 4),
        "calibrated_recall": None if calibrated is None else round(calibrated["recall"], 4),
        "rule_precision": None if rule["precision"] is None else round(rule["precision"], 4),
        "rule_recall": round(rule["recall"], 4), "rule_f1": round(rule["f1"], 4),
        "best_f1_threshold": round(best["threshold"], 4), "best_f1": round(best["f1"], 4),
        "n_pairs": len(pairs), "positive_fraction": round(float(y.mean()), 4),
    }
    curve = [at_threshold(scores, y, float(t)) for t in GRID]
    details = {"calibrated": calibrated, "rule_of_thumb": rule, "best_f1": best,
               "score_quantiles": {k: np.quantile(scores[kinds == k], [0.1, 0.5, 0.9]).round(4).tolist()
                                   for k in ("positive", "bm25", "random")},
               "curve": {"threshold": GRID.tolist(), "precision": [c["precision"] for c in curve],
                         "recall": [c["recall"] for c in curve]}}
    return {"metrics": metrics, "details": details}
