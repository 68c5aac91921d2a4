"""Emotion circumplex suite ("Mapping the Circumplex of Affect" (arXiv:2601.06575), sec. 4.2) on the offline
emotion set of spherekit.data.emotion: "V-measure" of spherical k-means (k = 12, 10 initialisations, minimum
inertia) and "CD-r", the Pearson correlation between the Circumplex Distance of label pairs and 1 - their mean
cosine similarity (eq. 10-11), both computed by spherekit.evaluation.clustering through the ClusteringEvaluator."""

from __future__ import annotations

from ...data.emotion import ANGLES, EMOTIONS, POLARITY, build_emotion_set, circumplex_label_distance
from ._base import check_limit, field
from .clustering import ClusteringEvaluator


class EmotionCircumplexEvaluator(ClusteringEvaluator):
    """ClusteringEvaluator over EmotionItem records (text, label, provenance) with the ECM label distance.

    Args: items (EmotionItem or dicts with text and label); n_init, seed as in ClusteringEvaluator.
    Returns "V-measure" and "CD-r"."""

    def __init__(self, items, *, n_init: int = 10, seed: int = 0, name: str = "emotion", batch_size: int = 64,
                 show_progress: bool = False, config: dict | None = None):
        items = list(items)
        texts = [field(i, "text") for i in items]
        labels = [field(i, "label") for i in items]
        bad = sorted(set(labels) - set(EMOTIONS))
        if bad:
            raise ValueError(f"items: labels must be among {EMOTIONS}, got {bad}")
        order = [e for e in EMOTIONS if e in set(labels)]
        full = circumplex_label_distance()
        keep = [EMOTIONS.index(e) for e in order]
        super().__init__(texts, labels, label_distance=full[keep][:, keep], label_order=order, n_init=n_init,
                         seed=seed, name=name, batch_size=batch_size, show_progress=show_progress)
        self.extra_config = dict(config or {})

    def get_config_dict(self):
        return {**super().get_config_dict(), **self.extra_config, "angles": {e: ANGLES[e] for e in EMOTIONS},
                "polarity": dict(POLARITY)}


def make_evaluator(split=None, *, limit: int | None = None, seed: int = 0, batch_size: int = 64, **options):
    """The emotion suite (brings its own data). limit: at most this many items, balanced (limit // 12 per
    label, at least 1); options: n_per_label, sources, n_init."""
    n_init = options.pop("n_init", 10)
    check_limit(limit)
    items = build_emotion_set(seed=seed, **options)
    if limit is not None:
        items = items[: max(1, limit // len(EMOTIONS)) * len(EMOTIONS)]
    cfg = {"seed": seed, "limit": limit, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()}}
    return EmotionCircumplexEvaluator(items, n_init=n_init, seed=seed, batch_size=batch_size, config=cfg)
