"""GCIDE: dictd index decoding, entry parsing and markup cleaning (real dict-gcide data and small
synthetic files in both supported formats), cross-source definition pairs."""

from __future__ import annotations

import gzip
import json

import pytest

from spherekit.data import DataMissingError
from spherekit.data.gcide import (
    coarse_pos, cross_source_definition_pairs, decode_b64, find_source, load_gcide, senses_from_text,
)

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def encode_b64(n: int) -> str:
    """dictd's base64 numbers, written independently of the decoder under test."""
    digits = []
    while True:
        digits.append(ALPHABET[n % 64])
        n //= 64
        if n == 0:
            return "".join(reversed(digits))


@pytest.mark.parametrize("n", [0, 1, 63, 64, 4095, 4096, 9573392, 39952320])
def test_b64_roundtrip(n):
    assert decode_b64(encode_b64(n)) == n


def test_b64_known_and_bad():
    assert decode_b64("B") == 1 and decode_b64("BA") == 64 and decode_b64("/") == 63
    assert decode_b64("ba") == 27 * 64 + 26
    with pytest.raises(ValueError, match="not dictd base64"):
        decode_b64("A-B")


def test_real_known_entries(gcide):
    dog = [s for s in gcide.senses_of("dog", pos="n") if s.kind == "sense"]
    assert dog[0].definition == "A quadruped of the genus Canis, esp. the domestic dog (Canis familiaris)."
    sly = next(s for s in dog if s.definition.startswith("A fellow;"))
    assert sly.examples == ("a sly dog", "a lazy dog")  # "; as, ..." moved out of the definition
    verbs = gcide.senses_of("dog", pos="v")
    assert verbs and verbs[0].definition.startswith("To hunt or track like a hound")
    bank = [s.definition for s in gcide.senses_of("bank", pos="n")]
    assert "A steep acclivity, as the slope of a hill, or the side of a ravine." in bank
    assert "The lateral inclination of an aëroplane as it rounds a curve." in bank  # a["e]roplane decoded
    assert "The face of the coal at which miners are working." in bank  # (a) sub-sense of "5. (Mining)"
    swallow = gcide.senses_of("bank swallow")
    assert swallow and swallow[0].kind == "phrase" and "nests in a hole" in swallow[0].definition
    paris = [s.definition for s in gcide.senses_of("paris")]
    assert "The chief city of France." in paris
    assert gcide.senses_of("certified")[0].wordnet_derived
    assert not dog[0].wordnet_derived
    assert {s.term for s in gcide.senses_of("lodestone")} == {"lodestone"}
    assert gcide.senses_of("loadstone")[0].definition == gcide.senses_of("lodestone")[0].definition


def test_real_markup_is_clean(gcide):
    assert len(gcide) > 150_000
    assert len(gcide.terms()) > 100_000
    bad = [s for s in gcide.senses if any(m in s.definition for m in ("{", "}", "[", "]", "\\", "1913", "--Shak"))]
    assert len(bad) < 0.001 * len(gcide), bad[:5]
    assert all(s.definition.strip() == s.definition and s.definition for s in gcide.senses[:20000])
    assert sum(s.wordnet_derived for s in gcide) > 5000


def test_pairs(gcide, gcide_pairs, wn):
    assert 150_000 < len(gcide_pairs) < len(gcide)
    assert {p.source for p in gcide_pairs} == {"gcide"} and all(p.synset_id is None for p in gcide_pairs[:100])
    assert not any(p.term == "certified" for p in gcide_pairs)  # WordNet-derived senses left out
    with_wn = gcide.term_definition_pairs(include_wordnet_derived=True, exceptions=wn.exceptions)
    assert any(p.term == "certified" for p in with_wn)
    dog = [p.definition for p in gcide_pairs if p.term == "dog"]
    assert "A quadruped of the genus Canis, esp. the domestic (Canis familiaris)." in dog


def test_cross_source_pairs(wn, gcide):
    pairs = cross_source_definition_pairs(wn, gcide, terms=["dog", "bank", "happy", "zzzz"])
    by_term = {}
    for p in pairs:
        by_term.setdefault(p.term, []).append(p)
    assert set(by_term) == {"dog", "bank", "happy"}
    assert all(len(v) <= 6 for v in by_term.values()) and len(by_term["bank"]) == 6
    for p in pairs:
        assert (p.source_a, p.source_b) == ("wordnet", "gcide")
        assert p.definition_a in {c.definition for c in wn.synsets_of(p.term)}
        assert p.definition_b in {s.definition for s in gcide.senses_of(p.term)}
    assert pairs[0].definition_a == wn.synsets_of("bank")[0].definition  # most frequent first
    assert len(cross_source_definition_pairs(wn, gcide, terms=["bank"], max_per_term=2)) == 2
    with pytest.raises(ValueError, match="max_per_term"):
        cross_source_definition_pairs(wn, gcide, max_per_term=0)


