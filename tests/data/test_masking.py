"""Headword masking (paper 000 sec. 4.5: the defined term is removed from its definition)."""

from __future__ import annotations

import pytest

from spherekit.data.masking import HeadwordMasker, base_forms, mask_headword, term_words


@pytest.mark.parametrize("definition, term, removed, masked", [
    ("a dog that barks; dogs' owners and the dog's bone", "dog",
     "a that barks; owners and the bone", "a [MASK] that barks; [MASK] owners and the [MASK] bone"),
    ("he walked and walks while walking", "walk", "he and while", "he [MASK] and [MASK] while [MASK]"),
    ("stopped, stops, stopping", "stop", "", "[MASK], [MASK], [MASK]"),
    ("happier than the happiest", "happy", "than the", "[MASK] than the [MASK]"),
    ("the women and a woman", "woman", "the and a", "the [MASK] and a [MASK]"),
    ("insects that flies; a fly", "fly", "insects that; a", "insects that [MASK]; a [MASK]"),
    ("a dog-like animal", "dog", "a like animal", "a [MASK]-like animal"),
    ("Canis familiaris (domestic dog)", "domestic dog", "Canis familiaris", "Canis familiaris ([MASK] [MASK])"),
    ("the Hittites of old", "Hittite", "the of old", "the [MASK] of old"),
    ("of the Baby Walker kind", "baby-walker", "of the kind", "of the [MASK] [MASK] kind"),
    ("a man of war", "man-of-war", "a of", "a [MASK] of [MASK]"),  # "of" is a function word: kept
])
def test_known_examples(definition, term, removed, masked):
    assert mask_headword(definition, term) == removed
    assert mask_headword(definition, term, mask_token="[MASK]") == masked


def test_irregular_forms_need_the_exception_lists(wn):
    assert mask_headword("small mice", "mouse") == "small mice"
    assert mask_headword("small mice", "mouse", exceptions=wn.exceptions) == "small"
    assert mask_headword("it died and is dying", "die", exceptions=wn.exceptions) == "it and is"
    assert mask_headword("he went home", "go", exceptions=wn.exceptions) == "he home"
    assert mask_headword("he ran and runs", "run") == "he ran and"
    assert mask_headword("he ran and runs", "run", exceptions=wn.exceptions) == "he and"


@pytest.mark.parametrize("definition, term", [
    ("adds the top to something", "topper"),     # derivation, not inflection
    ("the bed is made", "bedding"),
    ("a sunny day", "sun"),
    ("the best of the bests", "be"),
    ("a bedroom and a sunbed", "bed"),
    ("no term here at all", "dog"),
])
def test_other_words_are_kept(definition, term):
    assert mask_headword(definition, term) == definition


def test_single_word_function_term_is_masked():
    assert mask_headword("being there, as it is", "be", mask_token="#") == "# there, as it is"
    assert term_words("to bank a fire") == ["bank", "fire"]
    assert term_words("in") == ["in"]


def test_base_forms():
    assert {"run"} <= base_forms("running")
    assert {"stop"} <= base_forms("stopped")
    assert {"box"} <= base_forms("boxes")
    assert {"city"} <= base_forms("cities")
    assert "be" not in base_forms("bed")
    assert base_forms("Dog's") >= {"dog's", "dog"}


def test_bad_input():
    with pytest.raises(ValueError, match="term: expected a non-empty string"):
        mask_headword("a definition", "  ")
    with pytest.raises(TypeError, match="definition: expected str"):
        mask_headword(None, "dog")


def test_masker_reuse_matches_function(wn):
    masker = HeadwordMasker(wn.exceptions)
    for d, t in [("dogs and mice", "mouse"), ("dogs and mice", "dog"), ("ran away", "run")]:
        assert masker(d, t) == mask_headword(d, t, exceptions=wn.exceptions)
