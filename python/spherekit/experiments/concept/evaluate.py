"""Evaluation of one condition's encoder on every suite, each distinct text encoded once.

Per evaluated split (in-domain, head-holdout; source-holdout for a source-holdout model): t2d / d2t R@1, R@10 and
MRR and the pair ROC-AUC against a random definition (ConceptRetrievalEvaluator), the five stress-test ROC-AUCs and
the pair ROC-AUC against the hard negatives (StressTestEvaluator, negatives generated once per split), and with
random swaps the harder split of nearest swaps ("<split>/nearest swaps/ROC-AUC (<rule>)": the three swap rules, the
replacement nearest to the definition; data.py). In-domain
only: anisotropy and effective rank of the split's distinct terms and definitions (GeometryEvaluator) and per-layer
t2d MRR and anisotropy (LayerwiseEvaluator). With data_dir: NP paraphrase R@1 / R@10 per modifier family and DBpedia
R@10 / MRR. All suites share one spherekit.evaluation.cache.EmbeddingCache: a text is encoded once, together
with its per-layer mean pools.

Metric keys are "<split>/<metric>" ("in-domain/R@10 (term to definition)"), "np/<metric>", "dbpedia/<metric>".

Per-item values (the claims' bootstraps, spherekit.experiments.api.uncertainty), in-domain only: t2d R@10 and MRR per
term query (the evaluator's query order; lists, as claims.difference reads them), and per test pair the cosine of
(term, definition) ("cosine (true pair)") and of (term, each rule's negative) ("cosine (<rule title>)", "-" where
the rule did not apply), from which every stress ROC-AUC and the pair ROC-AUC (hard negatives) are recomputed on
resampled test pairs (noise.py); for anisotropy and effective rank, which are not means over items, their
GEOMETRY_RESAMPLES bootstrap replicates under common random numbers ("anisotropy (bootstrap replicates)",
spherekit.evaluation.geometry.resampled_geometry: the same resamples for every condition and seed); R@10 per
query of the NP paraphrase suite and of DBpedia when they ran. For the conditions the per-layer claim reads
(LAYER_ITEM_CONDITIONS), per layer l the term queries' first relevant t2d ranks ("first relevant rank (layer l)",
one string of integers) and GEOMETRY_RESAMPLES replicates of the layer's anisotropy ("anisotropy (layer l)
(bootstrap replicates)", geometry.resampled_anisotropy: the same resamples at every layer and in every run). The
cosines are one string of space-separated 4-decimal numbers per key: six values per test pair in every run, and the
card's JSON writes a list one value per line (about 20 bytes each; a string takes 7).
"""

from __future__ import annotations

import time

from ..api.uncertainty import per_item
from .data import NEAREST_SPLIT
from .spec import SOURCE_HOLDOUT

REPLICATES = "bootstrap replicates"
LAYER_ITEM_CONDITIONS = ("B0", "B1")  # whose runs keep per-layer items (the final-layer claim P2 reads them)


def replicates_key(metric: str) -> str:
    """Where a run keeps the bootstrap replicates of a geometry metric ("in-domain/anisotropy" -> "in-domain/anisotropy
    (bootstrap replicates)")."""
    return f"{metric} ({REPLICATES})"


def _prefixed(prefix: str, metrics: dict) -> dict:
    return {f"{prefix}/{k}": float(v) for k, v in metrics.items()}


def stress_items(kind: str, records, negatives, stress) -> dict[str, list]:
    """The per-pair cosines of a stress evaluation (module docstring); `stress` ran on (records, negatives)."""
    from ...data.hard_negatives import RULE_TITLES, RULES

    index = {}
    for i, r in enumerate(records):
        index.setdefault((r.term, r.definition), i)
    details = stress.last_details
    out = {f"{kind}/cosine (true pair)": packed(details["positive_cosines"].tolist())}
    for rule in RULES:
        title = RULE_TITLES[rule]
        column: list = [None] * len(records)
        mine = [n for n in negatives if n.rule == rule]
        for n, c in zip(mine, details[title].tolist() if mine else []):
            column[index[(n.term, n.definition)]] = c
        if mine:
            out[f"{kind}/cosine ({title})"] = packed(column)
    return out


def rank_key(kind: str, layer: int) -> str:
    """Where a run keeps the per-query first relevant t2d ranks of one layer ("in-domain/first relevant rank (layer
    3)")."""
    return f"{kind}/first relevant rank (layer {layer})"


def packed(values) -> str:
    """Cosines as one string ("0.5123 - -0.0412"; "-" for None); noise.unpacked reads it back."""
    return " ".join("-" if v is None else f"{v:.4f}" for v in values)


