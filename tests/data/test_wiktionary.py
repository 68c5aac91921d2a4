"""Wiktextract / kaikki JSONL loader on a small sample in the real format, and its error messages."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from spherekit.data import wiktionary as W

SAMPLE = Path(__file__).parent / "fixtures" / "kaikki_en_sample.jsonl"


def test_sample_senses():
    senses = W.load_wiktionary(SAMPLE)
    got = [(s.word, s.pos, s.definition) for s in senses]
    assert got == [
        ("dog", "n", "A mammal, Canis familiaris or Canis lupus familiaris, that has been domesticated for "
                     "thousands of years."),
        ("dog", "n", "A dull, unattractive man or boy."),   # the sub-sense's own (last) gloss
        ("dog", "n", "A hot dog."),
        ("run", "v", "To move swiftly on foot so that both feet leave the ground during each stride."),
        ("run", "v", "To flee from a danger or towards help."),
        ("happy", "a", "Having a feeling arising from a consciousness of well-being or of enjoyment."),
        ("quickly", "r", "Rapidly; at a fast rate."),
        ("Paris", "n", "The capital city of France."),
        ("ouch", None, "An expression of one's own physical pain."),
    ]  # "no-gloss" sense, form-of "dogs" and the German "Hund" skipped
    dog = senses[0]
    assert dog.examples == ("The dog barked all night.",) and dog.synonyms == ("hound", "doggy")
    assert senses[1].tags == ("derogatory", "slang") and senses[1].synonyms == ("canine",)  # entry-level synonyms
    assert senses[3].examples == ("She runs every morning.", "He ran to the store.")


def test_options():
    with_forms = W.load_wiktionary(SAMPLE, include_form_of=True)
    assert [s.definition for s in with_forms if s.form_of] == ["plural of dog"]
    every_lang = W.load_wiktionary(SAMPLE, lang_code=None)
    assert any(s.word == "Hund" for s in every_lang)
    german = W.load_wiktionary(SAMPLE, lang_code="de")
    assert [(s.word, s.definition) for s in german] == [("Hund", "dog")]


def test_pairs():
    senses = W.load_wiktionary(SAMPLE)
    t2d = W.term_definition_pairs(senses)
    assert ("dog", "A hot.") in [(p.term, p.definition) for p in t2d]
    assert all(p.source == "wiktionary" and p.synset_id is None for p in t2d)
    assert len(t2d) == len(senses)
    assert W.term_definition_pairs(senses, mask_headword=False)[2].definition == "A hot dog."
    syn = {(p.term_a, p.term_b) for p in W.synonym_pairs(senses)}
    assert syn == {("dog", "hound"), ("dog", "doggy"), ("dog", "canine"), ("run", "flee"), ("happy", "glad"),
                   ("happy", "cheerful")}


def test_gzip(tmp_path):
    gz = tmp_path / "sample.jsonl.gz"
    gz.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    assert W.load_wiktionary(gz) == W.load_wiktionary(SAMPLE)


GOOD = {"word": "cat", "pos": "noun", "lang_code": "en", "senses": [{"glosses": ["A feline."]}]}


@pytest.mark.parametrize("line, field, problem", [
    ('{"word": "cat", "pos": "noun", ', "<line>", "not valid JSON"),
    ('["cat"]', "<line>", "expected a JSON object, got list"),
    (json.dumps({"pos": "noun", "lang_code": "en"}), "word", "expected a non-empty string, got None"),
    (json.dumps({"word": "cat", "pos": 3, "lang_code": "en"}), "pos", "expected a non-empty string"),
    (json.dumps({**GOOD, "senses": {"glosses": ["x"]}}), "senses", "expected a list, got dict"),
    (json.dumps({**GOOD, "senses": [{"glosses": "A feline."}]}), "senses[0].glosses",
     "expected a list of strings, got str"),
    (json.dumps({**GOOD, "senses": [{"glosses": ["ok"]}, {"glosses": [1]}]}), "senses[1].glosses", "with int items"),
    (json.dumps({**GOOD, "senses": [{"glosses": ["ok"], "examples": [{"type": "example"}]}]}),
     "senses[0].examples[0].text", "expected a string, got NoneType"),
    (json.dumps({**GOOD, "senses": [{"glosses": ["ok"], "synonyms": [{"sense": "x"}]}]}),
     "senses[0].synonyms[0].word", "expected a string"),
    (json.dumps({**GOOD, "lang_code": 7}), "lang_code", "expected a string, got int"),
])
def test_malformed_line_names_file_line_field(tmp_path, line, field, problem):
    path = tmp_path / "dump.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(W.WiktionaryFormatError) as info:
        W.load_wiktionary(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert str(err).startswith(f"{path}:3: field {field!r}: ") and problem in str(err)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="path: Wiktionary dump .* does not exist"):
        W.load_wiktionary(tmp_path / "absent.jsonl")
