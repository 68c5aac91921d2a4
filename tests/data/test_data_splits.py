"""Decontaminated splits on the real data: disjointness checked here independently of the library's
own check, determinism per seed, the head-holdout ranking, source-holdout sources, and errors."""

from __future__ import annotations

import dataclasses

import pytest

from spherekit.data.records import definition_key, term_key
from spherekit.data.splits import DEFAULT_SIZES, ContaminationError, Split, check_decontaminated, make_split


@pytest.fixture(scope="module")
def splits(wn, gcide):
    return {kind: make_split(kind, seed=0, wordnet=wn, gcide=gcide) for kind in DEFAULT_SIZES}


def _assert_disjoint(split: Split):
    test_concepts = {p.concept_id for p in split.test}
    test_terms = {term_key(p.term) for p in split.test}
    test_defs = {definition_key(p.definition) for p in split.test}
    dev_concepts = {p.concept_id for p in split.dev}
    dev_terms = {term_key(p.term) for p in split.dev}
    train_concepts = {p.concept_id for p in split.train} | {s.concept_id for s in split.train_synonyms}
    train_terms = ({term_key(p.term) for p in split.train} | {term_key(s.term_a) for s in split.train_synonyms}
                   | {term_key(s.term_b) for s in split.train_synonyms})
    assert not test_concepts & train_concepts
    assert not test_terms & train_terms
    assert not test_concepts & dev_concepts and not test_terms & dev_terms
    assert not dev_concepts & train_concepts and not dev_terms & train_terms
    assert not test_defs & {definition_key(p.definition) for p in split.train}


@pytest.mark.parametrize("kind", sorted(DEFAULT_SIZES))
def test_decontaminated_and_sized(splits, kind):
    split = splits[kind]
    _assert_disjoint(split)
    check_decontaminated(split)
    assert split.train and split.dev and split.test
    assert len({p.concept_id for p in split.test}) == DEFAULT_SIZES[kind]["n_test"]
    assert split.info["dropped"] > 0  # polysemous test terms removed other senses from training
    assert len(split.train) > 150_000
    assert kind in split.summary()


def test_in_domain_partitions_wordnet(splits, wn_pairs):
    split = splits["in-domain"]
    assert {p.source for p in split.train + split.dev + split.test} == {"wordnet"}
    assert len(split.train_synonyms) > 100_000
    # every WordNet pair lands in exactly one part or is dropped for sharing a held-out term
    assert len(split.train) + len(split.dev) + len(split.test) + split.info["dropped"] == len(wn_pairs)
    test_ids = {p.synset_id for p in split.test}
    assert all(p.synset_id in test_ids for p in wn_pairs if p.synset_id in test_ids and p in split.test)
    n_dev_synsets = len({p.synset_id for p in split.dev})
    assert 0.8 * DEFAULT_SIZES["in-domain"]["n_dev"] < n_dev_synsets <= DEFAULT_SIZES["in-domain"]["n_dev"]


def test_seeds(wn, splits):
    again = make_split("in-domain", seed=0, wordnet=wn, synonyms=False)
    assert again.test == splits["in-domain"].test and again.train == splits["in-domain"].train
    other = make_split("in-domain", seed=1, wordnet=wn, synonyms=False)
    overlap = {p.synset_id for p in other.test} & {p.synset_id for p in again.test}
    assert len(overlap) < 200  # 2,000 of ~117k synsets each: a few dozen in common by chance


def test_head_holdout_takes_the_most_frequent(wn, splits):
    split = splits["head-holdout"]
    test_ids = {p.synset_id for p in split.test}
    lowest_test = min(wn.concept(s).sense_count for s in test_ids)
    highest_rest = max(c.sense_count for c in wn if c.synset_id not in test_ids)
    assert lowest_test >= highest_rest
    assert {"person.n.01", "be.v.01"} <= test_ids
    assert split.info["min_test_sense_count"] == lowest_test
    assert not any(term_key(p.term) == "person" for p in split.train)


def test_source_holdout_sources(splits):
    split = splits["source-holdout"]
    assert {p.source for p in split.test} == {"wordnet"}
    assert {p.source for p in split.train} == {"gcide"} and {p.source for p in split.dev} == {"gcide"}
    assert split.train_synonyms == []


def test_extra_training_source(wn, gcide):
    split = make_split("in-domain", seed=3, wordnet=wn, gcide=gcide, sources=("wordnet", "gcide"), n_test=300,
                       n_dev=100, synonyms=False)
    assert {p.source for p in split.train} == {"wordnet", "gcide"}
    _assert_disjoint(split)


def test_fraction_sizes(wn, wn_pairs):
    split = make_split("in-domain", seed=0, wordnet=wn, n_test=0.01, n_dev=0.005, synonyms=False)
    assert len({p.synset_id for p in split.test}) == round(0.01 * len({p.synset_id for p in wn_pairs}))


def test_check_catches_contamination(splits):
    split = splits["in-domain"]
    leaked = dataclasses.replace(split, train=split.train + [split.test[0]])
    with pytest.raises(ContaminationError, match="train pairs share a concept or term with test"):
        check_decontaminated(leaked)
    t = split.test[0]
    same_term = dataclasses.replace(t, synset_id="other.n.99", definition="something else entirely")
    with pytest.raises(ContaminationError, match="share a concept or term with test"):
        check_decontaminated(dataclasses.replace(split, train=split.train + [same_term]))
    same_def = dataclasses.replace(t, term="zzqx", synset_id="other.n.99")
    with pytest.raises(ContaminationError, match="have a test definition"):
        check_decontaminated(dataclasses.replace(split, train=split.train + [same_def]))
    syn = dataclasses.replace(split.train_synonyms[0], term_b=t.term)
    with pytest.raises(ContaminationError, match="synonym pairs"):
        check_decontaminated(dataclasses.replace(split, train_synonyms=split.train_synonyms + [syn]))
    with pytest.raises(ValueError, match="split.dev: empty"):
        check_decontaminated(dataclasses.replace(split, dev=[]))


def test_bad_arguments(wn):
    with pytest.raises(ValueError, match="kind: expected one of"):
        make_split("random", wordnet=wn)
    with pytest.raises(ValueError, match="n_test: expected between 1 and"):
        make_split("in-domain", wordnet=wn, n_test=0)
    with pytest.raises(ValueError, match="n_test: expected between 1 and"):
        make_split("head-holdout", wordnet=wn, n_test=10**6)
    with pytest.raises(TypeError, match="seed: expected an int"):
        make_split("in-domain", seed="0", wordnet=wn)
    with pytest.raises(ValueError, match="train_source"):
        make_split("source-holdout", wordnet=wn, train_source="oxford")
    with pytest.raises(ValueError, match="sources: expected some of"):
        make_split("in-domain", wordnet=wn, sources=("wordnet", "oxford"), n_test=10, n_dev=10)
