"""An offline emotion text set for the 12-label Empirical Circumplex Model (ECM) of paper 003.

    EMOTIONS, ANGLES        the 12 labels and their angles in degrees
    items = build_emotion_set(seed=0)       # list[EmotionItem(text, label, provenance)], balanced per label
    circumplex_label_distance()             # (12, 12) CD matrix in EMOTIONS order (003, sec. 4.2)

Angles. 003 places 12 labels on the circle in this order (Figure 3; the text states love at 0 degrees,
calmness at 270 and trust at 330, love as the opposite of disgust and trust as the opposite of fear):
love 0, joy 30, excitement 60, surprise 90, anger 120, fear 150, disgust 180, sadness 210, boredom 240,
calmness 270, relief 300, trust 330 (30-degree steps, consistent with every stated angle and opposition).
Polarities for the Circumplex Distance (Figure 3 is not in our copy of the paper; our choice, by
Russell's valence axis): labels on the arousal axis (surprise 90, calmness 270) are neutral, those on
the pleasant side (300..60) positive, those on the unpleasant side (120..240) negative.

Texts (provenance recorded per item):
  WordNet  for each label, hand-picked seed synsets (EMOTION_SEEDS) and everything below them (hyponym
           closure; for adjectives the similar-to satellites): each synset's lemmas ("wordnet-lemma"),
           definition ("wordnet-gloss") and example sentences ("wordnet-example"), provenance "<kind>:<synset>".
  NRC      the NRC emotion lexicon of the PyPI package nrclex (nrclex/data/nrc_en.json): a word tagged with
           exactly one of NRC's eight emotions becomes an item of the mapped label (provenance "nrc:<emotion>").
           NRC_TO_LABEL: anger, fear, joy, sadness, disgust, surprise, trust map to themselves;
           anticipation -> excitement (aroused positive expectation, 60 degrees). NRC has no love, boredom,
           calmness or relief: those labels come from WordNet only.
A text that would carry two labels is dropped. Balance: every label gets the same number of items
(n_per_label, default the smallest label's pool size), drawn uniformly from the label's pool (seeded).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

EMOTIONS = ("love", "joy", "excitement", "surprise", "anger", "fear", "disgust", "sadness", "boredom", "calmness",
            "relief", "trust")
ANGLES = {e: 30.0 * i for i, e in enumerate(EMOTIONS)}
POLARITY = {"love": "positive", "joy": "positive", "excitement": "positive", "surprise": "neutral",
            "anger": "negative", "fear": "negative", "disgust": "negative", "sadness": "negative",
            "boredom": "negative", "calmness": "neutral", "relief": "positive", "trust": "positive"}
NRC_TO_LABEL = {"anger": "anger", "fear": "fear", "joy": "joy", "sadness": "sadness", "disgust": "disgust",
                "surprise": "surprise", "trust": "trust", "anticipation": "excitement"}
NRC_EMOTIONS = frozenset(NRC_TO_LABEL)
EMOTION_SEEDS = {
    "love": ("love.n.01", "love.v.01", "love.v.02", "affection.n.01", "loving.a.01", "adoring.s.01"),
    "joy": ("joy.n.01", "joy.v.02", "joyful.a.01", "elated.s.01", "happiness.n.02", "gladness.n.01"),
    "excitement": ("exhilaration.n.01", "excitement.n.02", "excited.a.01", "thrill.n.01", "excite.v.01",
                   "eagerness.n.01", "enthusiasm.n.01"),
    "surprise": ("surprise.n.01", "astonishment.n.01", "surprised.a.01", "surprise.v.01", "amazed.s.01",
                 "astonish.v.01"),
    "anger": ("anger.n.01", "anger.n.02", "angry.a.01", "anger.v.01", "anger.v.02"),
    "fear": ("fear.n.01", "afraid.a.01", "fear.v.01", "frighten.v.01", "fearful.a.01"),
    "disgust": ("disgust.n.01", "disgusted.s.01", "disgust.v.01", "disgust.v.02", "repugnance.n.01"),
    "sadness": ("sadness.n.01", "sadness.n.02", "sad.a.01", "sorrow.n.01", "sorrow.n.02", "grieve.v.01"),
    "boredom": ("boredom.n.01", "bored.s.01", "bore.v.01", "tediousness.n.01", "blase.s.02", "boring.s.01",
                "dullness.n.02"),
    "calmness": ("calmness.n.03", "composure.n.01", "tranquillity.n.01", "repose.n.03", "peace.n.03",
                 "calm.v.03", "calm.a.01", "relax.v.01"),
    "relief": ("relief.n.01", "relief.n.02", "relieved.s.01", "respite.n.04", "alleviation.n.02", "ease.n.02"),
    "trust": ("trust.n.03", "faith.n.02", "reliance.n.01", "trust.v.01", "trustful.a.01", "confidence.n.02"),
}


@dataclass(frozen=True, slots=True)
class EmotionItem:
    text: str
    label: str
    provenance: str   # "wordnet-lemma:<synset>" | "wordnet-gloss:<synset>" | "wordnet-example:<synset>" | "nrc:<emotion>"


def label_angles_radians() -> list[float]:
    """ANGLES in EMOTIONS order, in radians (the label_angles of spherekit.losses.CircularCSELoss)."""
    import math

    return [math.radians(ANGLES[e]) for e in EMOTIONS]


def circumplex_label_distance():
    """CD(i, j) = polarity distance + circular steps between the labels (003, sec. 4.2), EMOTIONS order."""
    from ..evaluation.clustering import circumplex_distance

    return circumplex_distance([int(ANGLES[e] // 30) for e in EMOTIONS], [POLARITY[e] for e in EMOTIONS])


def nrc_lexicon_path():
    """Path of nrclex's nrc_en.json; DataMissingError when nrclex is not installed."""
    from pathlib import Path

    from ._store import DataMissingError

    try:
        import nrclex
    except ImportError as exc:
        raise DataMissingError("nrclex", f"The NRC lexicon package nrclex is not installed ({exc}).",
                               install="pip install nrclex") from exc
    path = Path(nrclex.__file__).parent / "data" / "nrc_en.json"
    if not path.is_file():
        raise DataMissingError("nrclex", f"nrclex is installed but {path} is missing.", install="pip install nrclex")
    return path


