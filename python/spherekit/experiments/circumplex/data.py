"""The labelled emotion texts of `spherekit reproduce circumplex`: a fixed, balanced train/test split.

Offline (default): spherekit.data.emotion.emotion_split over every offline source (WordNet, its related
forms, GCIDE definitions and quotations, the NRC lexicon), n_test per label, seeded; train is n_train per
label or, where the smallest label has fewer (relief: 259 texts in all), as many as it has. With
--data-dir: the paper's datasets in their published formats or any labelled table
(spherekit.data.labelled), through the same balancing; label names map to circumplex angles by name
(or --set angles_file=FILE). The authors' released split is read as downloaded: a folder holding
emolit_12labels_train.csv / emolit_12labels_test.csv (or their repository root, with them under dataset/), and
any table whose label column is their "sentiment" (e.g. those files renamed train.csv / test.csv). Labels are
ordered by angle and get ids 0..E-1 in that order (as the authors' code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...data.emotion import EmotionItem

# the authors' released data (github.com/yama11235/EmpiricalCircumplexModel, dataset/): Emolit's 12-label split,
# 500 train and 100 test texts per label, columns text,sentiment
RELEASED = ("emolit_12labels_train.csv", "emolit_12labels_test.csv")
RELEASED_LABEL = "sentiment"


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


def released_split(folder) -> tuple[Path, Path] | None:
    """(train, test) of the authors' released Emolit 12-label split as downloaded (their repository's
    dataset/emolit_12labels_{train,test}.csv, columns text,sentiment), in `folder` or its dataset/ subfolder;
    None when absent."""
    for where in (Path(folder), Path(folder) / "dataset"):
        paths = tuple(where / name for name in RELEASED)
        if all(p.is_file() for p in paths):
            return paths
    return None


def _label_column(path, given: str | None) -> str:
    """`given`, else "label" when the table has it, else the authors' "sentiment" when it has that."""
    from ...data.labelled import open_table

    if given is not None:
        return given
    columns = open_table(path).columns
    return "label" if "label" in columns or RELEASED_LABEL not in columns else RELEASED_LABEL


def _read_dir(cfg) -> tuple[list[EmotionItem], list[EmotionItem]]:
    """The (train, test) items of --data-dir: the authors' released split (as a plain table, or as Emolit with
    --set dataset=emolit), a train.* / test.* table, or a published dataset's own files."""
    from ...data import labelled

    dataset = "table" if cfg.dataset == "offline" else cfg.dataset  # a plain labelled table by default
    paths = released_split(cfg.data_dir)
    if paths is None and dataset not in ("table", "emolit"):
        return labelled.load_emotion_dir(cfg.data_dir, dataset)
    if paths is None:
        patterns = labelled.SPLIT_FILES.get(dataset, labelled.DEFAULT_SPLIT_FILES)
        paths = tuple(labelled._find_split_file(Path(cfg.data_dir), names, split, dataset)
                      for names, split in zip(patterns, ("train", "test")))
    if dataset == "emolit":
        return tuple(labelled.read_emolit(p, label_column=_label_column(p, cfg.label_column)) for p in paths)
    return tuple(labelled.load_labelled_table(p, text_column=cfg.text_column,
                                              label_column=_label_column(p, cfg.label_column)) for p in paths)


def _load_items(cfg):
    from ...data import labelled
    from ...data.emotion import emotion_split

    if cfg.data_dir is None:  # every label's remainder, then cut to n_train_per_label when the pool allows it
        train, test = emotion_split(n_train_per_label=None, n_test_per_label=cfg.n_test_per_label, seed=cfg.data_seed)
        return _cap(train, cfg.n_train_per_label), test
    train, test = _read_dir(cfg)
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
