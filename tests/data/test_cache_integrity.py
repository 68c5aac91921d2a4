"""Damaged on-disk caches: every cache entry carries a sha256 of its content, a file that fails it (random
bytes, a pickle of another structure, one changed byte, a truncation) is rebuilt with a warning naming it,
and what is loaded afterwards equals what was built. Covers the shared mechanism (spherekit._store)
and each cache: WordNet records and pairs, GCIDE senses and pairs, near-misses, circumplex token states."""

from __future__ import annotations

import pickle
import re
import struct
import warnings
from types import SimpleNamespace

import pytest
import torch

from spherekit.data import gcide as G
from spherekit.data import nearmiss as NM
from spherekit.data import wordnet as W
from tests.data.test_gcide import dictd_dir  # noqa: F401 (fixture: a small synthetic dictd GCIDE)


def _replace_once(path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) >= 1, f"{old!r} not in {path}"
    path.write_bytes(data.replace(old, new, 1))


DAMAGES = {
    # bytes on which pickle.load raises MemoryError, OverflowError, TypeError
    "memory-error": lambda p, word: p.write_bytes(b"\x80\x05\x8e" + struct.pack("<Q", 2 ** 62)),
    "overflow-error": lambda p, word: p.write_bytes(b"\x80\x05\x8d" + struct.pack("<Q", 2 ** 63 + 5)),
    "type-error": lambda p, word: p.write_bytes(b"N)R."),
    "wrong-structure": lambda p, word: p.write_bytes(pickle.dumps({"version": 1, "synset_id": ["x"], "rows": 1})),
    "one-byte": lambda p, word: _replace_once(p, word.encode(), word[:-1].encode() + word[-1].upper().encode()),
    "truncated": lambda p, word: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
}


def _reload_warns(path, load):
    """load() after damage: one warning naming the damaged file, then a later load() without any."""
    with pytest.warns(RuntimeWarning, match=re.escape(str(path))):
        got = load()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load() == got  # rebuilt and rewritten intact
    return got


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("which", ["senses", "pairs"])
def test_gcide_caches(dictd_dir, isolated_data, which, damage):  # noqa: F811
    def senses():
        G._LOADED.clear()
        return [tuple(getattr(s, f) for f in G.GcideSense.__slots__) for s in G.load_gcide(gcide_dir=dictd_dir)]

    def pairs():
        G._LOADED.clear()
        return G.load_gcide(gcide_dir=dictd_dir).term_definition_pairs()

    load = senses if which == "senses" else pairs
    first = load()
    cache = isolated_data / "cache" / "gcide"
    path = G.cache_file("dictd", dictd_dir) if which == "senses" else next(cache.glob("t2d-*"))
    DAMAGES[damage](path, "quadruped")
    assert _reload_warns(path, load) == first


FAKE_COLUMNS = {
    "synset_id": ["dog.n.01", "cat.n.01"], "pos": ["n", "n"], "lemmas": [["dog", "domestic dog"], ["cat"]],
    "definition": ["a member of the genus Canis", "feline mammal usually having thick soft fur"],
    "examples": [["the dog barked"], []], "lexname": ["noun.animal", "noun.animal"], "antonyms": [[], []],
    "sense_count": [42, 18], "hypernyms": [["canine.n.02", "domestic_animal.n.01"], ["feline.n.01"]],
    "offset": [2084071, 2121620], "onto_type": ["biological entity", "biological entity"],
    "exceptions": {"dogs": ("dog",)},
}