ENTRIES = [
    ("Dog", 'Dog \\Dog\\ (d[o^]g), n. [AS. docga.]\n   1. (Zool.) A quadruped of the genus {Canis}.\n'
            '      [1913 Webster]\n\n            What is thy servant. --2 Kings viii. 13.\n      [1913 Webster]\n\n'
            '   2. A fellow; as, a sly dog; a lazy dog. [Colloq.]\n      [1913 Webster]\n\n'
            '   Note: The dog is distinguished above all others.\n         [1913 Webster]\n\n'
            '   {Dog days}, the hottest days of summer. See {Canicular}.\n      [1913 Webster]\n'),
    ("certified", 'certified \\certified\\ adj.\n   1. endorsed authoritatively.\n      [WordNet 1.5]\n\n'
                  '   2. legally insane.\n\n   Syn: certifiable.\n        [WordNet 1.5 +PJC]\n'),
    ("Introrse", 'Introrse \\In*trorse"\\, a. [L. introrsus.] (Bot.)\n   Turning or facing inward. --Gray.\n'
                 '   [1913 Webster]\n'),
    ("Dogged", 'Dogged \\Dog"ged\\, imp. & p. p. of {Dog}.\n'),
    ("Kinetograph", 'Kinetograph \\Ki*net"o*graph\\, n.\n   (a) A camera for making chronophotographs. (b) A '
                    'machine for projecting them.\n   [Webster 1913 Suppl.]\n'),
]


@pytest.fixture
def dictd_dir(tmp_path):
    body, index = b"", []
    for head, text in ENTRIES:
        data = text.encode("utf-8")
        index.append(f"{head}\t{encode_b64(len(body))}\t{encode_b64(len(data))}")
        body += data
    index.append(f"dog\t{encode_b64(0)}\t{encode_b64(len(ENTRIES[0][1].encode()))}")  # a second key, same entry
    (tmp_path / "gcide.index").write_text("\n".join(sorted(index)) + "\n", encoding="utf-8")
    (tmp_path / "gcide.dict.dz").write_bytes(gzip.compress(body))
    return tmp_path


def test_synthetic_dictd(dictd_dir, isolated_data):
    assert find_source(dictd_dir) == ("dictd", dictd_dir)
    g = load_gcide(gcide_dir=dictd_dir, use_cache=False)
    got = [(s.term, s.pos, s.kind, s.definition, s.examples, s.wordnet_derived) for s in g]
    assert got == [
        ("dog", "n", "sense", "A quadruped of the genus Canis.", (), False),
        ("dog", "n", "sense", "A fellow.", ("a sly dog", "a lazy dog"), False),
        ("dog days", None, "phrase", "the hottest days of summer.", (), False),
        ("certified", "a", "sense", "endorsed authoritatively.", (), True),
        ("certified", "a", "sense", "legally insane.", (), True),  # tag after its Syn: paragraph
        ("introrse", "a", "sense", "Turning or facing inward.", (), False),  # --Gray. citation dropped
        ("kinetograph", "n", "sense", "A camera for making chronophotographs.", (), False),
        ("kinetograph", "n", "sense", "A machine for projecting them.", (), False),
    ]


def test_dictd_index_past_end(dictd_dir, isolated_data):
    with open(dictd_dir / "gcide.index", "a") as f:
        f.write(f"zebra\t{encode_b64(10**6)}\t{encode_b64(10)}\n")
    with pytest.raises(ValueError, match=r"gcide.index:\d+: entry 'zebra' ends at byte"):
        load_gcide(gcide_dir=dictd_dir, use_cache=False)


def test_pypi_format(tmp_path, isolated_data):
    data = {"dog": {"entry": "dog", "pos": [
        {"part_of_speech": "n.", "etymology": "[AS. docga.]", "definitions": [
            {"text": "A quadruped of the genus Canis.", "examples": ["The dog barked."]},
            {"text": "A fellow; as, a sly dog.", "examples": []}]},
        {"part_of_speech": "v. t.", "definitions": [{"text": "To hunt like a hound.", "examples": []}]}]}}
    (tmp_path / "words_D.json").write_text(json.dumps(data), encoding="utf-8")
    assert find_source(tmp_path) == ("pypi", tmp_path)
    g = load_gcide(gcide_dir=tmp_path, use_cache=False)
    assert [(s.term, s.pos, s.definition, s.examples) for s in g] == [
        ("dog", "n", "A quadruped of the genus Canis.", ("The dog barked.",)),
        ("dog", "n", "A fellow.", ("a sly dog",)),
        ("dog", "v", "To hunt like a hound.", ()),
    ]


def test_coarse_pos():
    assert [coarse_pos(x) for x in ("n.", "n. pl.", "v. t.", "v. i.", "a.", "adj.", "adv.", "p. a.", "prep.", "")] == \
        ["n", "n", "v", "v", "a", "a", "r", "a", None, None]


def test_missing_gcide_message(tmp_path, isolated_data):
    with pytest.raises(DataMissingError, match="spherekit data install gcide"):
        load_gcide(gcide_dir=tmp_path / "nowhere")


def test_senses_from_text_drops_cross_refs():
    text = 'Kuro-Siwo \\Ku"ro-Siwo\\, n. [Jap. kuroshio.]\n   See {Japan Current}, above.\n   [Webster 1913 Suppl.]\n'
    assert senses_from_text(text) == []
