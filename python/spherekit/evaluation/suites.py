"""The evaluation suites `spherekit eval` runs, and the contract every suite module follows.

Each suite is a module exposing

    make_evaluator(split, *, limit=None, seed=0, batch_size=64, **options) -> SentenceEvaluator

  split       the Split(train, dev, test) from spherekit.data.splits.make_split (pair records with
              term, definition, synset_id, pos; dicts or objects), or None for suites that bring
              their own data (nearmiss, emotion). Suites evaluate on split.test.
  limit       keep at most this many test items (None: all); the same `limit` always keeps the same items.
  seed        every random choice of the suite (negatives, pairs, k-means inits) derives from it.
  batch_size  encoding batch size.

The evaluator subclasses sentence_transformers.evaluation.SentenceEvaluator; calling it,
evaluator(model, output_path=None) returns a flat dict {metric name in plain words: float}, e.g.
"R@10 (term to definition)", "MRR (term to definition)", "ROC-AUC (antonym flip)", "anisotropy",
"effective rank", "V-measure", "CD-r". Keys carry no evaluator-name prefix; the runner prints them as
they are and writes them to <out>/<suite>.json. An evaluator may also offer
    write_plots(out_dir) -> list[str]     (PNG paths, from the data of its last call)
and an attribute `config` (a JSON-able dict: everything that changes its numbers, used to decide
whether a saved result can be reused).

Suites by what they measure (KINDS); every suite module is spherekit.evaluation.evaluators.<suite>:
    ranking     does the model score the right text above the wrong ones?
                concept (term-definition retrieval, pair ROC-AUC against random negatives), stress (pairs against
                rule-based hard negatives), nearmiss (anchor-positive pairs against structural near-misses)
    geometry    the shape of the embedding space: geometry (anisotropy, effective rank of the final embeddings),
                layerwise (MRR and anisotropy of every layer's mean pool)
    clustering  do texts of one label gather together? emotion (V-measure, CD-r on the emotion circumplex)
SUITES lists them in the order `--suite all` runs them. The runner imports a suite module only when that suite runs.
"""

from __future__ import annotations

import importlib

# suite names by what they measure (see the module docstring)
KINDS: dict[str, tuple[str, ...]] = {
    "ranking": ("concept", "stress", "nearmiss"),
    "geometry": ("geometry", "layerwise"),
    "clustering": ("emotion",),
}

# suite name -> its module, in the order `--suite all` runs them
SUITES: dict[str, str] = {name: f"spherekit.evaluation.evaluators.{name}"
                          for name in ("concept", "geometry", "layerwise", "stress", "nearmiss", "emotion")}

# suites that evaluate the WordNet split (the others bring their own data)
NEEDS_SPLIT = frozenset({"concept", "geometry", "layerwise", "stress"})


def suite_names(spec: str) -> list[str]:
    """'all' -> every suite; 'concept,geometry' -> those (validated)."""
    names = list(SUITES) if spec == "all" else [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in names if s not in SUITES]
    if bad or not names:
        raise ValueError(f"suite must be 'all' or a comma-separated subset of {sorted(SUITES)}, got {spec!r}")
    return names


def load_suite(name: str):
    """The suite's module (imported now); a clear error if it is missing."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; expected one of {sorted(SUITES)}")
    try:
        module = importlib.import_module(SUITES[name])
    except ModuleNotFoundError as exc:
        if exc.name and SUITES[name].startswith(exc.name):
            raise RuntimeError(f"suite {name!r} is not available: module {SUITES[name]} is missing") from exc
        raise
    if not hasattr(module, "make_evaluator"):
        raise RuntimeError(f"suite {name!r}: module {SUITES[name]} has no "
                           "make_evaluator(split, *, limit, seed, batch_size)")
    return module