def evaluate(model, data, cfg, *, source_holdout: bool = False, progress: bool = False,
             layer_items: bool = False) -> tuple[dict, dict, dict]:
    """-> (metrics, details, per_item): details holds the per-layer curves and the encode count for the card;
    per_item the in-domain values per item (module docstring; the per-layer ones with layer_items).
    A source-holdout model is evaluated on that split only (concept retrieval and stress tests); a main model
    on every other split and the data_dir suites."""
    from ...data.hard_negatives import SWAP_RULES
    from ...evaluation.cache import EmbeddingCache
    from ...evaluation.evaluators.concept import ConceptRetrievalEvaluator, build_pools
    from ...evaluation.evaluators.geometry import GeometryEvaluator, split_texts
    from ...evaluation.evaluators.layerwise import LayerwiseEvaluator
    from ...evaluation.evaluators.stress import StressTestEvaluator
    from ...evaluation.geometry import GEOMETRY_RESAMPLES, resampled_geometry

    start = time.perf_counter()
    cache = EmbeddingCache(model, batch_size=cfg.eval_batch_size, show_progress=progress)
    bs = cfg.eval_batch_size
    metrics, details, items = {}, {}, {}
    for kind, es in data.eval_sets.items():
        if (kind == SOURCE_HOLDOUT) != source_holdout:
            continue
        concept = ConceptRetrievalEvaluator(es.records, seed=cfg.data_seed, batch_size=bs)
        metrics.update(_prefixed(kind, concept(cache)))
        stress = StressTestEvaluator(es.records, negatives=(es.negatives, es.rule_stats), seed=cfg.data_seed,
                                     batch_size=bs)
        metrics.update(_prefixed(kind, stress(cache)))
        if es.nearest is not None:
            harder = StressTestEvaluator(es.records, rules=SWAP_RULES, negatives=es.nearest, seed=cfg.data_seed,
                                         batch_size=bs)
            metrics.update(_prefixed(f"{kind}/{NEAREST_SPLIT}", harder(cache)))
        if kind != "in-domain":
            continue
        t2d = concept.last_details["t2d"]
        items.update({f"{kind}/{m} (term to definition)": per_item(t2d[m]) for m in ("R@10", "MRR")})
        items.update(stress_items(kind, es.records, es.negatives, stress))
        texts, labels = split_texts(es.records)
        geometry = GeometryEvaluator(texts, labels, seed=cfg.data_seed, batch_size=bs)
        metrics.update(_prefixed(kind, geometry(cache)))
        replicates = resampled_geometry(geometry.last_details["embeddings"], seed=cfg.data_seed)
        items.update({replicates_key(f"{kind}/{k}"): per_item(v) for k, v in replicates.items()})
        terms, defs, t2d, _, _, _ = build_pools(es.records)
        layerwise = LayerwiseEvaluator(terms, defs, t2d, seed=cfg.data_seed, batch_size=bs,
                                       resamples=GEOMETRY_RESAMPLES if layer_items else 0)
        metrics.update(_prefixed(kind, layerwise(cache)))
        layers = layerwise.last_details
        details["layers"] = {k: {str(layer): v for layer, v in layers[k].items()} for k in ("MRR", "anisotropy")}
        if layer_items:
            for layer in layers["layers"]:
                items[rank_key(kind, layer)] = " ".join(map(str, layers["ranks"][layer]))
                items[replicates_key(f"{kind}/anisotropy (layer {layer})")] = per_item(
                    layers["anisotropy replicates"][layer])
    if data.np_items and not source_holdout:
        from ...evaluation.evaluators.np_paraphrase import NPParaphraseEvaluator

        np_eval = NPParaphraseEvaluator(data.np_items, batch_size=bs)
        metrics.update(_prefixed("np", np_eval(cache)))
        items["np/R@10 (NP paraphrase)"] = per_item(np_eval.last_details["per_query"]["R@10"])
    if data.dbpedia is not None and not source_holdout:
        from ...evaluation.evaluators.retrieval import RetrievalEvaluator

        db = RetrievalEvaluator.from_data(data.dbpedia, ks=(1, 10), ndcg_k=None, acc1=False, label="",
                                          batch_size=bs)
        metrics.update(_prefixed("dbpedia", db(cache)))
        items["dbpedia/R@10"] = per_item(db.last_details["per_query"]["R@10"])
    details.update(encoded_texts=cache.encoded, seconds=round(time.perf_counter() - start, 2))
    return metrics, details, items
