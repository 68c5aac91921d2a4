"""WordNet 3.0 concept records, synonym and term-to-definition pairs ("Principles of Concept Representation in
Sentence Encoders" (arXiv:2606.06994), sec. 4.5).

    wn = load_wordnet()                    # 117,659 Concept records (cached; ~1-2 s after the first build)
    c = wn.concept("dog.n.01")             # Concept(synset_id, pos, lemmas, definition, examples, lexname,
                                           #         antonyms, sense_count, onto_type, hypernyms, offset)
    wn.synsets_of("bank", pos="n")         # Concepts that have the term as a lemma, most frequent first
    wn.antonyms_of("increase")             # word-level antonym lookup (['decrease', 'decrement'])
    wn.synonym_pairs()                     # SynonymPair per unordered pair of distinct lemmas of a synset
    wn.term_definition_pairs()             # TermDefinition per (lemma, synset), headword removed
    wn.example_sentences()                 # (synset_id, sentence)

Fields of a Concept:
    synset_id    nltk's synset name, "dog.n.01" (adjective satellites keep "s": "good.s.01")
    pos          coarse part of speech "n", "v", "a" (satellites included), "r"
    lemmas       lemma names in WordNet order, "_" -> " " ("domestic dog", "Canis familiaris")
    definition   the gloss's definition part; examples: its quoted example sentences
    lexname      lexicographer file ("noun.animal")
    antonyms     Antonym(lemma, antonym, synset_id) per antonym link of a lemma (7,979 in all; lemmas in
                 WordNet order, a lemma's antonyms sorted)
    sense_count  frequency: sum over the synset's senses of the SemCor tag counts in index.sense (the
                 sense index; the same counts as cntlist.rev); 0 for untagged synsets
    onto_type    coarse ontological type (spherekit.data.ontology; None for non-nouns and nouns outside
                 the paper's closed set)
    hypernyms    synset ids of direct hypernyms and instance hypernyms, sorted
    offset       byte offset in data.<pos> (with pos, WordNet's own synset key)

The database is read once with nltk's WordNetCorpusReader from <NLTK_DATA>/corpora/wordnet (installed
by `spherekit data install wordnet`) and the records are cached under
cache_dir()/wordnet/records-v<N>-<hash of the database files>-<hash of the building code>.pkl, the masked
pairs beside them (spherekit._store cache entries: checksummed, a damaged file is rebuilt). A
missing database raises DataMissingError naming that command, never nltk's LookupError.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import _wordnet_files
from .._store import (
    DataMissingError, cache_dir, cached, code_signature, file_signature, nltk_data_dirs,
)
from .masking import HeadwordMasker
from .records import SynonymPair, TermDefinition, term_key

CACHE_VERSION = 2  # 2: checksummed cache entries


class Antonym(NamedTuple):
    lemma: str       # the lemma of this synset that has the antonym
    antonym: str     # the antonym lemma
    synset_id: str   # the antonym's synset


@dataclass(frozen=True, slots=True)
class Concept:
    synset_id: str
    pos: str
    lemmas: list[str]
    definition: str
    examples: list[str]
    lexname: str
    antonyms: list[Antonym]
    sense_count: int
    onto_type: str | None
    hypernyms: list[str] = field(default_factory=list)
    offset: int = 0


def _missing(detail: str) -> DataMissingError:
    return DataMissingError("wordnet", detail)


def _register_nltk_base(root) -> None:
    """nltk (>= 3.9.2) refuses to open files outside the directories on nltk.data.path."""
    import nltk.data

    base = str(Path(str(root)).parent.parent)
    if base not in nltk.data.path:
        nltk.data.path.append(base)


def open_reader(root=None):
    """nltk's WordNetCorpusReader over the installed database (for graph queries the cached records do
    not hold, e.g. hypernym_paths or similarity measures)."""
    try:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError as exc:
        raise _missing(f"nltk is not installed ({exc}).") from exc
    root = root or _wordnet_files.find_wordnet_root()
    if root is None:
        searched = ", ".join(str(d) for d in nltk_data_dirs())
        raise _missing(f"WordNet 3.0 (corpora/wordnet) was not found in the NLTK data directories: {searched}.")
    _register_nltk_base(root)
    pointer = root
    if str(root).endswith(".zip"):
        import nltk.data

        pointer = nltk.data.find("corpora/wordnet.zip/wordnet/", paths=[str(Path(root).parent.parent)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available" (no OMW)
            return WordNetCorpusReader(str(pointer) if isinstance(pointer, Path) else pointer, None)
    except (LookupError, OSError) as exc:
        raise _missing(f"WordNet 3.0 at {root} could not be read ({type(exc).__name__}: {exc}).") from exc


class WordNet:
    """All WordNet 3.0 synsets as Concept records plus lookups (see the module docstring)."""

    def __init__(self, concepts: list[Concept], exceptions: dict[str, frozenset], root: str = "",
                 cache_key: str | None = None):
        self.concepts = concepts
        self.exceptions = exceptions
        self.root = root
        self.cache_key = cache_key  # name of the records cache (None: no on-disk pair cache)
        self._by_id = {c.synset_id: c for c in concepts}
        self._term_index: dict[str, list[Concept]] | None = None
        self._antonym_index: dict[str, list[str]] | None = None
        self._reader = None
        self._t2d: dict[tuple, list] = {}  # memoised pair lists (records are immutable)

    def __len__(self) -> int:
        return len(self.concepts)

    def __iter__(self):
        return iter(self.concepts)

    def __contains__(self, synset_id) -> bool:
        return synset_id in self._by_id

    def concept(self, synset_id: str) -> Concept:
        """The Concept of a synset name ("dog.n.01"); KeyError naming it when absent."""
        try:
            return self._by_id[synset_id]
        except KeyError:
            raise KeyError(f"synset_id: no WordNet synset named {synset_id!r}") from None

    __getitem__ = concept

    def by_pos(self, pos: str) -> list[Concept]:
        """Concepts of coarse part of speech pos ("n", "v", "a", "r")."""
        if pos not in ("n", "v", "a", "r"):
            raise ValueError(f"pos: expected one of 'n', 'v', 'a', 'r', got {pos!r}")
        return [c for c in self.concepts if c.pos == pos]

    def by_onto_type(self, kind: str) -> list[Concept]:
        from .ontology import ONTO_TYPES

        if kind not in ONTO_TYPES:
            raise ValueError(f"kind: expected one of {ONTO_TYPES}, got {kind!r}")
        return [c for c in self.concepts if c.onto_type == kind]

    def _terms(self) -> dict[str, list[Concept]]:
        if self._term_index is None:
            index: dict[str, list[Concept]] = defaultdict(list)
            for c in self.concepts:
                for lemma in dict.fromkeys(term_key(x) for x in c.lemmas):
                    index[lemma].append(c)
            for lst in index.values():
                lst.sort(key=lambda c: -c.sense_count)
            self._term_index = dict(index)
        return self._term_index

    def synsets_of(self, term: str, pos: str | None = None) -> list[Concept]:
        """Concepts having `term` as a lemma (case-insensitive, '_' or ' '), most frequent first. The term
        is matched as given (no lemmatisation; use base_forms for inflected words)."""
        found = self._terms().get(term_key(term), [])
        return [c for c in found if pos is None or c.pos == pos]

    def terms(self, pos: str | None = None) -> set[str]:
        """Every lemma as a term key (lower case, spaces)."""
        if pos is None:
            return set(self._terms())
        return {t for t, cs in self._terms().items() if any(c.pos == pos for c in cs)}

    def base_forms(self, word: str) -> set[str]:
        """Candidate base forms of an inflected word (WordNet's rules and exception lists)."""
        from .masking import base_forms

        return base_forms(word, self.exceptions)

    def antonyms_of(self, word: str, pos: str | None = None) -> list[str]:
        """Antonym lemmas of any sense of `word` (exact lemma match, then its base forms), in order of
        the senses' frequency; [] when WordNet lists none."""
        out: dict[str, None] = {}
        candidates = [word] + sorted(self.base_forms(word) - {word.lower()})
        for form in candidates:
            for c in self.synsets_of(form, pos):
                for a in c.antonyms:
                    if term_key(a.lemma) == term_key(form):
                        out.setdefault(a.antonym, None)
            if out:
                break
        return list(out)

    def antonym_links(self) -> list[tuple[Concept, Antonym]]:
        """Every (concept, antonym link) pair: 7,979 in WordNet 3.0."""
        return [(c, a) for c in self.concepts for a in c.antonyms]

    def synonym_pairs(self, pos: str | None = None, both_directions: bool = False) -> list[SynonymPair]:
        """One SynonymPair per unordered pair of distinct lemmas (by term_key) of a synset: 157,925 in
        WordNet 3.0. both_directions=True adds each pair reversed (315,850: the paper's "315K syn")."""
        key = ("syn", bool(both_directions))
        if key not in self._t2d:
            self._t2d[key] = self._synonym_pairs(both_directions)
        return [p for p in self._t2d[key] if pos is None or p.pos == pos]

    def _synonym_pairs(self, both_directions: bool, pos=None) -> list[SynonymPair]:
        out = []
        for c in self.concepts:
            if pos is not None and c.pos != pos:
                continue
            lemmas = list({term_key(x): x for x in reversed(c.lemmas)}.values())[::-1]
            for i in range(len(lemmas)):
                for j in range(i + 1, len(lemmas)):
                    out.append(SynonymPair(lemmas[i], lemmas[j], c.synset_id, c.pos, "wordnet"))
                    if both_directions:
                        out.append(SynonymPair(lemmas[j], lemmas[i], c.synset_id, c.pos, "wordnet"))
        return out

    def term_definition_pairs(self, mask_headword: bool = True, mask_token: str | None = None,
                              pos: str | None = None) -> list[TermDefinition]:
        """One TermDefinition per (lemma, synset): ~207k. With mask_headword the term and its
        inflections are removed from the definition (spherekit.data.masking; mask_token replaces them
        instead of removing); a pair whose masked definition has no word left is dropped. The full list
        is computed once per (mask_headword, mask_token) and kept (records are immutable)."""
        key = (bool(mask_headword), mask_token)
        if key not in self._t2d:
            self._t2d[key] = self._cached_pairs(mask_headword, mask_token)
        return [p for p in self._t2d[key] if pos is None or p.pos == pos]

    def _cached_pairs(self, mask_headword, mask_token) -> list[TermDefinition]:
        """Masked pairs from the on-disk cache (keyed by the database, the masking code and the token)."""
        import hashlib

        from . import masking

        path = None
        if self.cache_key and mask_headword:
            code = code_signature([masking.__file__])
            token = hashlib.sha256(repr(mask_token).encode()).hexdigest()[:8]
            path = cache_dir() / "wordnet" / f"t2d-{self.cache_key}-{code}-{token}.pkl"

        def build():
            return [(p.term, p.definition, p.synset_id, p.pos)
                    for p in self._term_definition_pairs(mask_headword, mask_token)]

        with _gc_paused():
            return cached(path, build, lambda rows: [TermDefinition(t, d, sid, p, "wordnet") for t, d, sid, p in rows])

    def _term_definition_pairs(self, mask_headword, mask_token, pos=None) -> list[TermDefinition]:
        out = []
        masker = HeadwordMasker(self.exceptions, mask_token)
        for c in self.concepts:
            if pos is not None and c.pos != pos:
                continue
            for lemma in c.lemmas:
                definition = c.definition
                if mask_headword:
                    definition = masker(definition, lemma)
                    if not any(ch.isalnum() for ch in definition.replace(mask_token or "", "")):
                        continue
                out.append(TermDefinition(lemma, definition, c.synset_id, c.pos, "wordnet"))
        return out

    def example_sentences(self, pos: str | None = None) -> list[tuple[str, str]]:
        """(synset_id, example sentence) for every example in the glosses."""
        return [(c.synset_id, e) for c in self.concepts if pos is None or c.pos == pos for e in c.examples]

    def reader(self):
        """nltk's WordNetCorpusReader over the same database (opened on first use)."""
        if self._reader is None:
            self._reader = open_reader(self.root or None)
        return self._reader


_LOCK = threading.Lock()
_LOADED: dict[tuple, WordNet] = {}


@contextlib.contextmanager
def _gc_paused():
    """Building ~10^6 small objects: the cyclic GC would rescan them over and over (2-3x slower)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _database_files(root) -> list[Path]:
    root = Path(str(root))
    if root.is_file():  # wordnet.zip
        return [root]
    return [root / f for f in _wordnet_files.REQUIRED_FILES]


_COLUMNS = ("synset_id", "pos", "lemmas", "definition", "examples", "lexname", "antonyms", "sense_count",
            "onto_type", "hypernyms", "offset")


def _from_columns(cols: dict) -> tuple[list[Concept], dict[str, frozenset]]:
    """(concepts, exceptions) from the cached columns; KeyError / ValueError / TypeError when `cols` has
    another structure (a missing column, columns of different lengths, a record of another arity)."""
    concepts = [
        Concept(sid, pos, lemmas, d, ex, lex, [Antonym(*a) for a in ants], cnt, ot, hyp, off)
        for sid, pos, lemmas, d, ex, lex, ants, cnt, ot, hyp, off in zip(*(cols[c] for c in _COLUMNS), strict=True)
    ]
    return concepts, {k: frozenset(v) for k, v in cols["exceptions"].items()}


def cache_path(root) -> Path:
    """Where the parsed records of the database at `root` are cached (keyed by the database files and
    by this module and the ontology mapping, so a code change rebuilds the cache)."""
    from . import _wordnet_build, ontology

    sig = file_signature(_database_files(root))
    code = code_signature([_wordnet_build.__file__, ontology.__file__])
    return cache_dir() / "wordnet" / f"records-v{CACHE_VERSION}-{sig}-{code}.pkl"


def load_wordnet(*, refresh: bool = False, use_cache: bool = True) -> WordNet:
    """The WordNet 3.0 records (see the module docstring). Within a process the same object is returned
    on every call; refresh=True rebuilds the on-disk cache; use_cache=False neither reads nor writes it.
    Raises DataMissingError (run `spherekit data install wordnet`) when the database is absent."""
    root = _wordnet_files.find_wordnet_root()
    if root is None:
        open_reader(None)  # raises the DataMissingError that lists the searched directories
    key = (str(root), file_signature(_database_files(root)))
    with _LOCK, _gc_paused():
        if not refresh and key in _LOADED:
            return _LOADED[key]
        path = cache_path(root)

        def build():
            from . import _wordnet_build

            return _wordnet_build.build_columns(open_reader(root))

        concepts, exceptions = cached(path, build, _from_columns, read=use_cache and not refresh, write=use_cache)
        wn = WordNet(concepts, exceptions, str(root), path.stem if use_cache else None)
        _LOADED[key] = wn
        return wn


def synonym_pairs(wn: WordNet | None = None, pos: str | None = None,
                  both_directions: bool = False) -> list[SynonymPair]:
    """WordNet synonym pairs (see WordNet.synonym_pairs); loads WordNet when wn is None."""
    return (wn or load_wordnet()).synonym_pairs(pos=pos, both_directions=both_directions)


def term_definition_pairs(wn: WordNet | None = None, *, mask_headword: bool = True, mask_token: str | None = None,
                          pos: str | None = None) -> list[TermDefinition]:
    """WordNet term-to-definition pairs (see WordNet.term_definition_pairs); loads WordNet when wn is None."""
    return (wn or load_wordnet()).term_definition_pairs(mask_headword=mask_headword, mask_token=mask_token, pos=pos)
