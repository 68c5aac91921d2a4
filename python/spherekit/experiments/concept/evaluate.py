"""Evaluation of one condition's encoder on every suite, each distinct text encoded once.

Per evaluated split (in-domain, head-holdout; source-holdout for a source-holdout model): t2d / d2t R@1, R@10 and MRR and the pair ROC-AUC against a
random definition (ConceptRetrievalEvaluator), the five stress-test ROC-AUCs and the pair ROC-AUC against the
hard negatives (StressTestEvaluator, negatives generated once per split). In-domain only: anisotropy and
effective rank of the split's distinct terms and definitions (GeometryEvaluator) and per-layer t2d MRR and
anisotropy (LayerwiseEvaluator). With data_dir: NP paraphrase R@1 / R@10 per modifier family and DBpedia
R@10 / MRR. All suites share one spherekit.evaluation.cache.EmbeddingCache: a text is encoded once, together
with its per-layer mean pools.

Metric keys are "<split>/<metric>" ("in-domain/R@10 (term to definition)"), "np/<metric>", "dbpedia/<metric>".
"""

from __future__ import annotations

import time

from .spec import SOURCE_HOLDOUT


def _prefixed(prefix: str, metrics: dict) -> dict:
    return {f"{prefix}/{k}": float(v) for k, v in metrics.items()}


def evaluate(model, data, cfg, *, source_holdout: bool = False, progress: bool = False) -> tuple[dict, dict]:
    """-> (metrics, details): details holds the per-layer curves and the encode count for the card.
    A source-holdout model is evaluated on that split only (concept retrieval and stress tests); a main model
    on every other split and the data_dir suites."""
    from ...evaluation.cache import EmbeddingCache
    from ...evaluation.evaluators.concept import ConceptRetrievalEvaluator, build_pools
    from ...evaluation.evaluators.geometry import GeometryEvaluator, split_texts
    from ...evaluation.evaluators.layerwise import LayerwiseEvaluator
    from ...evaluation.evaluators.stress import StressTestEvaluator

    start = time.perf_counter()
    cache = EmbeddingCache(model, batch_size=cfg.eval_batch_size, show_progress=progress)
    bs = cfg.eval_batch_size
    metrics, details = {}, {}
    for kind, es in data.eval_sets.items():
        if (kind == SOURCE_HOLDOUT) != source_holdout:
            continue
        metrics.update(_prefixed(kind, ConceptRetrievalEvaluator(es.records, seed=cfg.data_seed, batch_size=bs)(cache)))
        stress = StressTestEvaluator(es.records, negatives=(es.negatives, es.rule_stats), seed=cfg.data_seed,
                                     batch_size=bs)
        metrics.update(_prefixed(kind, stress(cache)))
        if kind != "in-domain":
            continue
        texts, labels = split_texts(es.records)
        metrics.update(_prefixed(kind, GeometryEvaluator(texts, labels, seed=cfg.data_seed, batch_size=bs)(cache)))
        terms, defs, t2d, _, _, _ = build_pools(es.records)
        layerwise = LayerwiseEvaluator(terms, defs, t2d, seed=cfg.data_seed, batch_size=bs)
        metrics.update(_prefixed(kind, layerwise(cache)))
        details["layers"] = {k: {str(layer): v for layer, v in layerwise.last_details[k].items()}
                             for k in ("MRR", "anisotropy")}
    if data.np_items and not source_holdout:
        from ...evaluation.evaluators.np_paraphrase import NPParaphraseEvaluator

        metrics.update(_prefixed("np", NPParaphraseEvaluator(data.np_items, batch_size=bs)(cache)))
    if data.dbpedia is not None and not source_holdout:
        from ...evaluation.evaluators.retrieval import RetrievalEvaluator

        db = RetrievalEvaluator.from_data(data.dbpedia, ks=(1, 10), ndcg_k=None, acc1=False, label="",
                                          batch_size=bs)
        metrics.update(_prefixed("dbpedia", db(cache)))
    details.update(encoded_texts=cache.encoded, seconds=round(time.perf_counter() - start, 2))
    return metrics, details
