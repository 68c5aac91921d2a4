"""The 12-label circumplex emotion set of 003_* built from WordNet and the NRC lexicon."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from spherekit.data.emotion import (ANGLES, EMOTIONS, NRC_TO_LABEL, build_emotion_set, circumplex_label_distance,
                                    emotion_pool, label_angles_radians, nrc_lexicon_path)


@pytest.fixture(scope="module")
def reader(wn):
    return wn.reader()


@pytest.fixture(scope="module")
def items(reader):
    return build_emotion_set(seed=0, reader=reader)


def test_labels_and_angles():
    assert len(EMOTIONS) == 12 and len(set(EMOTIONS)) == 12
    assert (ANGLES["love"], ANGLES["calmness"], ANGLES["trust"]) == (0.0, 270.0, 330.0)  # stated in 003 C.4
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
