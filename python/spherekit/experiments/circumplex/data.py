"""The labelled emotion texts of `spherekit reproduce circumplex`: a fixed, balanced train/test split.

Offline (default): spherekit.data.emotion.emotion_split over every offline source (WordNet, its related
forms, GCIDE definitions and quotations, the NRC lexicon), n_test per label, seeded; train is n_train per
label or, where the smallest label has fewer (relief: 259 texts in all), as many as it has. With
--data-dir: the paper's datasets in their published formats or any labelled table
(spherekit.data.labelled), through the same balancing; label names map to circumplex angles by name
(or --set angles_file=FILE). Labels are ordered by angle and get ids 0..E-1 in that order (as the authors' code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...data.emotion import EmotionItem


@dataclass
class EmotionData:
    """train / test items, the labels in angle order and their angles (degrees)."""

    train: list[EmotionItem]
    test: list[EmotionItem]
    labels: tuple[str, ...]
    angles: dict[str, float]
    stats: dict = field(default_factory=dict)
    caches: dict = field(default_factory=dict)  # token-state caches loaded in this process, shared by its runs

    def subset(self, labels=None) -> tuple[list[EmotionItem], list[EmotionItem], tuple[str, ...]]:
        """(train, test, label order) restricted to `labels` (None: all); angles stay the circumplex's."""
        if labels is None:
            return self.train, self.test, self.labels
        keep = [lab for lab in self.labels if lab in set(labels)]
        return ([it for it in self.train if it.label in keep], [it for it in self.test if it.label in keep],
                tuple(keep))

    @property
    def texts(self) -> list[str]:
        return list(dict.fromkeys([it.text for it in self.train] + [it.text for it in self.test]))


def _cap(items: list[EmotionItem], n_per_label: int | None) -> list[EmotionItem]:
    """The first n_per_label items of each label (all when None), order kept."""
    if n_per_label is None:
        return items
    seen: dict[str, int] = {}
    out = []
    for it in items:
        seen[it.label] = seen.get(it.label, 0) + 1
        if seen[it.label] <= n_per_label:
            out.append(it)
    return out


def _load_items(cfg):
    from ...data import labelled
    from ...data.emotion import emotion_split

    if cfg.data_dir is None:  # every label's remainder, then cut to n_train_per_label when the pool allows it
        train, test = emotion_split(n_train_per_label=None, n_test_per_label=cfg.n_test_per_label, seed=cfg.data_seed)
        return _cap(train, cfg.n_train_per_label), test
    dataset = "table" if cfg.dataset == "offline" else cfg.dataset  # a plain labelled table by default
    options = {}
    if dataset == "table":
        options = dict(text_column=cfg.text_column, label_column=cfg.label_column)
    train, test = labelled.load_emotion_dir(cfg.data_dir, dataset, **options)
    return labelled.balanced_split(train, cfg.n_train_per_label, cfg.n_test_per_label, cfg.data_seed, test_items=test)


def load_data(cfg) -> EmotionData:
    """The split the config asks for, checked (>= 2 labels, >= 2 texts per label in each split)."""
    from ...data.labelled import check_labelled, resolve_angles

    train, test = _load_items(cfg)
    per_train = check_labelled(train, min_labels=2, min_per_label=2)
    per_test = check_labelled(test, min_labels=2, min_per_label=2)
    angles = resolve_angles(sorted(per_train), cfg.angles_file)
    labels = tuple(sorted(per_train, key=lambda lab: (angles[lab], lab)))
    sources: dict[str, int] = {}
    for it in train + test:
        kind = it.provenance.split(":", 1)[0]
        sources[kind] = sources.get(kind, 0) + 1
    stats = {"source": cfg.data_dir or "offline", "dataset": cfg.dataset, "labels": list(labels),
             "angles": {lab: angles[lab] for lab in labels}, "n_train": len(train), "n_test": len(test),
             "train_per_label": per_train, "test_per_label": per_test, "provenance": sources}
    return EmotionData(train, test, labels, {lab: angles[lab] for lab in labels}, stats)
