"""SentenceEvaluator subclasses of spherekit (imported on demand: `from spherekit.evaluation.evaluators import X`).

    RetrievalEvaluator        queries vs a pool: R@k, MRR, nDCG@10, Acc@1 (NanoBEIR/BEIR, DBpedia, ...)
    ConceptRetrievalEvaluator t2d / d2t R@k and MRR, pair ROC-AUC (000_*)
    GeometryEvaluator         anisotropy, effective rank
    LayerwiseEvaluator        per-layer MRR and anisotropy
    NPParaphraseEvaluator     NP paraphrase R@1 / R@10 by modifier family
    ClusteringEvaluator       V-measure (spherical k-means), CD-r (003_*)
    STSEvaluator              Spearman x100 (001_*)
"""

from __future__ import annotations

import importlib

_WHERE = {
    "RetrievalEvaluator": "retrieval",
    "ConceptRetrievalEvaluator": "concept",
    "GeometryEvaluator": "geometry",
    "LayerwiseEvaluator": "layerwise",
    "NPParaphraseEvaluator": "np_paraphrase",
    "ClusteringEvaluator": "clustering",
    "STSEvaluator": "sts",
}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
