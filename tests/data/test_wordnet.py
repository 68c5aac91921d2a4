"""WordNet records on the real installed database: counts, known records, onto types, frequencies,
pairs, the missing-data message, and record builds that do not depend on PYTHONHASHSEED."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from math import comb

import pytest

from spherekit.data import DataMissingError
from spherekit.data.ontology import ONTO_TYPES
from spherekit.data.records import term_key
from spherekit.data.wordnet import Antonym, load_wordnet


def test_counts(wn):
    # WordNet 3.0: 117,659 synsets, 206,978 (lemma, synset) senses, 7,979 antonym links
    assert len(wn) == 117659
    assert sum(len(c.lemmas) for c in wn) == 206978
    assert len(wn.antonym_links()) == 7979
    assert len({c.synset_id for c in wn}) == len(wn)
    by_pos = {p: len(wn.by_pos(p)) for p in "nvar"}
    assert by_pos == {"n": 82115, "v": 13767, "a": 18156, "r": 3621}


def test_pair_counts(wn, wn_pairs):
    unmasked = wn.term_definition_pairs(mask_headword=False)
    assert len(unmasked) == 206978
    # masking drops only definitions that consisted of the term alone
    assert 206000 < len(wn_pairs) <= len(unmasked)
    syn = wn.synonym_pairs()
    expected = sum(comb(len({term_key(x) for x in c.lemmas}), 2) for c in wn)
    assert len(syn) == expected
    both = wn.synonym_pairs(both_directions=True)
    assert len(both) == 2 * len(syn)
    assert 315_000 <= len(both) < 316_000  # the paper's "315K syn" from WordNet
    assert all(term_key(p.term_a) != term_key(p.term_b) for p in syn)
    assert {p.source for p in syn} == {"wordnet"}


def test_known_record_dog(wn):
    c = wn.concept("dog.n.01")
    assert c.lemmas == ["dog", "domestic dog", "Canis familiaris"]
    assert c.definition.startswith("a member of the genus Canis (probably descended from the common wolf)")
    assert c.lexname == "noun.animal"
    assert c.pos == "n"
    assert c.onto_type == "biological entity"
    assert "the dog barked all night" in c.examples
    assert set(c.hypernyms) == {"canine.n.02", "domestic_animal.n.01"}
    assert c.sense_count > 0
    assert wn["dog.n.01"] is c
    with pytest.raises(KeyError, match="no WordNet synset named 'dog.n.99'"):
        wn.concept("dog.n.99")


@pytest.mark.parametrize("synset_id, kind", [
    ("paris.n.01", "location"), ("france.n.01", "location"), ("mountain.n.01", "location"),
    ("person.n.01", "person"), ("teacher.n.01", "person"), ("einstein.n.01", "person"),
    ("company.n.01", "organization"), ("university.n.01", "organization"),
    ("war.n.01", "event"), ("wedding.n.01", "event"), ("earthquake.n.01", "event"),
    ("hammer.n.02", "artifact"), ("car.n.01", "artifact"),
    ("dog.n.01", "biological entity"), ("oak.n.02", "biological entity"), ("heart.n.02", "biological entity"),
    ("idea.n.01", "abstract concept"), ("love.n.01", "abstract concept"),
    ("rock.n.01", None), ("water.n.01", None), ("run.v.01", None), ("good.a.01", None),
])
def test_onto_type(wn, synset_id, kind):
    assert wn.concept(synset_id).onto_type == kind


def test_onto_type_closed_set(wn):
    types = {c.onto_type for c in wn}
    assert types == set(ONTO_TYPES) | {None}
    assert all(c.onto_type is None for c in wn if c.pos != "n")
    assert len(wn.by_onto_type("person")) > 5000
    with pytest.raises(ValueError, match="kind: expected one of"):
        wn.by_onto_type("animal")


@pytest.fixture(scope="module")
def reader(wn):
    return wn.reader()


def test_records_match_nltk(wn, reader):
    """Fields against nltk's WordNetCorpusReader (sense counts from cntlist.rev via Lemma.count())."""
    rng = random.Random(0)
    ids = rng.sample([c.synset_id for c in wn], 60) + ["dog.n.01", "good.a.01", "person.n.01", "be.v.01",
                                                        "increase.n.02"]
    for sid in ids:
        c, s = wn.concept(sid), reader.synset(sid)
        assert c.lemmas == [lem.name().replace("_", " ") for lem in s.lemmas()]
        assert c.definition == s.definition()
        assert c.examples == list(s.examples())
        assert c.lexname == s.lexname()
        assert c.sense_count == sum(lem.count() for lem in s.lemmas()), sid
        assert sorted(a.synset_id for a in c.antonyms) == sorted(a.synset().name() for lem in s.lemmas()
                                                                 for a in lem.antonyms())


