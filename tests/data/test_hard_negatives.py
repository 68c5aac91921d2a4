"""The five hard-negative rules of "Principles of Concept Representation in Sentence Encoders" (appendix G) on
known examples and on a real WordNet sample."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from spherekit.data.hard_negatives import RULES, HardNegativeGenerator, apply_rule, make_hard_negatives, term_prefix
from spherekit.data.records import TermDefinition, definition_key


@pytest.fixture(scope="module")
def nlp():
    from spherekit.data._spacy import load_spacy

    return load_spacy()


@pytest.mark.parametrize("text, expected", [
    ("The dog is barking.", "The dog is not barking."),
    ("is a warm-blooded vertebrate", "is not a warm-blooded vertebrate"),
    ("the man bit the dog", "the man did not bite the dog"),
    ("a person who works hard", "a person who does not work hard"),
    ("they can swim", "they cannot swim"),
    ("He does not like rain.", "He does like rain."),
    ("he isn't here", "he is here"),
])
def test_negation_known(wn, nlp, text, expected):
    assert apply_rule("negation", text, wordnet=wn, nlp=nlp) == expected


def test_negation_needs_a_finite_verb(wn, nlp):
    assert apply_rule("negation", "a sustained increase in prices", wordnet=wn, nlp=nlp) is None


@pytest.mark.parametrize("text, expected", [
    ("a good person", "a bad person"),
    ("a sustained increase in prices", "a sustained decrease in prices"),
    ("to the left of the door", "to the right of the door"),
    ("an active life", "an inactive life"),
    ("a cold increase in prices", "a cold decrease in prices"),  # the head word, not the first word
    ("an increase in prices", "a decrease in prices"),  # a/an follows the new word
])
def test_antonym_flip_known(wn, nlp, text, expected):
    assert apply_rule("antonym_flip", text, wordnet=wn, nlp=nlp) == expected


def test_antonym_flip_without_antonym(wn, nlp):
    assert apply_rule("antonym_flip", "the dog of the genus Canis", wordnet=wn, nlp=nlp) is None


def test_term_prefix(wn):
    terms = wn.terms()
    assert term_prefix("unhappy", terms) == "un"
    assert term_prefix("overeat", terms) == "over"
    assert term_prefix("rewrite", terms) == "re"
    assert term_prefix("redo", terms) is None  # the rest must have >= 3 letters
    assert term_prefix("read", terms) is None
    assert term_prefix("dog", terms) is None


def _td(term, definition, sid, pos):
    return TermDefinition(term, definition, sid, pos)


def test_swap_rules_draw_from_the_right_candidates(wn, nlp):
    pool = [
        _td("unkind", "lacking kindness", "unkind.a.01", "a"),
        _td("kind", "having a friendly nature", "kind.a.01", "a"),
        _td("hammer", "a hand tool with a heavy head", "hammer.n.02", "n"),
        _td("cat", "feline mammal", "cat.n.01", "n"),
        _td("redo", "do over", "redo.v.01", "v"),
    ]
    gen = HardNegativeGenerator(pool, wordnet=wn, nlp=nlp)
    for seed in range(5):
        rng = random.Random(seed)
        assert gen.apply("prefix_swap", "not happy", term="unhappy", pos="a", rng=rng) == "lacking kindness"
        assert gen.apply("pos_swap", "not happy", term="unhappy", pos="a", rng=rng) in {"lacking kindness",
                                                                                     "having a friendly nature"}
        # dog (biological entity): never the cat (same type), always the hammer (artifact)
        assert wn.concept("dog.n.01").onto_type != wn.concept("hammer.n.02").onto_type
        assert wn.concept("dog.n.01").onto_type == wn.concept("cat.n.01").onto_type
        assert gen.apply("type_swap", "a domestic canine", term="dog", pos="n", synset_id="dog.n.01",
                         rng=rng) == "a hand tool with a heavy head"
    assert gen.apply("prefix_swap", "look at written text", term="read", pos="v") is None
    assert gen.apply("type_swap", "happy", term="glad", pos="a", synset_id="glad.a.01") is None
    # never the pair's own term or definition
    assert gen.apply("pos_swap", "feline mammal", term="cat", pos="n", synset_id="cat.n.01",
                     rng=random.Random(0)) == "a hand tool with a heavy head"


def test_unknown_rule_and_bad_text(wn, nlp):
    with pytest.raises(ValueError, match="rule"):
        apply_rule("shuffle", "a text", wordnet=wn, nlp=nlp)
    with pytest.raises(ValueError, match="text"):
        apply_rule("negation", "  ", wordnet=wn, nlp=nlp)
    with pytest.raises(ValueError, match="term"):
        HardNegativeGenerator([], wordnet=wn, nlp=nlp).apply("pos_swap", "a text")


@pytest.fixture(scope="module")
def sample(wn_pairs):
    return random.Random(123).sample(wn_pairs, 300)


@pytest.fixture(scope="module")
def generated(sample, wn_pairs, wn, nlp):
    return make_hard_negatives(sample, seed=0, pool=wn_pairs, wordnet=wn, nlp=nlp)


def test_rates_on_real_wordnet_sample(sample, generated):
    negs, stats = generated
    assert set(stats) == set(RULES)
    for rule, s in stats.items():
        assert s["attempted"] == len(sample)
        assert s["applied"] == sum(n.rule == rule for n in negs)
        assert s["rate"] == pytest.approx(s["applied"] / s["attempted"])
    assert stats["pos_swap"]["rate"] > 0.95
    assert 0.2 < stats["type_swap"]["rate"] < 0.95
    assert 0.1 < stats["antonym_flip"]["rate"] < 0.95
    assert 0.03 < stats["negation"]["rate"] < 0.7
    assert 0.0 < stats["prefix_swap"]["rate"] < 0.3
    for n in negs:
        assert n.negative.strip() and n.negative != n.definition


def test_negatives_are_minimal_edits_or_swaps(generated):
    negs, _ = generated
    for n in negs:
        if n.rule == "negation":
            added = Counter(n.negative.lower().split()) - Counter(n.definition.lower().split())
            removed = Counter(n.definition.lower().split()) - Counter(n.negative.lower().split())
            negators = {"not", "no", "never", "cannot"}
            inserted = bool(set(added) & negators) and sum(removed.values()) <= 1  # "is not", "does not use" for "uses"
            dropped = bool(set(removed) & negators or any("n't" in w for w in removed)) and sum(added.values()) <= 1
            assert inserted or dropped, (n.definition, n.negative)
        if n.rule == "antonym_flip":
            a, b = n.definition.split(), n.negative.split()
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            j = 0
            while j < min(len(a), len(b)) - k and a[-1 - j] == b[-1 - j]:
                j += 1
            changed = a[k:len(a) - j]
            assert 1 <= len(changed) <= 2, (n.definition, n.negative)  # one word (and its a/an)
            assert len(changed) == 1 or changed[0].lower() in ("a", "an")


def test_deterministic_under_seed(sample, wn_pairs, wn, nlp, generated):
    again = make_hard_negatives(sample, seed=0, pool=wn_pairs, wordnet=wn, nlp=nlp)
    assert again == generated
    other, _ = make_hard_negatives(sample, rules=("pos_swap",), seed=1, pool=wn_pairs, wordnet=wn, nlp=nlp)
    same_seed_swaps = [n for n in generated[0] if n.rule == "pos_swap"]
    assert [n.negative for n in other] != [n.negative for n in same_seed_swaps]
    # a rule's negatives do not depend on which other rules run
    only, _ = make_hard_negatives(sample, rules=("pos_swap",), seed=0, pool=wn_pairs, wordnet=wn, nlp=nlp)
    assert only == same_seed_swaps


@pytest.mark.parametrize("text, expected", [
    ("a mammal", "not a mammal"),                                   # the paper's Figure 1
    ("A sustained increase in prices", "Not a sustained increase in prices"),
    ("not a mammal", "a mammal"),                                   # an already negated phrase loses "not"
    ("(botany) a small plant with yellow flowers", "(botany) not a small plant with yellow flowers"),
    ("a mammal that lays eggs", "a mammal that does not lay eggs"),  # a finite verb comes first
    ("is a warm-blooded vertebrate", "is not a warm-blooded vertebrate"),
    ("no longer a member", None),                                   # negated inside: left alone
    ("full of joy", None),                                          # not a noun phrase
    ("cause to burst", None),
])
def test_negation_of_noun_phrases(wn, nlp, text, expected):
    assert apply_rule("negation", text, wordnet=wn, nlp=nlp, negation="verb or noun phrase") == expected


def test_noun_phrase_negation_is_opt_in(wn, nlp):
    assert apply_rule("negation", "a mammal", wordnet=wn, nlp=nlp) is None
    with pytest.raises(ValueError, match="negation"):
        HardNegativeGenerator([], wordnet=wn, nlp=nlp, negation="every word")
    with pytest.raises(ValueError, match="swap"):
        HardNegativeGenerator([], wordnet=wn, nlp=nlp, swap="farthest")


def test_nearest_swaps_pick_the_closest_allowed_definition(wn, nlp):
    pool = [
        _td("automobile", "a motor vehicle with four wheels and an engine", None, "n"),  # a synonym of car: never
        _td("truck", "a large motor vehicle with six wheels for carrying goods", "truck.n.01", "n"),
        _td("bus", "a vehicle", "bus.n.01", "n"),                  # one scored word: never nearest
        _td("hammer", "a hand tool with a heavy head", "hammer.n.02", "n"),
        _td("cat", "a domesticated feline mammal kept as a pet", "cat.n.01", "n"),
        _td("kennel", "a shelter for a domesticated dog kept as a pet", "kennel.n.01", "n"),
    ]
    gen = HardNegativeGenerator(pool, wordnet=wn, nlp=nlp, swap="nearest")
    for seed in range(3):  # deterministic: no draw
        assert gen.apply("pos_swap", "a motor vehicle with four wheels", term="car", pos="n", synset_id="car.n.01",
                         rng=random.Random(seed)) == "a large motor vehicle with six wheels for carrying goods"
    # dog (biological entity): the cat is nearer but of the same type; the kennel (artifact) is the nearest other
    assert gen.apply("type_swap", "a domesticated canine mammal kept as a pet", term="dog", pos="n",
                     synset_id="dog.n.01") == "a shelter for a domesticated dog kept as a pet"
    assert gen.apply("pos_swap", "a domesticated canine mammal kept as a pet", term="dog", pos="n",
                     synset_id="dog.n.01") == "a domesticated feline mammal kept as a pet"
    # no shared scored word with any candidate: the random draw stands in, counted
    negs, stats = make_hard_negatives([_td("glove", "worn on the fingers", "glove.n.02", "n")], rules=("pos_swap",),
                                      pool=pool, wordnet=wn, nlp=nlp, swap="nearest")
    assert len(negs) == 1 and negs[0].negative in {p.definition for p in pool}
    assert stats["pos_swap"]["random_fallback"] == 1 and stats["pos_swap"]["applied"] == 1


def test_nearest_swaps_on_a_real_sample(sample, wn_pairs, wn, nlp, generated):
    negs, stats = make_hard_negatives(sample, seed=0, pool=wn_pairs, wordnet=wn, nlp=nlp, swap="nearest",
                                      negation="verb or noun phrase")
    random_negs, random_stats = generated
    assert stats["negation"]["applied"] > 2 * random_stats["negation"]["applied"]  # noun phrases now negated
    for rule in ("antonym_flip", "pos_swap", "prefix_swap", "type_swap"):  # the same pairs qualify
        assert stats[rule]["applied"] == random_stats[rule]["applied"], rule
        if rule != "antonym_flip":
            assert 0 <= stats[rule]["random_fallback"] < stats[rule]["applied"] / 2 + 1, rule
    shared = {"nearest": 0, "random": 0}
    for kind, found in (("nearest", negs), ("random", random_negs)):
        for n in found:
            if n.rule == "pos_swap":
                a = set(definition_key(n.definition).split()) - STOP
                shared[kind] += bool(a & set(definition_key(n.negative).split()))
    assert shared["nearest"] > 3 * shared["random"]  # a nearest swap shares content words with d+


STOP = {"a", "an", "the", "of", "or", "and", "to", "in", "for", "with", "by", "that", "as", "on", "is", "from"}
