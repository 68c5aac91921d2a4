"""The 12-label circumplex emotion set of "Mapping the Circumplex of Affect" built from WordNet, the NRC
lexicon and GCIDE, and its fixed train/test split."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from spherekit.data.emotion import (ALL_SOURCES, ANGLES, DEFAULT_SOURCES, EMOTIONS, NRC_TO_LABEL, build_emotion_set,
                                    circumplex_label_distance, emotion_lexicon, emotion_pool, emotion_split,
                                    entry_quotations, gcide_items, label_angles_radians, nrc_lexicon_path, pool_sizes)


@pytest.fixture(scope="module")
def reader(wn):
    return wn.reader()


@pytest.fixture(scope="module")
def items(reader):
    return build_emotion_set(seed=0, reader=reader)


def test_labels_and_angles():
    assert len(EMOTIONS) == 12 and len(set(EMOTIONS)) == 12
    # stated in "Mapping the Circumplex of Affect", appendix C.4
    assert (ANGLES["love"], ANGLES["calmness"], ANGLES["trust"]) == (0.0, 270.0, 330.0)
    assert abs(ANGLES["disgust"] - ANGLES["love"]) == 180.0  # love opposes disgust
    assert abs(ANGLES["trust"] - ANGLES["fear"]) == 180.0  # trust opposes fear
    assert sorted(ANGLES.values()) == [30.0 * i for i in range(12)]
    assert label_angles_radians()[EMOTIONS.index("calmness")] == pytest.approx(1.5 * np.pi)


def test_circumplex_distance():
    cd = circumplex_label_distance()
    assert cd.shape == (12, 12) and np.allclose(cd, cd.T) and np.all(np.diag(cd) == 0)
    i = EMOTIONS.index
    assert cd[i("love"), i("joy")] == 1 and cd[i("love"), i("disgust")] == 4 + 6  # opposite polarity, 6 steps
    assert cd[i("love"), i("disgust")] == cd.max()


def test_balanced_with_12_labels_and_provenance(items, reader):
    counts = Counter(i.label for i in items)
    assert set(counts) == set(EMOTIONS) and len(set(counts.values())) == 1 and min(counts.values()) >= 30
    assert len({i.text.lower() for i in items}) == len(items)
    lex = json.loads(nrc_lexicon_path().read_text(encoding="utf-8"))
    kinds = Counter()
    for it in items:
        kind, _, ref = it.provenance.partition(":")
        kinds[kind] += 1
        if kind == "nrc":
            assert NRC_TO_LABEL[ref] == it.label and ref in lex[it.text.replace(" ", "_")]
        else:
            assert kind in ("wordnet-lemma", "wordnet-gloss", "wordnet-example")
            s = reader.synset(ref)
            assert it.text in {"wordnet-lemma": [x.replace("_", " ") for x in s.lemma_names()],
                               "wordnet-gloss": [s.definition()], "wordnet-example": s.examples()}[kind]
    assert kinds["nrc"] > 0 and kinds["wordnet-gloss"] > 0 and kinds["wordnet-example"] > 0
    # labels without an NRC category come from WordNet only
    assert not [i for i in items if i.label in ("love", "boredom", "calmness", "relief") and i.provenance.startswith("nrc")]


def test_round_robin_order_and_determinism(items, reader):
    assert [i.label for i in items[:12]] == list(EMOTIONS)
    assert build_emotion_set(seed=0, reader=reader) == items
    assert build_emotion_set(seed=1, reader=reader) != items
    small = build_emotion_set(seed=0, reader=reader, n_per_label=5)
    assert len(small) == 60 and Counter(i.label for i in small) == dict.fromkeys(EMOTIONS, 5)


def test_errors(reader):
    pool = emotion_pool(reader=reader)
    too_many = min(len(v) for v in pool.values()) + 1
    with pytest.raises(ValueError, match="n_per_label"):
        build_emotion_set(reader=reader, n_per_label=too_many)
    with pytest.raises(ValueError, match="sources"):
        emotion_pool(sources=("twitter",), reader=reader)


# ---- more sources and the train/test split ----

NEW_KINDS = {"wordnet-related-lemma", "wordnet-related-gloss", "wordnet-related-example", "wordnet-derived-lemma",
             "wordnet-derived-gloss", "wordnet-derived-example", "gcide-def", "gcide-example", "gcide-quote"}
OLD_KINDS = {"wordnet-lemma", "wordnet-gloss", "wordnet-example", "nrc"}


@pytest.fixture(scope="module")
def full_pool(reader, gcide):
    return emotion_pool(sources=ALL_SOURCES, reader=reader, gcide=gcide)


@pytest.fixture(scope="module")
def split(reader, gcide):
    return emotion_split(n_train_per_label=None, n_test_per_label=30, seed=0, reader=reader, gcide=gcide)


def test_new_sources_give_more_texts(reader, full_pool):
    old = emotion_pool(reader=reader)
    assert DEFAULT_SOURCES == ("wordnet", "nrc") and set(ALL_SOURCES) == {"wordnet", "nrc", "wordnet-related", "gcide"}
    for e in EMOTIONS:
        assert len(full_pool[e]) > len(old[e]) + 50, e
    assert min(len(v) for v in full_pool.values()) >= 200  # was 53 (relief) with WordNet + NRC
    sizes = pool_sizes(full_pool)
    assert all(sizes[e]["total"] == len(full_pool[e]) for e in EMOTIONS)
    assert all(sizes[e].get("gcide-quote", 0) > 10 and sizes[e].get("gcide-def", 0) > 10 for e in EMOTIONS)
    texts = [i.text.strip().lower() for v in full_pool.values() for i in v]
    assert len(texts) == len(set(texts))  # one label per text, no duplicates


def test_new_provenance_checks_out(full_pool, reader, gcide):
    lexicon = emotion_lexicon(reader)
    kinds = set()
    for e in EMOTIONS:
        for it in full_pool[e]:
            kind, _, ref = it.provenance.partition(":")
            kinds.add(kind)
            assert kind in NEW_KINDS | OLD_KINDS and ref, it
            if kind.startswith(("wordnet-related", "wordnet-derived")):
                s = reader.synset(ref)
                part = kind.rsplit("-", 1)[1]
                assert it.text in {"lemma": [x.replace("_", " ") for x in s.lemma_names()], "gloss": [s.definition()],
                                   "example": s.examples()}[part]
                assert ref not in lexicon[e].core
            elif kind.startswith("gcide"):
                assert ref in lexicon[e].headwords
                if kind == "gcide-def":
                    assert it.text in {x.definition for x in gcide.senses_of(ref)}
    assert NEW_KINDS <= kinds


def test_emotion_split_is_disjoint_balanced_and_seeded(split, reader, gcide, full_pool):
    train, test = split
    assert Counter(i.label for i in test) == dict.fromkeys(EMOTIONS, 30)
    n_train = min(len(v) for v in full_pool.values()) - 30
    assert Counter(i.label for i in train) == dict.fromkeys(EMOTIONS, n_train)
    assert not {i.text.lower() for i in train} & {i.text.lower() for i in test}
    assert [i.label for i in test[:12]] == list(EMOTIONS) and [i.label for i in train[:12]] == list(EMOTIONS)
    assert all(i.provenance.partition(":")[0] in NEW_KINDS | OLD_KINDS for i in train + test)
    assert {i.provenance.partition(":")[0] for i in train} & NEW_KINDS
    again = emotion_split(n_train_per_label=None, n_test_per_label=30, seed=0, reader=reader, gcide=gcide)
    assert again == split
    other = emotion_split(n_train_per_label=100, n_test_per_label=30, seed=1, reader=reader, gcide=gcide)
    assert other[1] != test and Counter(i.label for i in other[0]) == dict.fromkeys(EMOTIONS, 100)


def test_emotion_split_label_subset_and_errors(reader, gcide, full_pool):
    ed = ("joy", "excitement", "surprise", "anger", "fear", "disgust", "sadness", "trust")  # Empathetic Dialogues' 8
    train, test = emotion_split(n_train_per_label=50, n_test_per_label=10, labels=ed, sources=("wordnet", "nrc"),
                                reader=reader)
    assert Counter(i.label for i in test) == dict.fromkeys(ed, 10) and len(train) == 8 * 50
    smallest = min(len(v) for v in full_pool.values())
    with pytest.raises(ValueError, match="n_test_per_label"):
        emotion_split(n_train_per_label=None, n_test_per_label=smallest + 1, reader=reader, gcide=gcide)
    with pytest.raises(ValueError, match="n_train_per_label"):
        emotion_split(n_train_per_label=smallest, n_test_per_label=10, reader=reader, gcide=gcide)
    with pytest.raises(ValueError, match="labels"):
        emotion_split(n_train_per_label=None, n_test_per_label=10, labels=("joy", "pride"), reader=reader)
    with pytest.raises(ValueError, match="sources"):
        emotion_split(n_train_per_label=None, n_test_per_label=10, sources="gcide", reader=reader)


FEAR_ENTRY = """Fear \\Fear\\, n. [OE. fer, feer.]
   1. A painful emotion or passion excited by the expectation of
      evil; apprehension; dread.
      [1913 Webster]

            Where no hope is left, is left no fear. --Milton.
      [1913 Webster]

   Note: With subordinate clause.

               I greatly fear my money is not safe. --Shak.
         [1913 Webster]

   2. That which causes apprehension or alarm. "There were
      they in great fear, where no fear was." --Shak.
      [1913 Webster]

            The fear of your adventure would counsel you to a
            more equal enterprise.                --Shak.
      [1913 Webster]

   {For fear}, in apprehension lest.
      [1913 Webster]

            For fear you ne'er see chain nor money more.
                                                  --Shak.
      [1913 Webster]