def test_antonyms(wn):
    assert Antonym("good", "bad", "bad.a.01") in wn.concept("good.a.01").antonyms
    assert "decrease" in wn.antonyms_of("increase")
    assert "cold" in wn.antonyms_of("hotter")  # through the base form
    assert wn.antonyms_of("dog") == []


def test_frequency_order(wn):
    person, dog = wn.concept("person.n.01"), wn.concept("dog.n.01")
    assert person.sense_count > dog.sense_count > 0
    senses = wn.synsets_of("bank", pos="n")
    assert [c.sense_count for c in senses] == sorted((c.sense_count for c in senses), reverse=True)
    assert {c.synset_id for c in senses} >= {"bank.n.01", "depository_financial_institution.n.01"}
    assert wn.synsets_of("Domestic_Dog")[0].synset_id == "dog.n.01"


def test_term_definition_pairs_masked(wn, wn_pairs):
    by_key = {(p.term, p.synset_id): p for p in wn_pairs}
    hittite = by_key[("Hittite", "hittite.n.02")]
    assert "Hittite" not in hittite.definition and hittite.definition.startswith("the language of the and")
    # no single-word term survives as a whole word (any case) in its masked definition
    words = re.compile(r"[\w']+")
    leaks = [p for p in wn_pairs if " " not in p.term and "-" not in p.term
             and p.term.lower() in words.findall(p.definition.lower())]
    assert leaks == []
    masked = wn.term_definition_pairs(mask_token="[MASK]")
    assert len(masked) >= len(wn_pairs)
    h = next(p for p in masked if p.term == "Hittite" and p.synset_id == "hittite.n.02")
    assert "[MASK]" in h.definition
    assert all(p.pos in "nvar" and p.source == "wordnet" for p in wn_pairs[:1000])
    assert wn.term_definition_pairs(pos="r") == [p for p in wn_pairs if p.pos == "r"]


def test_example_sentences(wn):
    ex = wn.example_sentences()
    assert ("dog.n.01", "the dog barked all night") in ex
    assert len(ex) > 40000


def test_records_cached(wn):
    from spherekit.data import wordnet as W

    assert W.cache_path(wn.root).is_file()
    assert load_wordnet() is wn  # one object per process


def test_missing_wordnet_message(isolated_data):
    with pytest.raises(DataMissingError) as info:
        load_wordnet()
    msg = str(info.value)
    assert "spherekit data install wordnet" in msg
    assert str(isolated_data / "nltk_data") in msg
    assert not isinstance(info.value, LookupError)


_BUILD_PART = """
import hashlib, itertools, pickle
from spherekit.data._wordnet_build import build_columns
from spherekit.data.wordnet import open_reader
reader = open_reader()
every = reader.all_synsets
reader.all_synsets = lambda: itertools.chain(itertools.islice(every("n"), 20000), itertools.islice(every("a"), 5000))
cols = build_columns(reader)
print(sum(len(h) > 1 for h in cols["hypernyms"]), hashlib.sha256(pickle.dumps(cols)).hexdigest())
"""


def test_records_do_not_depend_on_hash_seed():
    """The record columns of 25,000 synsets (nltk keeps pointers in sets, whose order follows the string
    hash) are pickled to the same bytes under two PYTHONHASHSEED values: two machines build the same cache."""
    out = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, "-c", _BUILD_PART], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out.append(proc.stdout.split())
    assert int(out[0][0]) > 100  # synsets with several hypernyms: where the order used to vary
    assert out[0] == out[1]
