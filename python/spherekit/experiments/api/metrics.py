"""One metric vocabulary for every reproduction: a key grammar, each metric's direction, a paper's scale and
main metric, and the evaluation version that decides whether a saved measurement is still valid.

Every key of a unit's "metrics" follows one grammar:

    key       := [scope "/"]* name ["@" k] [" (" qualifier ")"]
    scope     := where or on what it was measured: a split, suite, stage or variant ("in-domain", "frozen/cls")
    name      := a name of VOCABULARY, or one that the paper declares (Experiment.metric_names)
    k         := the cut-off of a ranking metric (R@10, nDCG@10, Acc@1)
    qualifier := what it is computed over ("term to definition", "lexical negation", "best pooling")

e.g. "in-domain/R@10 (term to definition)", "nDCG@10", "reverse-dictionary/Acc@100", "frozen/cls/R@10". The
ranking metrics are the ones of spherekit.evaluation.metrics (R@k, MRR, nDCG@k, Acc@1): a paper names them with
these spellings and computes them with those functions, never again by hand.

Scale: values are fractions unless the paper declares `metric_scale = 100` (DefSent+ reports x100, as the paper).

Evaluation version (`evaluation_version(experiment)`): spherekit's evaluation version joined with the paper's own.
It is stored with every finished run; a run measured under another version is re-evaluated (from its saved model,
or redone), never shown next to runs measured under this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# spherekit's shared evaluators (spherekit.evaluation): bump when one of them changes what it measures
EVALUATION_VERSION = 1


@dataclass(frozen=True)
class MetricName:
    """A metric name of the vocabulary. higher_is_better: True / False, or None for a descriptive quantity (a
    cosine, an effective rank) whose good direction depends on the claim. at_k: True when a key must give the
    cut-off (R@10), None when it may (MRR, MRR@10), False when it may not."""

    name: str
    higher_is_better: bool | None
    doc: str
    at_k: bool | None = False


def _names(*items) -> dict[str, MetricName]:
    return {item[0]: MetricName(*item) for item in items}


VOCABULARY: dict[str, MetricName] = _names(
    ("R", True, "recall at k: share of a query's relevant items in its top k (evaluation.metrics.recall_at_k)",
     True),
    ("MRR", True, "mean reciprocal rank of the first relevant item, within the top k if @k (evaluation.metrics.mrr)",
     None),
    ("nDCG", True, "normalised discounted cumulative gain at k, linear gain (evaluation.metrics.ndcg_at_k)", True),
    ("Acc", True, "accuracy: share of queries whose top-1 (or top-k) holds a relevant item, or of correct labels",
     None),
    ("ROC-AUC", True, "area under the ROC curve of positives against negatives (evaluation.metrics.roc_auc)"),
    ("pair ROC-AUC", True, "ROC-AUC of cos(term, definition) against cos(term, negative definition)"),
    ("Spearman", True, "Spearman rank correlation with the gold scores (evaluation.metrics.spearman)"),
    ("Pearson", True, "Pearson correlation (evaluation.metrics.pearson)"),
    ("V-measure", True, "V-measure of a clustering against the gold labels (evaluation.clustering)"),
    ("CD-r", True, "Pearson(circumplex distance, 1 - mean cosine) over label pairs (evaluation.clustering)"),
    ("F1", True, "harmonic mean of precision and recall at a threshold"),
    ("precision", True, "share of predicted positives that are positive, at a threshold"),
    ("recall", True, "share of positives predicted positive, at a threshold"),
    ("anisotropy", None, "mean cosine of random pairs of embeddings (evaluation.geometry)"),
    ("effective rank", None, "exp(entropy of the normalised singular values) (evaluation.geometry)"),
    ("cosine", None, "a cosine similarity (mean where several)"),
    ("loss", False, "a training loss"),
)

KEY = re.compile(r"^(?:(?P<scope>[^/()@]+(?:/[^/()@]+)*)/)?(?P<name>[^/()@]+?)(?:@(?P<k>[1-9][0-9]*))?"
                 r"(?: \((?P<qualifier>[^()]+)\))?$")


@dataclass(frozen=True)
class MetricKey:
    """A parsed metric key."""

    scope: tuple[str, ...]
    name: str
    k: int | None
    qualifier: str | None


def parse(key: str) -> MetricKey:
    """The parts of `key`; a ValueError names a key outside the grammar."""
    match = KEY.match(key)
    if not match or match["name"] != match["name"].strip():
        raise ValueError(f"metric key {key!r} does not follow the grammar [scope/]*name[@k][ (qualifier)]")
    scope = tuple(match["scope"].split("/")) if match["scope"] else ()
    return MetricKey(scope, match["name"], int(match["k"]) if match["k"] else None, match["qualifier"])


def vocabulary(experiment=None) -> dict[str, MetricName]:
    """The shared names plus the experiment's own (Experiment.metric_names)."""
    own = getattr(experiment, "metric_names", None) or {}
    clash = sorted(set(own) & set(VOCABULARY))
    if clash:
        raise ValueError(f"{experiment.name}: metric names {clash} are in the shared vocabulary already")
    return {**VOCABULARY, **own}


def lookup(key: str, experiment=None) -> MetricName:
    """The vocabulary entry of `key`'s name; a ValueError names an unregistered name."""
    parsed = parse(key)
    names = vocabulary(experiment)
    if parsed.name not in names:
        owner = f"{experiment.name}'s metric_names" if experiment is not None else "the vocabulary"
        raise ValueError(f"metric key {key!r}: name {parsed.name!r} is neither in the shared vocabulary "
                         f"({', '.join(VOCABULARY)}) nor in {owner}")
    entry = names[parsed.name]
    if entry.at_k is True and parsed.k is None or entry.at_k is False and parsed.k is not None:
        ranked = ", ".join(n for n, m in VOCABULARY.items() if m.at_k is not False)
        raise ValueError(f"metric key {key!r}: {parsed.name} {'needs a' if entry.at_k else 'takes no'} cut-off @k "
                         f"(the ranking metrics are {ranked})")
    return entry


def higher_is_better(key: str, experiment=None) -> bool | None:
    return lookup(key, experiment).higher_is_better


def invalid_keys(keys, experiment=None) -> list[str]:
    """The keys of `keys` that do not parse or whose name is not registered, each with the reason."""
    bad = []
    for key in keys:
        try:
            lookup(key, experiment)
        except ValueError as exc:
            bad.append(str(exc))
    return bad


def evaluation_version(experiment) -> str:
    """"<spherekit's evaluation version>.<the experiment's>": stored with every finished run."""
    return f"{EVALUATION_VERSION}.{getattr(experiment, 'evaluation_version', 1)}"


__all__ = ["EVALUATION_VERSION", "KEY", "MetricKey", "MetricName", "VOCABULARY", "evaluation_version",
           "higher_is_better", "invalid_keys", "lookup", "parse", "vocabulary"]