"""


def test_entry_quotations_pairs_quotes_with_senses():
    heads, pairs = entry_quotations(FEAR_ENTRY)
    assert heads == ["Fear"]
    first = "A painful emotion or passion excited by the expectation of evil; apprehension; dread."
    assert pairs == [
        (first, "Where no hope is left, is left no fear."),
        (first, "I greatly fear my money is not safe."),                    # under the sense's Note
        ("That which causes apprehension or alarm.",
         "The fear of your adventure would counsel you to a more equal enterprise."),
        ("That which causes apprehension or alarm.", "There were they in great fear, where no fear was."),  # inline
    ]  # the {For fear} sub-entry's quotation is skipped


def test_gcide_headword_masking(reader, gcide):
    lexicon = emotion_lexicon(reader)
    masked = gcide_items(gcide, lexicon=lexicon, mask_headword=True)
    plain = gcide_items(gcide, lexicon=lexicon)
    assert 0 < len(masked) <= len(plain)
    quotes = [i for i in masked if i.provenance == "gcide-quote:fear"]
    assert quotes and not [i for i in quotes if "fear" in i.text.lower().split()]
    assert [i for i in plain if i.provenance == "gcide-quote:fear" and "fear" in i.text.lower().split()]


def test_pool_does_not_depend_on_the_hash_seed(tmp_path):
    """Set iteration order changes with PYTHONHASHSEED: the pool (and so every seeded split) must not."""
    import os
    import subprocess
    import sys

    script = ("import hashlib; from spherekit.data.emotion import emotion_pool, ALL_SOURCES; "
              "p = emotion_pool(sources=ALL_SOURCES); "
              "print(hashlib.sha256('|'.join(i.provenance + i.text for v in p.values() for i in v).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(digests) == 1
