"""Lexical data for concept-equivalence training and evaluation ("Principles of Concept Representation in Sentence
Encoders" (arXiv:2606.06994), sec. 4.5), offline.

    spherekit.data.wordnet     load_wordnet() -> WordNet (Concept records), synonym / term-definition pairs
    spherekit.data.gcide       load_gcide() -> GCIDE senses, term-definition pairs, cross-source d2d pairs
    spherekit.data.wiktionary  Wiktextract / kaikki JSONL loader
    spherekit.data.splits      make_split("in-domain" | "head-holdout" | "source-holdout", seed=0)
    spherekit.data.masking     headword masking
    spherekit.data.install     `spherekit data install ...` / `spherekit data status`

Submodules are imported on demand (nothing heavy happens on `import spherekit.data`).
"""

from __future__ import annotations

from .._store import DataMissingError, cache_dir, nltk_data_dir
from .records import DefinitionPair, SynonymPair, TermDefinition

__all__ = ["DataMissingError", "DefinitionPair", "SynonymPair", "TermDefinition", "cache_dir", "nltk_data_dir"]
