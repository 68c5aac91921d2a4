"""Pair records shared by every lexical source (WordNet, GCIDE, Wiktionary) and the splits.

    TermDefinition(term, definition, synset_id, pos, source)          t2d / d2t pairs
    SynonymPair(term_a, term_b, synset_id, pos, source)                syn pairs
    DefinitionPair(term, definition_a, definition_b, source_a, source_b)   cross-source d2d pairs

`pos` is the coarse part of speech: "n", "v", "a" (adjective, WordNet satellites included), "r"
(adverb), or None when the source gives none of these (prepositions, interjections, ...).
`synset_id` is WordNet's synset name ("dog.n.01") for WordNet records and None elsewhere.
`concept_id` is what a split partitions on: the synset for WordNet, "<source>:<term>" otherwise.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}


_NON_WORD = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=1 << 20)
def term_key(term: str) -> str:
    """The normalised form under which terms are compared across sources (case-folded, '_' -> ' ',
    whitespace collapsed)."""
    return " ".join(term.replace("_", " ").split()).casefold()


@functools.lru_cache(maxsize=1 << 20)
def definition_key(text: str) -> str:
    """Normalised definition text for duplicate checks (case-folded; runs of punctuation, '_' and
    spacing become one space)."""
    return _NON_WORD.sub(" ", text.casefold()).strip()


@dataclass(frozen=True, slots=True)
class TermDefinition:
    term: str
    definition: str
    synset_id: str | None
    pos: str | None
    source: str = "wordnet"

    @property
    def concept_id(self) -> str:
        return self.synset_id if self.synset_id is not None else f"{self.source}:{term_key(self.term)}"


@dataclass(frozen=True, slots=True)
class SynonymPair:
    term_a: str
    term_b: str
    synset_id: str | None
    pos: str | None
    source: str = "wordnet"

    @property
    def concept_id(self) -> str:
        return self.synset_id if self.synset_id is not None else f"{self.source}:{term_key(self.term_a)}"


@dataclass(frozen=True, slots=True)
class DefinitionPair:
    term: str
    definition_a: str
    definition_b: str
    source_a: str
    source_b: str
