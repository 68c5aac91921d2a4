"""Evaluation: metrics, evaluators (sentence-transformers SentenceEvaluator subclasses), plots and the
`spherekit eval` runner. Submodules are imported on demand.

    spherekit.evaluation.metrics      R@k, MRR, nDCG@k, Acc@1, ROC-AUC, Spearman, Pearson
    spherekit.evaluation.geometry     anisotropy, effective rank, PCA / MDS projections
    spherekit.evaluation.clustering   spherical k-means, V-measure, CD-r, circumplex distance
    spherekit.evaluation.search       exact top-k cosine search (chunked torch or faiss)
    spherekit.evaluation.encode       sentence and per-layer embeddings
    spherekit.evaluation.evaluators   the evaluators and every suite's module
    spherekit.evaluation.suites       the suite registry, suites grouped by what they measure
    spherekit.evaluation.plots        PNG plots;       spherekit.evaluation.runner  `spherekit eval`
spherekit.evaluation.stress / nearmiss / emotion are deprecated paths of spherekit.evaluation.evaluators.stress / ...
"""