def nrc_items(path=None) -> list[EmotionItem]:
    """One item per NRC word tagged with exactly one of NRC's eight emotions (mapped by NRC_TO_LABEL)."""
    lex = json.loads(open(path or nrc_lexicon_path(), encoding="utf-8").read())
    out = []
    for word, tags in sorted(lex.items()):
        emos = sorted(set(tags) & NRC_EMOTIONS)
        if len(emos) == 1:
            out.append(EmotionItem(word.replace("_", " "), NRC_TO_LABEL[emos[0]], f"nrc:{emos[0]}"))
    return out


def _below(reader, name: str) -> list:
    s = reader.synset(name)
    found = [s]
    found += list(s.closure(lambda x: x.hyponyms()))
    if s.pos() in ("a", "s"):
        found += s.similar_tos()
    return found


def wordnet_items(reader=None) -> list[EmotionItem]:
    """Items from EMOTION_SEEDS and their hyponyms / similar-to satellites (lemmas, glosses, examples).
    KeyError-like ValueError naming a seed synset that the database lacks."""
    from nltk.corpus.reader.wordnet import WordNetError

    if reader is None:
        from .wordnet import load_wordnet

        reader = load_wordnet().reader()
    out = []
    for label in EMOTIONS:
        seen = set()
        for name in EMOTION_SEEDS[label]:
            try:
                synsets = _below(reader, name)
            except WordNetError as exc:
                raise ValueError(f"EMOTION_SEEDS[{label!r}]: WordNet has no synset {name!r}") from exc
            for s in synsets:
                if s.name() in seen:
                    continue
                seen.add(s.name())
                for lem in s.lemma_names():
                    out.append(EmotionItem(lem.replace("_", " "), label, f"wordnet-lemma:{s.name()}"))
                out.append(EmotionItem(s.definition(), label, f"wordnet-gloss:{s.name()}"))
                out += [EmotionItem(e, label, f"wordnet-example:{s.name()}") for e in s.examples()]
    return out


def emotion_pool(*, sources=("wordnet", "nrc"), reader=None, nrc_path=None) -> dict[str, list[EmotionItem]]:
    """Every candidate item per label, texts with two labels dropped, duplicates within a label merged."""
    bad = [s for s in sources if s not in ("wordnet", "nrc")]
    if bad or not sources:
        raise ValueError(f"sources: expected a non-empty subset of ('wordnet', 'nrc'), got {sources!r}")
    items = (wordnet_items(reader) if "wordnet" in sources else []) + (nrc_items(nrc_path) if "nrc" in sources else [])
    labels_of: dict[str, set] = {}
    for it in items:
        labels_of.setdefault(it.text.strip().lower(), set()).add(it.label)
    pool: dict[str, list[EmotionItem]] = {e: [] for e in EMOTIONS}
    seen = set()
    for it in items:
        key = it.text.strip().lower()
        if len(labels_of[key]) == 1 and key and key not in seen:
            seen.add(key)
            pool[it.label].append(it)
    return pool


def build_emotion_set(*, n_per_label: int | None = None, seed: int = 0, sources=("wordnet", "nrc"), reader=None,
                      nrc_path=None) -> list[EmotionItem]:
    """A balanced labelled set: n_per_label items per label (default: the smallest label's pool size),
    drawn uniformly from each label's pool with the seed; ordered label by label round-robin, so any
    prefix of a multiple of 12 items stays balanced. ValueError when a label has fewer than n_per_label."""
    pool = emotion_pool(sources=sources, reader=reader, nrc_path=nrc_path)
    sizes = {e: len(v) for e, v in pool.items()}
    smallest = min(sizes.values())
    if n_per_label is None:
        n_per_label = smallest
    if isinstance(n_per_label, bool) or not isinstance(n_per_label, int) or n_per_label < 1:
        raise ValueError(f"n_per_label: expected a positive int, got {n_per_label!r}")
    short = {e: n for e, n in sizes.items() if n < n_per_label}
    if short:
        raise ValueError(f"n_per_label: {n_per_label} items per label requested, but these labels have fewer: {short}")
    rng = random.Random(f"{seed}:emotion")
    chosen = {e: rng.sample(pool[e], n_per_label) for e in EMOTIONS}
    return [chosen[e][i] for i in range(n_per_label) for e in EMOTIONS]