@pytest.fixture
def fake_wordnet(tmp_path, monkeypatch):
    """load_wordnet over the installed database files (its cache key) but records from FAKE_COLUMNS, cached
    in a temporary folder."""
    from spherekit.data import _wordnet_build, _wordnet_files

    root = _wordnet_files.find_wordnet_root()
    monkeypatch.setenv("NLTK_DATA", str(root.parent.parent))  # corpora/wordnet, wherever it was found
    monkeypatch.setenv("SPHEREKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(W, "_LOADED", {})
    monkeypatch.setattr(W, "open_reader", lambda root=None: None)
    monkeypatch.setattr(_wordnet_build, "build_columns", lambda reader: {k: v for k, v in FAKE_COLUMNS.items()})
    return tmp_path / "cache" / "wordnet"


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("which", ["records", "pairs"])
def test_wordnet_caches(fake_wordnet, which, damage):
    def records():
        W._LOADED.clear()
        wn = W.load_wordnet()
        return wn.concepts, wn.exceptions

    def pairs():
        W._LOADED.clear()
        return W.load_wordnet().term_definition_pairs()

    load = records if which == "records" else pairs
    first = load()
    assert W.load_wordnet().concept("dog.n.01").hypernyms == ["canine.n.02", "domestic_animal.n.01"]
    path = next(fake_wordnet.glob("records-*" if which == "records" else "t2d-*"))
    DAMAGES[damage](path, "Canis")
    assert _reload_warns(path, load) == first


@pytest.mark.parametrize("damage", DAMAGES)
def test_nearmiss_cache(tmp_path, monkeypatch, damage):
    item = NM.NearMiss("the cat sat on the mat", "the cat sat on the mat", "the cat did not sit on the mat",
                       "negation", "verb negation", "identity", "text")
    monkeypatch.setattr(NM, "generate", lambda texts, **kw: [item])
    wordnet = SimpleNamespace(concepts=[], cache_key="fake")

    def load():
        return NM.build_nearmiss(n_per_family=1, positive="anchor", wordnet=wordnet, cache=tmp_path)

    first = load()
    (path,) = tmp_path.iterdir()
    DAMAGES[damage](path, "mat")
    assert _reload_warns(path, load) == first


def test_shared_mechanism(tmp_path):
    from spherekit._store import cached, read_cache, write_cache

    path = tmp_path / "c" / "entry.pkl"
    assert read_cache(path) is None  # absent: no warning
    write_cache(path, {"rows": [1, 2]})
    assert read_cache(path) == {"rows": [1, 2]}
    assert path.read_bytes().startswith(b"spherekit-cache sha256:")
    built = []

    def build():
        built.append(1)
        return [1, 2, 3]

    # an intact entry of another structure (decode raises TypeError) is damaged too: rebuilt and overwritten
    with pytest.warns(RuntimeWarning, match=re.escape(str(path)) + r": damaged cache \(unexpected structure: TypeError"):
        assert cached(path, build, lambda obj: sum(obj)) == 6
    assert read_cache(path) == [1, 2, 3] and built == [1]
    assert cached(path, build, lambda obj: sum(obj)) == 6 and built == [1]
    assert cached(None, build, len) == 3 and built == [1, 1]  # no cache
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match=re.escape(str(blocked / "x.pkl")) + ": cache not written"):
        assert cached(blocked / "x.pkl", build) == [1, 2, 3]


def _token_cache(tmp_path):
    from spherekit.experiments.circumplex.cache import TokenStateCache

    states = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    spec = {"format": 2, "model": "m", "texts": "x", "max_seq_length": 8}
    return TokenStateCache(["a", "bb"], states, torch.tensor([1, 3]), spec).save(tmp_path / "tok")


@pytest.mark.parametrize("damage, file", [("one-byte", "states.safetensors"), ("truncated", "states.safetensors"),
                                          ("one-byte", "texts.json"), ("empty", "meta.json")])
def test_token_state_cache(tmp_path, damage, file, monkeypatch):
    from spherekit._store import CacheDamagedError
    from spherekit.experiments.circumplex.cache import CachedTokenStates, TokenStateCache

    folder = _token_cache(tmp_path)
    loaded = TokenStateCache.load(folder)  # (its tensors map the file: copy them before the damage)
    good = TokenStateCache(loaded.texts, loaded.states.clone(), loaded.lengths.clone(), loaded.spec)
    path = folder / file
    if damage == "one-byte":
        data = bytearray(path.read_bytes())
        data[-3] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        DAMAGES[damage](path, "")
    with pytest.raises(CacheDamagedError, match=re.escape(str(path))):
        TokenStateCache.load(folder)
    with pytest.raises(CacheDamagedError, match=re.escape(str(path))):
        CachedTokenStates(folder)
    if file == "meta.json":
        return
    # load_or_build rebuilds a damaged cache in place
    monkeypatch.setattr(TokenStateCache, "spec_for", classmethod(lambda cls, model, texts, dtype="auto": good.spec))
    monkeypatch.setattr(TokenStateCache, "build", classmethod(lambda cls, *a, **k: TokenStateCache(
        good.texts, good.states, good.lengths, good.spec)))
    monkeypatch.setattr("spherekit.experiments.circumplex.cache.cache_key", lambda spec: folder.name)
    with pytest.warns(RuntimeWarning, match=re.escape(str(path))):
        again = TokenStateCache.load_or_build(None, good.texts, folder.parent)
    assert torch.equal(again.states, good.states) and again.texts == good.texts
    assert torch.equal(TokenStateCache.load(folder).states, good.states)
