"""A reproduction of "Pooling Matters for Frozen Encoders" (a toy paper, 2026; no author, no arXiv id): on term ->
gloss retrieval, mean pooling of a frozen sentence encoder beats CLS pooling, 20 steps of MNRL fine-tuning close
most of the gap, and max pooling is no better than mean pooling when frozen. Experiment name: "pooling".

It lives outside the spherekit package; it is found through
SPHEREKIT_EXPERIMENTS=pooling=tests.experiments.sixth_paper.spec:EXPERIMENT.

    spec     the conditions (frozen-mean, frozen-cls, frozen-max, tuned-mean, tuned-cls), configuration, presets
    paper    the numbers the paper prints (PRINTED), its claims as checks (CLAIMS), where a run departs from it
    run      the embedded (term, gloss) pairs and their split (prepare), one run of a condition (run_unit)
    figures  the card's own tables (Tables 1 and 2) and one plot
"""
