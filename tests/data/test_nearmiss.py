"""Structural near-misses of "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" on
known sentences and a small WordNet build."""

from __future__ import annotations

import pytest

from spherekit.data.nearmiss import FAMILIES, build_nearmiss, near_misses, split_by_anchor


@pytest.fixture(scope="module")
def nlp():
    from spherekit.data._spacy import load_spacy

    return load_spacy()


@pytest.mark.parametrize("text, family, expected", [
    ("the cat is above the table", "spatial", ("spatial flip", "the cat is below the table")),
    ("The lamp hangs over the table.", "spatial", ("spatial flip", "The lamp hangs under the table.")),
    ("the box in front of the house", "spatial", ("spatial flip", "the box behind the house")),
    ("the car behind the truck", "spatial", ("spatial flip", "the car in front of the truck")),
    ("the door to the left of the window", "spatial", ("spatial flip", "the door to the right of the window")),
    ("the man bit the dog", "binding", ("subject-object swap", "the dog bit the man")),
    ("The man bit the dog.", "binding", ("subject-object swap", "The dog bit the man.")),
    ("a red car and a blue bike", "binding", ("attribute swap", "a blue car and a red bike")),
    ("The dog is barking.", "negation", ("verb negation", "The dog is not barking.")),
    ("the man bit the dog", "negation", ("verb negation", "the man did not bite the dog")),
])
def test_known_sentences(nlp, text, family, expected):
    assert near_misses(text, nlp=nlp)[family] == expected


def test_families_that_do_not_apply(nlp):
    found = near_misses("the man bit the dog", nlp=nlp)
    assert "spatial" not in found
    assert near_misses("a sustained increase in prices", nlp=nlp) == {}
    assert "binding" not in near_misses("he saw her", nlp=nlp)  # pronoun arguments are not swapped


def test_split_by_anchor_is_disjoint():
    from spherekit.data.nearmiss import NearMiss

    items = [NearMiss(f"s{i}", f"s{i}", f"t{i}", FAMILIES[i % 3], "e", "identity", "text") for i in range(50)]
    items += [NearMiss("s1", "s1", "u1", "spatial", "e", "identity", "text")]
    train, test = split_by_anchor(items, 0.2, seed=0)
    assert len(train) + len(test) == len(items)
    assert not {i.anchor for i in train} & {i.anchor for i in test}
    assert len({i.anchor for i in test}) == 10
    with pytest.raises(ValueError, match="test_fraction"):
        split_by_anchor(items, 1.5)


@pytest.fixture(scope="module")
def built(wn, nlp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nearmiss_cache")
    return folder, build_nearmiss(n_per_family=12, seed=0, wordnet=wn, nlp=nlp, cache=folder)


def test_build_from_wordnet(built):
    _, nm = built
    items = nm.train + nm.test
    assert {f: sum(i.family == f for i in items) for f in FAMILIES} == dict.fromkeys(FAMILIES, 12)
    assert not {i.anchor for i in nm.train} & {i.anchor for i in nm.test}
    assert nm.test and nm.train
    for it in items:
        assert it.near_miss != it.anchor and it.near_miss != it.positive
        assert it.source.startswith(("wordnet-example:", "wordnet-gloss:"))
        assert len(it.anchor) >= 20
        if it.positive_kind == "identity":
            assert it.positive == it.anchor
        else:
            assert it.positive != it.anchor and len(it.positive.split()) == len(it.anchor.split())
    assert any(i.positive_kind == "synonym" for i in items)


def test_cached_atomically_and_deterministic(built, wn, nlp):
    folder, nm = built
    files = list(folder.iterdir())
    assert len(files) == 1 and files[0].suffix == ".pkl"  # no temporary file left behind
    assert build_nearmiss(n_per_family=12, seed=0, wordnet=wn, nlp=nlp, cache=folder).test == nm.test
    fresh = build_nearmiss(n_per_family=12, seed=0, wordnet=wn, nlp=nlp, cache=False)
    assert fresh.train == nm.train and fresh.test == nm.test
    other = build_nearmiss(n_per_family=12, seed=1, wordnet=wn, nlp=nlp, cache=False)
    assert [i.anchor for i in other.train + other.test] != [i.anchor for i in nm.train + nm.test]


def test_positive_anchor_mode(wn, nlp):
    nm = build_nearmiss(n_per_family=3, seed=0, positive="anchor", wordnet=wn, nlp=nlp, cache=False)
    assert all(i.positive == i.anchor and i.positive_kind == "identity" for i in nm.train + nm.test)
    with pytest.raises(ValueError, match="positive"):
        build_nearmiss(n_per_family=3, positive="copy", wordnet=wn, nlp=nlp, cache=False)
