"""The offline data every section shares, built once per preset and cached under <root>/data/.

Retrieval set (WordNet, decontaminated split of spherekit.data.splits, headwords masked in the glosses): each
query is a held-out term, its relevant passages the glosses of its held-out synsets; the corpus holds those
glosses plus `n_distractors` glosses of training synsets. Training pairs: (term, gloss) pairs of the training
split (none of their terms or glosses is a test term or gloss), with the training corpus (their glosses) and
each training term's labelled positives in it. ANN set: `ann_corpus` WordNet glosses and `ann_queries` terms.

Example-sentence set (multi-word queries: the mining section, the thresholds' second corpus): the synsets with an
example sentence are shuffled; the first `n_example_synsets` are held out, each giving one query (its first
example sentence, headword kept: a usage) whose relevant passage is its gloss. Synsets that share a lemma or a
gloss with a held-out one leave training; of the rest, `n_train_pairs` give the training pairs (first example,
gloss) and the next `n_distractors` glosses join the test corpus. One query per synset keeps the queries (the
bootstrap's items) independent and a batch free of duplicate positives.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ..api.files import cached_json
from ..api.config import fingerprint_of

DATA_FIELDS = ("data_seed", "n_test_synsets", "n_distractors", "n_train_pairs", "n_example_synsets", "ann_corpus",
               "ann_queries")


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
    example_test: Retrieval | None = None  # example sentences retrieving their glosses (held-out synsets)
    example_train: Retrieval | None = None  # training example sentences over their glosses
    stats: dict = field(default_factory=dict)
    root: Path | None = None

    def mining_sets(self, queries: str) -> tuple[Retrieval, Retrieval]:
        """(training set searched by the miners, test set) of the mining section's queries ("terms" | "examples")."""
        return (self.train, self.test) if queries == "terms" else (self.example_train, self.example_test)


def _examples(wordnet, cfg) -> dict:
    """The example-sentence set (module docstring): test pairs, training pairs and distractor glosses."""
    from ...data.records import definition_key, term_key

    first: dict[str, str] = {}
    for synset, sentence in wordnet.example_sentences():
        first.setdefault(synset, sentence)
    synsets = sorted(first)
    random.Random(cfg.data_seed).shuffle(synsets)
    test, rest = synsets[:cfg.n_example_synsets], synsets[cfg.n_example_synsets:]
    gloss = {s: wordnet.concept(s).definition for s in synsets}
    lemmas = {s: {term_key(x) for x in wordnet.concept(s).lemmas} for s in synsets}
    held_lemmas = set().union(*(lemmas[s] for s in test)) if test else set()
    held_glosses = {definition_key(gloss[s]) for s in test}
    train = [s for s in rest if not lemmas[s] & held_lemmas and definition_key(gloss[s]) not in held_glosses]
    return {"example_test_pairs": [(first[s], gloss[s]) for s in test],
            "example_train_pairs": [(first[s], gloss[s]) for s in train[:cfg.n_train_pairs]],
            "example_distractors": [gloss[s] for s in train[cfg.n_train_pairs:cfg.n_train_pairs + cfg.n_distractors]]}


def _build(cfg) -> dict:
    from ...data.splits import make_split
    from ...data.wordnet import load_wordnet

    wordnet = load_wordnet()
    split = make_split("in-domain", seed=cfg.data_seed, n_test=cfg.n_test_synsets, n_dev=1, synonyms=False,
                       wordnet=wordnet)
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
            "ann_queries": rng.sample(terms, min(cfg.ann_queries, len(terms))), **_examples(wordnet, cfg)}


def load_data(cfg, root) -> TextbookData:
    """The shared data of `cfg` (read from <root>/data/textbook.json when it was built with the same settings)."""
    path = Path(root) / "data" / "textbook.json"
    key = fingerprint_of(cfg, DATA_FIELDS)
    raw = cached_json(path, key, lambda: _build(cfg))
    test = retrieval_from_pairs(map(tuple, raw["test_pairs"]), raw["distractors"])
    pairs = [tuple(p) for p in raw["train_pairs"]]
    train = retrieval_from_pairs(pairs)
    ex_test = retrieval_from_pairs(map(tuple, raw["example_test_pairs"]), raw["example_distractors"])
    ex_train = retrieval_from_pairs(map(tuple, raw["example_train_pairs"]))
    stats = {"test_queries": len(test.queries), "test_corpus": len(test.corpus), "train_pairs": len(pairs),
             "train_queries": len(train.queries), "train_corpus": len(train.corpus),
             "example_test_queries": len(ex_test.queries), "example_test_corpus": len(ex_test.corpus),
             "example_train_queries": len(ex_train.queries), "example_train_corpus": len(ex_train.corpus),
             "ann_corpus": len(raw["ann_corpus"]), "ann_queries": len(raw["ann_queries"])}
    return TextbookData(test, pairs, train, raw["ann_corpus"], raw["ann_queries"], ex_test, ex_train, stats,
                        Path(root))
