"""Section 6: threshold calibration on labelled pairs of two corpora, each pair "a match when cos >= t":

    terms      a held-out term and a gloss (the retrieval set)
    sentences  a held-out WordNet example sentence and a gloss (the example-sentence set)

Per query: its gloss (label 1), its best BM25 non-relevant gloss (a hard 0) and a random non-relevant gloss (an
easy 0), drawn with the data seed (the pairs are data, the same for every seed and every model). On the terms
corpus: the threshold reaching target_precision (calibrate.threshold_for_precision), the best-F1 threshold, and
precision / recall / F1 at the rule of thumb 0.7. Corpus transfer ("calibrate on YOUR corpus"): each corpus's
queries are split (data seed) into a calibration part (calibration_share) and an evaluation part; the best-F1
threshold of each calibration part is applied to both evaluation parts, whose pair cosines and labels are kept
(per_item, query by query: KINDS) for the claim's bootstrap. The backbone is frozen: the measurement is made once
for every seed."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from ...api.uncertainty import per_item

GRID = np.round(np.linspace(-0.2, 1.0, 61), 3)
KINDS = ("positive", "bm25", "random")  # the pairs of one query, in this order
CORPORA = ("terms", "sentences")
EVAL_COSINE, EVAL_LABEL = "cosine (evaluation pairs)", "label (evaluation pairs)"


def labelled_pairs(retrieval, cfg, seed: int) -> tuple[list[tuple[str, str]], list[int], list[str]]:
    """(pairs, labels, kinds) on a data.Retrieval, query by query in KINDS order (seed: of the random ones and the
    top-ups)."""
    from ..mining import bm25_negatives, random_negatives

    one = dataclasses.replace(cfg, num_negatives=1)
    hard, _ = bm25_negatives(None, retrieval, one, random.Random(seed))
    easy, _ = random_negatives(None, retrieval, one, random.Random(seed + 1))
    pairs, labels, kinds = [], [], []
    for q, rel, h, e in zip(retrieval.queries, retrieval.relevant, hard, easy):
        for doc, label, kind in zip((min(rel), h[0], e[0]), (1, 0, 0), KINDS):
            pairs.append((q, retrieval.corpus[doc]))
            labels.append(label)
            kinds.append(kind)
    return pairs, labels, kinds


def pair_cosines(model, pairs, cfg) -> np.ndarray:
    from ..evaluate import embed

    a, b = embed(model, [p[0] for p in pairs], cfg), embed(model, [p[1] for p in pairs], cfg)
    return (a * b).sum(1).double().numpy()


def calibration_queries(n_queries: int, cfg) -> np.ndarray:
    """A boolean mask over the queries: True for the calibration part (data seed)."""
    order = list(range(n_queries))
    random.Random(cfg.data_seed).shuffle(order)
    mask = np.zeros(n_queries, bool)
    mask[order[:max(1, round(cfg.calibration_share * n_queries))]] = True
    return mask


def _rounded(x):
    return None if x is None else round(x, 4)


def measure(model, data, cfg) -> dict:
    """Every measurement of the section (see the module docstring): {"metrics", "per_item", "details"}."""
    from ..calibrate import at_threshold, best_f1, threshold_for_precision

    scores, labels, kinds = {}, {}, {}
    for corpus, retrieval in zip(CORPORA, (data.test, data.example_test)):
        pairs, y, k = labelled_pairs(retrieval, cfg, cfg.data_seed)
        scores[corpus], labels[corpus], kinds[corpus] = pair_cosines(model, pairs, cfg), np.asarray(y), np.asarray(k)
    s, y = scores["terms"], labels["terms"]
    calibrated = threshold_for_precision(s, y, cfg.target_precision)
    rule, best = at_threshold(s, y, cfg.rule_of_thumb), best_f1(s, y)
    metrics = {
        "calibrated/threshold": None if calibrated is None else round(calibrated["threshold"], 4),
        "calibrated/recall": None if calibrated is None else round(calibrated["recall"], 4),
        "rule of thumb/precision": _rounded(rule["precision"]),
        "rule of thumb/recall": round(rule["recall"], 4), "rule of thumb/F1": round(rule["f1"], 4),
        "best F1/threshold": round(best["threshold"], 4), "best F1/F1": round(best["f1"], 4),
        "count (labelled pairs)": len(s), "share (positive labelled pairs)": round(float(y.mean()), 4),
    }
    # corpus transfer: calibrate on one part of each corpus, measure on the other part of both
    parts, items = {}, {}
    for corpus in CORPORA:
        per_query = calibration_queries(len(scores[corpus]) // len(KINDS), cfg)
        cal = np.repeat(per_query, len(KINDS))
        parts[corpus] = (scores[corpus][~cal], labels[corpus][~cal])
        t = best_f1(scores[corpus][cal], labels[corpus][cal])["threshold"]
        metrics[f"{corpus}/threshold (best F1, calibration part)"] = round(t, 4)
        items[f"{corpus}/{EVAL_COSINE}"] = per_item(parts[corpus][0])
        items[f"{corpus}/{EVAL_LABEL}"] = per_item(parts[corpus][1])
    for corpus in CORPORA:
        for source in CORPORA:
            t = metrics[f"{source}/threshold (best F1, calibration part)"]
            metrics[f"{corpus}/F1 (evaluation part, {source} threshold)"] = round(at_threshold(*parts[corpus], t)["f1"],
                                                                                4)
    sb, yb = scores["sentences"], labels["sentences"]
    metrics["sentences/best F1/F1"] = round(best_f1(sb, yb)["f1"], 4)
    metrics["sentences/rule of thumb/F1"] = round(at_threshold(sb, yb, cfg.rule_of_thumb)["f1"], 4)
    curve = [at_threshold(s, y, float(t)) for t in GRID]
    details = {"calibrated": calibrated, "rule_of_thumb": rule, "best_f1": best,
               "score_quantiles": {corpus: {k: np.quantile(scores[corpus][kinds[corpus] == k], [0.1, 0.5, 0.9])
                                            .round(4).tolist() for k in KINDS} for corpus in CORPORA},
               "curve": {"threshold": GRID.tolist(), "precision": [c["precision"] for c in curve],
                         "recall": [c["recall"] for c in curve]}}
    return {"metrics": metrics, "per_item": items, "details": details}


def run(ctx) -> dict:
    from ..models import load

    return ctx.cached("thresholds", lambda: measure(load(ctx.backbone, ctx.cfg), ctx.data, ctx.cfg), shared=True)
