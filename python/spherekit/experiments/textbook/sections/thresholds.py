"""Section 6: threshold calibration. Labelled pairs from the retrieval set, the same for every model: per query
its gloss (label 1), its best BM25 non-relevant gloss (a hard 0) and a random non-relevant gloss (an easy 0).
For the backbone: the threshold reaching target_precision (calibrate.threshold_for_precision), the best-F1
threshold, and precision / recall / F1 at the rule of thumb 0.7."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

GRID = np.round(np.linspace(-0.2, 1.0, 61), 3)


def labelled_pairs(data, cfg, seed: int) -> tuple[list[tuple[str, str]], list[int], list[str]]:
    """(pairs, labels, kinds) on data.test: kinds "positive" | "bm25" | "random" (seed: of the random ones and the
    top-ups)."""
    from ..mining import bm25_negatives, random_negatives

    one = dataclasses.replace(cfg, num_negatives=1)
    hard, _ = bm25_negatives(None, data.test, one, random.Random(seed))
    easy, _ = random_negatives(None, data.test, one, random.Random(seed + 1))
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


def run(ctx) -> dict:
    from ..calibrate import at_threshold, best_f1, threshold_for_precision
    from ..models import load

    cfg = ctx.cfg
    pairs, labels, kinds = labelled_pairs(ctx.data, cfg, ctx.seed)
    scores = pair_cosines(load(ctx.backbone, cfg), pairs, cfg)
    y, kinds = np.asarray(labels), np.asarray(kinds)
    calibrated = threshold_for_precision(scores, y, cfg.target_precision)
    rule = at_threshold(scores, y, cfg.rule_of_thumb)
    best = best_f1(scores, y)
    metrics = {
        "calibrated/threshold": None if calibrated is None else round(calibrated["threshold"], 4),
        "calibrated/recall": None if calibrated is None else round(calibrated["recall"], 4),
        "rule of thumb/precision": None if rule["precision"] is None else round(rule["precision"], 4),
        "rule of thumb/recall": round(rule["recall"], 4), "rule of thumb/F1": round(rule["f1"], 4),
        "best F1/threshold": round(best["threshold"], 4), "best F1/F1": round(best["f1"], 4),
        "count (labelled pairs)": len(pairs), "share (positive labelled pairs)": round(float(y.mean()), 4),
    }
    curve = [at_threshold(scores, y, float(t)) for t in GRID]
    details = {"calibrated": calibrated, "rule_of_thumb": rule, "best_f1": best,
               "score_quantiles": {k: np.quantile(scores[kinds == k], [0.1, 0.5, 0.9]).round(4).tolist()
                                   for k in ("positive", "bm25", "random")},
               "curve": {"threshold": GRID.tolist(), "precision": [c["precision"] for c in curve],
                         "recall": [c["recall"] for c in curve]}}
    return {"metrics": metrics, "details": details}
