"""The offline data every section shares, built once per preset and cached under <root>/data/.

Retrieval set (WordNet, decontaminated split of spherekit.data.splits, headwords masked in the glosses): each
query is a held-out term, its relevant passages the glosses of its held-out synsets; the corpus holds those
glosses plus `n_distractors` glosses of training synsets. Training pairs: (term, gloss) pairs of the training
split (none of their terms or glosses is a test term or gloss), with the training corpus (their glosses) and
each training term's labelled positives in it. ANN set: `ann_corpus` WordNet glosses and `ann_queries` terms.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ..card import cached_json
from ..config import fingerprint_of

DATA_FIELDS = ("data_seed", "n_test_synsets", "n_distractors", "n_train_pairs", "ann_corpus", "ann_queries")


@dataclass
class Retrieval:
    """queries[q] retrieves corpus ids relevant[q] (one set per query, never empty)."""

    queries: list[str]
    corpus: list[str]
    relevant: list[set[int]]

    def __post_init__(self):
        self.relevant = [set(r) for r in self.relevant]
        if len(self.queries) != len(self.relevant) or any(not r for r in self.relevant):
            raise ValueError("every query needs a non-empty set of relevant corpus ids")


def retrieval_from_pairs(pairs, extra_corpus=()) -> Retrieval:
    """(term, passage) pairs -> unique queries, unique passages (then `extra_corpus`), relevance sets."""
    corpus: dict[str, int] = {}
    relevant: dict[str, set[int]] = {}
    for term, passage in pairs:
        relevant.setdefault(term, set()).add(corpus.setdefault(passage, len(corpus)))
    for passage in extra_corpus:
        corpus.setdefault(passage, len(corpus))
    return Retrieval(list(relevant), list(corpus), list(relevant.values()))


@dataclass
class TextbookData:
    test: Retrieval
    train_pairs: list[tuple[str, str]]
    train: Retrieval  # the training terms over the training corpus (their glosses): what mining searches
    ann_corpus: list[str]
    ann_queries: list[str]
    stats: dict = field(default_factory=dict)
    root: Path | None = None


def _build(cfg) -> dict:
    from ...data.splits import make_split

    split = make_split("in-domain", seed=cfg.data_seed, n_test=cfg.n_test_synsets, n_dev=1, synonyms=False)
    rng = random.Random(cfg.data_seed)
    test_pairs = [(p.term, p.definition) for p in split.test]
    train = list(split.train)
    rng.shuffle(train)
    train_pairs = [(p.term, p.definition) for p in train[:cfg.n_train_pairs]]
    used = {d for _, d in train_pairs}
    distractors = list(dict.fromkeys(p.definition for p in train[cfg.n_train_pairs:] if p.definition not in used))
    glosses = list(dict.fromkeys(p.definition for p in split.train + split.test))
    terms = sorted({p.term for p in split.train + split.test})
    return {"test_pairs": test_pairs, "train_pairs": train_pairs, "distractors": distractors[:cfg.n_distractors],
            "ann_corpus": rng.sample(glosses, min(cfg.ann_corpus, len(glosses))),
            "ann_queries": rng.sample(terms, min(cfg.ann_queries, len(terms)))}


def load_data(cfg, root) -> TextbookData:
    """The shared data of `cfg` (read from <root>/data/textbook.json when it was built with the same settings)."""
    path = Path(root) / "data" / "textbook.json"
    key = fingerprint_of(cfg, DATA_FIELDS)
    raw = cached_json(path, key, lambda: _build(cfg))
    test = retrieval_from_pairs(map(tuple, raw["test_pairs"]), raw["distractors"])
    pairs = [tuple(p) for p in raw["train_pairs"]]
    train = retrieval_from_pairs(pairs)
    stats = {"test_queries": len(test.queries), "test_corpus": len(test.corpus), "train_pairs": len(pairs),
             "train_queries": len(train.queries), "train_corpus": len(train.corpus),
             "ann_corpus": len(raw["ann_corpus"]), "ann_queries": len(raw["ann_queries"])}
    return TextbookData(test, pairs, train, raw["ann_corpus"], raw["ann_queries"], stats, Path(root))
