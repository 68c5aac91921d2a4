"""Structural near-misses ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), sec. 3.1 and appendix D.1): lexically high-overlap sentence pairs whose meaning differs by (i)
a negation/scope flip, (ii) a binding/order change or (iii) a spatial relation flip, built here from WordNet
example sentences and glosses with spaCy.

    FAMILIES = ("negation", "binding", "spatial")
    items = load_nearmiss("test", seed=0)        # list[NearMiss], cached on disk (checksummed)
    near_misses("the man bit the dog")           # {"binding": ("subject-object swap", "the dog bit the man"), ...}

Edits (spherekit.data._edits; the first that applies per family):
    negation   the first finite verb or copula is negated ("is" -> "is not", "bit" -> "did not bite") or an
               existing negation is removed
    binding    subject-object swap of the first verb with noun subject and direct object (dependency
               parse: "the man bit the dog" -> "the dog bit the man"), else the adjectives of two nouns
               swap ("a red car and a blue bike" -> "a blue car and a red bike")
    spatial    above/below, over/under, in front of/behind, left/right, inside/outside, up/down, north/south, ...

Each item is (anchor, positive, near_miss, family). The paper turns each pair (s1, s2) into the triplet
(s1, s1, s2): the positive is the anchor itself (positive="anchor"). With positive="paraphrase" (the
default) the positive is a meaning-preserving variant of the anchor where one exists (one monosemous
content word replaced by a synonym from its only WordNet synset; positive_kind "synonym"), else the
anchor (positive_kind "identity"); this makes "cos(anchor, positive) > cos(anchor, near_miss)" a real
test of paraphrase-vs-near-miss ordering ("Compositional Sensitivity", eq. 3).

Sampling (seeded): texts of at least 20 characters ("Compositional Sensitivity" drops shorter ones) and at most
300; texts that contain a spatial word are tried first (they are rare), the rest after, each group in a seeded
order; parsing stops when every family has n_per_family items. The split is 80/20 (test_fraction) by anchor text,
so no anchor sentence is in both parts. The paper builds 9,940 pairs per family from other sources; the default
here is 1,000 per family (WordNet has fewer suitable sentences, and parsing is slow).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass

FAMILIES = ("negation", "binding", "spatial")
POSITIVE_MODES = ("paraphrase", "anchor")
CACHE_VERSION = 2  # 2: a checksummed spherekit._store cache entry instead of plain JSON
MIN_CHARS, MAX_CHARS = 20, 300
_SPATIAL_RE = re.compile(r"\b(above|below|beneath|underneath|over|under|inside|outside|upstairs|downstairs|up|down|"
                         r"north|south|east|west|northern|southern|eastern|western|behind|in front of|the left|"
                         r"the right)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NearMiss:
    anchor: str
    positive: str
    near_miss: str
    family: str          # "negation" | "binding" | "spatial"
    edit: str            # which edit made the near-miss ("verb negation", "subject-object swap", ...)
    positive_kind: str   # "identity" (positive == anchor) | "synonym"
    source: str          # "wordnet-example:<synset>" | "wordnet-gloss:<synset>" | "text"


@dataclass
class NearMissSet:
    train: list[NearMiss]
    test: list[NearMiss]
    info: dict


def near_misses(text, *, nlp=None) -> dict[str, tuple[str, str]]:
    """{family: (edit, near-miss text)} for every family whose edit applies to `text` (a str or spaCy Doc)."""
    from . import _edits

    if isinstance(text, str):
        if not text.strip():
            raise ValueError("text: expected a non-empty string, got an empty one")
        from ._spacy import load_spacy

        doc = (nlp or load_spacy())(text)
    else:
        doc = text
    anchor = doc.text.strip()
    out = {}
    neg = _edits.negate(doc)
    if neg and neg != anchor:
        out["negation"] = ("verb negation", neg)
    for name, fn in (("subject-object swap", _edits.subject_object_swap), ("attribute swap", _edits.attribute_swap)):
        b = fn(doc)
        if b and b.lower() != anchor.lower():
            out["binding"] = (name, b)
            break
    sp = _edits.spatial_flip(doc)
    if sp and sp != anchor:
        out["spatial"] = ("spatial flip", sp)
    return out


def _candidates(wordnet, rng: random.Random) -> list[tuple[str, str]]:
    seen, texts = set(), []
    for c in wordnet.concepts:
        for kind, items in (("example", c.examples), ("gloss", [c.definition])):
            for t in items:
                t = " ".join(t.split())
                if MIN_CHARS <= len(t) <= MAX_CHARS and t.lower() not in seen:
                    seen.add(t.lower())
                    texts.append((t, f"wordnet-{kind}:{c.synset_id}"))
    spatial = [x for x in texts if _SPATIAL_RE.search(x[0])]
    rest = [x for x in texts if not _SPATIAL_RE.search(x[0])]
    rng.shuffle(spatial)
    rng.shuffle(rest)
    return spatial + rest


def generate(texts, *, n_per_family: int, seed: int = 0, positive: str = "paraphrase", wordnet=None, nlp=None,
             batch_size: int = 256) -> list[NearMiss]:
    """NearMiss items from (text, source) pairs in the given order, at most n_per_family per family."""
    from . import _edits

    if positive not in POSITIVE_MODES:
        raise ValueError(f"positive: expected one of {POSITIVE_MODES}, got {positive!r}")
    if isinstance(n_per_family, bool) or not isinstance(n_per_family, int) or n_per_family < 1:
        raise ValueError(f"n_per_family: expected a positive int, got {n_per_family!r}")
    if nlp is None:
        from ._spacy import load_spacy

        nlp = load_spacy()
    if positive == "paraphrase" and wordnet is None:
        from .wordnet import load_wordnet

        wordnet = load_wordnet()
    rng = random.Random(f"{seed}:positive")
    counts = dict.fromkeys(FAMILIES, 0)
    items: list[NearMiss] = []
    texts = list(texts)
    for doc, (_, source) in zip(nlp.pipe((t for t, _ in texts), batch_size=batch_size), texts):
        found = {f: v for f, v in near_misses(doc).items() if counts[f] < n_per_family}
        if not found:
            if all(c >= n_per_family for c in counts.values()):
                break
            continue
        anchor = doc.text.strip()
        pos_text = _edits.synonym_paraphrase(doc, wordnet, rng) if positive == "paraphrase" else None
        for fam, (edit, nm) in found.items():
            ok = pos_text is not None and pos_text != nm
            items.append(NearMiss(anchor, pos_text if ok else anchor, nm, fam, edit, "synonym" if ok else "identity",
                                  source))
            counts[fam] += 1
        if all(c >= n_per_family for c in counts.values()):
            break
    return items


def split_by_anchor(items, test_fraction: float = 0.2, seed: int = 0) -> tuple[list[NearMiss], list[NearMiss]]:
    """(train, test): anchors shuffled with the seed, the first round(test_fraction * #anchors) are test."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction: expected a float in (0, 1), got {test_fraction!r}")
    anchors = sorted({it.anchor for it in items})
    random.Random(f"{seed}:split").shuffle(anchors)
    n_test = max(1, round(test_fraction * len(anchors))) if anchors else 0
    test_anchors = set(anchors[:n_test])
    return ([it for it in items if it.anchor not in test_anchors], [it for it in items if it.anchor in test_anchors])


def _cache_path(wordnet, config: dict, folder=None):
    from pathlib import Path

    from . import _edits
    from .._store import cache_dir, file_signature

    code = file_signature([__file__, _edits.__file__])
    key = json.dumps({**config, "wordnet": wordnet.cache_key or len(wordnet), "code": code,
                      "version": CACHE_VERSION}, sort_keys=True)
    folder = Path(folder) if folder is not None else Path(cache_dir()) / "nearmiss"
    return folder / f"nearmiss-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pkl"


def build_nearmiss(*, n_per_family: int = 1000, seed: int = 0, test_fraction: float = 0.2,
                   positive: str = "paraphrase", max_texts: int | None = None, wordnet=None, nlp=None,
                   cache=True) -> NearMissSet:
    """The near-miss set from WordNet (see the module docstring), cached under cache_dir()/nearmiss/ (or
    the folder `cache` when it is a path; False: no cache) as a spherekit._store cache entry
    (checksummed, rebuilt when damaged), keyed by every argument, the WordNet records and this code."""
    from .._store import cached

    if wordnet is None:
        from .wordnet import load_wordnet

        wordnet = load_wordnet()
    config = {"n_per_family": n_per_family, "seed": seed, "test_fraction": test_fraction, "positive": positive,
              "max_texts": max_texts}
    path = None
    if cache is not False and cache is not None:
        path = _cache_path(wordnet, config, None if cache is True else cache)

    def build() -> dict:
        texts = _candidates(wordnet, random.Random(f"{seed}:texts"))
        if max_texts is not None:
            texts = texts[:max_texts]
        items = generate(texts, n_per_family=n_per_family, seed=seed, positive=positive, wordnet=wordnet, nlp=nlp)
        train, test = split_by_anchor(items, test_fraction, seed)
        info = {**config, "counts": {f: sum(it.family == f for it in items) for f in FAMILIES},
                "test_counts": {f: sum(it.family == f for it in test) for f in FAMILIES},
                "synonym_positives": sum(it.positive_kind == "synonym" for it in items)}
        return {"train": [asdict(x) for x in train], "test": [asdict(x) for x in test], "info": info}

    def decode(saved: dict) -> NearMissSet:
        return NearMissSet([NearMiss(**d) for d in saved["train"]], [NearMiss(**d) for d in saved["test"]],
                           saved["info"])

    return cached(path, build, decode)


def load_nearmiss(split: str = "test", **kwargs) -> list[NearMiss]:
    """The "train" or "test" part of build_nearmiss(**kwargs)."""
    if split not in ("train", "test"):
        raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
    return getattr(build_nearmiss(**kwargs), split)
