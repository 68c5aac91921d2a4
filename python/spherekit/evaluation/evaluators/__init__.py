"""SentenceEvaluator subclasses of spherekit (imported on demand: `from spherekit.evaluation.evaluators import X`).

    RetrievalEvaluator        queries vs a pool: R@k, MRR, nDCG@10, Acc@1 (NanoBEIR/BEIR, DBpedia, ...)
    ConceptRetrievalEvaluator t2d / d2t R@k and MRR, pair ROC-AUC ("Principles of Concept Representation in
    Sentence Encoders" (arXiv:2606.06994))
    StressTestEvaluator       ROC-AUC and accuracy of true pairs against rule-based hard negatives (same paper,
                              appendix G)
    NearMissEvaluator         accuracy and ROC-AUC of anchor-positive pairs against structural near-misses
                              (arXiv:2604.16351)
    GeometryEvaluator         anisotropy, effective rank
    LayerwiseEvaluator        per-layer MRR and anisotropy
    NPParaphraseEvaluator     NP paraphrase R@1 / R@10 by modifier family
    ClusteringEvaluator       V-measure (spherical k-means), CD-r ("Mapping the Circumplex of Affect",
                              arXiv:2601.06575)
    EmotionCircumplexEvaluator  ClusteringEvaluator on the emotion set with the circumplex label distance
    STSEvaluator              Spearman x100 (DefSent+ (arXiv:2405.16153))

The modules named after a suite (concept, stress, nearmiss, geometry, layerwise, emotion) also hold that suite's
make_evaluator (spherekit.evaluation.suites).
"""

from __future__ import annotations

import importlib

_WHERE = {
    "RetrievalEvaluator": "retrieval",
    "ConceptRetrievalEvaluator": "concept",
    "StressTestEvaluator": "stress",
    "NearMissEvaluator": "nearmiss",
    "GeometryEvaluator": "geometry",
    "LayerwiseEvaluator": "layerwise",
    "NPParaphraseEvaluator": "np_paraphrase",
    "ClusteringEvaluator": "clustering",
    "EmotionCircumplexEvaluator": "emotion",
    "STSEvaluator": "sts",
}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
