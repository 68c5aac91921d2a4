"""Headword masking ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994), sec. 4.5 and
appendix B): "a headword-masking transform removes the defined term from each definition before training to prevent
lexical shortcutting".

mask_headword(definition, term) removes every word of the definition that is the term or an inflection
of it (dog -> dogs, dog's; run -> runs, ran, running; happy -> happier), found with WordNet's
morphological rules (morphy's detachment suffixes, doubled final consonants, possessives) and, when
given, WordNet's exception lists (mice -> mouse, ran -> run). For a multi-word term ("domestic dog",
"baby-walker") the same is done for each of its words that is not a function word (of, the, to, ...),
so no content word of the term survives; a single-word term is always removed, even a function word.
Removal is the paper's transform (mask_token=None); a mask_token string ("[MASK]") replaces each word
instead. After removal the text is tidied: doubled spaces, a space before punctuation, empty
parentheses, a dangling hyphen and leading separators go.

    mask_headword("a dog that barks; dogs' owners", "dog")  ->  "a that barks; owners"
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*['\u2019]?")

# morphy's detachment rules (inflected suffix -> base suffix), all parts of speech together, plus
# comparative/superlative. A term's own forms (for an inflected lemma, glasses -> glass) use only the
# noun-plural rules, so that topper -> top or bed -> be never mask a different word.
_PLURAL_RULES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                 ("men", "man"), ("ies", "y"))
_RULES = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
    ("er", ""), ("est", ""), ("er", "e"), ("est", "e"), ("ier", "y"), ("iest", "y"), ("ied", "y"),
)

FUNCTION_WORDS = frozenset(
    "a an the of to in on at by for from with without into onto as and or nor but not no be is are was "
    "were been being it its one one's oneself someone something somebody somewhere up out off over "
    "under about than that this these those".split()
)


def base_forms(word: str, exceptions: Mapping[str, frozenset] | None = None, min_len: int = 2,
               rules=_RULES) -> set[str]:
    """Lower-cased candidate base forms of `word` (itself included): possessive stripped, each
    detachment rule that applies (stems shorter than `min_len` skipped), a doubled final consonant
    undone (running -> run), and the exception-list bases. Over-generation is mostly harmless:
    candidates are only compared with a term."""
    w = word.lower().replace("\u2019", "'")
    out = {w}
    if w.endswith("'s"):
        w = w[:-2]
        out.add(w)
    elif w.endswith("'"):
        w = w[:-1]
        out.add(w)
    for suffix, base in rules:
        if w.endswith(suffix) and len(w) - len(suffix) >= 2 and len(w) - len(suffix) + len(base) >= min_len:
            stem = w[: len(w) - len(suffix)] + base
            out.add(stem)
            if not base and len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                out.add(stem[:-1])
    if exceptions:
        out |= set(exceptions.get(w, ()))
    return out


def term_words(term: str) -> list[str]:
    """The words of a term that get masked: all of a single-word term; the non-function words of a
    multi-word one (underscores and hyphens separate words)."""
    words = [m.group(0).lower() for m in _WORD.finditer(term.replace("_", " "))]
    if len(words) <= 1:
        return words
    content = [w for w in words if w not in FUNCTION_WORDS]
    return content or words


class _Target:
    """The words of one term, with what a definition must contain for any of them to match (a cheap
    substring pre-check that skips tokenising most definitions)."""

    def __init__(self, term: str, exceptions, inflections):
        self.words = []
        probes = set()
        for w in term_words(term):
            forms = base_forms(w, exceptions, min_len=3, rules=_PLURAL_RULES)
            self.words.append((w, forms))
            for f in forms:
                probes.add(f[:-1] if len(f) >= 3 and f[-1] in "ey" else f)  # happ-ier, fl-ies, di-ed
                if f.endswith("man"):
                    probes.add(f[:-3] + "men")
            if inflections:
                probes.update(inflections.get(w, ()))
        self.probes = tuple(probes)

    def maybe_in(self, lowered: str) -> bool:
        return any(p in lowered for p in self.probes)


def invert_exceptions(exceptions: Mapping[str, frozenset] | None) -> dict[str, set[str]]:
    """base -> its irregular inflected forms (mouse -> {mice}), from an inflected -> bases map."""
    inv: dict[str, set[str]] = {}
    for form, bases in (exceptions or {}).items():
        for b in bases:
            inv.setdefault(b, set()).add(form)
    return inv


def _tidy(text: str) -> str:
    text = re.sub(r"\(\s*[,;:]?\s*\)", " ", text)
    text = re.sub(r"\s+([,;:.!?)\]])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.lstrip(",;: ").strip()


class HeadwordMasker:
    """mask_headword with the exception lists prepared once and token analyses memoised (for masking
    a whole dictionary: ~200k definitions in a few seconds)."""

    def __init__(self, exceptions: Mapping[str, frozenset] | None = None, mask_token: str | None = None):
        self.exceptions = exceptions
        self.inflections = invert_exceptions(exceptions)
        self.mask_token = mask_token
        self._forms: dict[str, set[str]] = {}
        self._targets: dict[str, _Target] = {}

    def _token_forms(self, low: str) -> set[str]:
        forms = self._forms.get(low)
        if forms is None:
            forms = self._forms[low] = base_forms(low, self.exceptions)
        return forms

    def __call__(self, definition: str, term: str) -> str:
        if not isinstance(definition, str):
            raise TypeError(f"definition: expected str, got {type(definition).__name__}")
        if not isinstance(term, str) or not term.strip():
            raise ValueError(f"term: expected a non-empty string, got {term!r}")
        target = self._targets.get(term)
        if target is None:
            target = self._targets[term] = _Target(term, self.exceptions, self.inflections)
        if not target.maybe_in(definition.lower()):
            return definition.strip()
        mask_token = self.mask_token
        pieces, last, hit = [], 0, False
        for m in _WORD.finditer(definition):
            low = m.group(0).lower().replace("\u2019", "'")
            forms = self._token_forms(low)
            if not any(w in forms or low in wf for w, wf in target.words):
                continue
            hit = True
            start, end = m.span()
            if mask_token is None:
                # "dog-like" -> "like": drop one joining hyphen with the word.
                if end < len(definition) and definition[end] == "-":
                    end += 1
                elif start > last and definition[start - 1] == "-":
                    start -= 1
                pieces.append(definition[last:start])
                pieces.append(" ")
            else:
                pieces.append(definition[last:start])
                pieces.append(mask_token)
            last = end
        if not hit:
            return definition.strip()
        pieces.append(definition[last:])
        return _tidy("".join(pieces))


def mask_headword(definition: str, term: str, *, mask_token: str | None = None,
                  exceptions: Mapping[str, frozenset] | None = None) -> str:
    """`definition` with the term and its inflections removed (mask_token=None, the paper's transform)
    or replaced by `mask_token`. See the module docstring for what counts as the term."""
    return HeadwordMasker(exceptions, mask_token)(definition, term)
