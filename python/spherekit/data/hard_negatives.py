"""The five rule-based hard negatives of "Principles of Concept Representation in Sentence Encoders"
(arXiv:2606.06994), appendix G. Each rule turns a positive definition d+ of a (term, definition) pair into a
negative d-; the same rules serve training (the BCE hard-negative term) and evaluation (the stress-test ROC-AUC,
spherekit.evaluation.evaluators.stress).

    RULES = ("antonym_flip", "negation", "pos_swap", "prefix_swap", "type_swap")

    antonym_flip  a key content word is replaced by its WordNet antonym ("a sustained increase in prices"
                  -> "a sustained decrease in prices"). Key word: the shallowest content word in the
                  spaCy dependency tree (ties: the earlier) that has an antonym for its part of speech;
                  WordNet's most frequent antonym, inflected regularly like the word (spherekit.data._edits).
    negation      the first finite verb or copula is negated by inserting "not" ("is a warm-blooded
                  vertebrate" -> "is not a warm-blooded vertebrate"); a finite main verb gets do-support
                  ("bit" -> "did not bite"); an already negated verb loses its negation. Definitions
                  without a finite verb (most WordNet noun glosses are bare noun phrases) are not edited.
    pos_swap      d+ is replaced by the definition of a randomly drawn pair with a different term (and a
                  different concept and definition text) of the same coarse POS (n, v, a, r).
    prefix_swap   as pos_swap, but the other term shares the term's morphological prefix (PREFIXES). A
                  term has a prefix when it starts with it and the rest (a hyphen dropped) is itself a
                  WordNet term of at least 3 letters ("unhappy" -> un + happy; "read" has none); the
                  longest such prefix counts. Terms without a prefix are not edited.
    type_swap     d+ is replaced by the definition of a randomly drawn concept of a different coarse
                  ontological type (spherekit.data.ontology: person, organization, location, event,
                  artifact, biological entity, abstract concept). Concepts without a type are not edited.

"Each rule is applied once per positive definition; all generated negatives are used": make_hard_negatives
tries every rule on every record and returns one HardNegative per success, with per-rule counts.
Randomness: each swap rule draws from its own random.Random(f"{seed}:{rule}"), so a rule's negatives do
not depend on which other rules run. The replacement definitions come from `pool` (default: the records
themselves; for training pass the training pairs, never test pairs).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .records import definition_key, term_key

RULES = ("antonym_flip", "negation", "pos_swap", "prefix_swap", "type_swap")
RULE_TITLES = {
    "antonym_flip": "antonym flip",
    "negation": "lexical negation",
    "pos_swap": "same-POS random swap",
    "prefix_swap": "same-POS prefix swap",
    "type_swap": "ontological type swap",
}
PARSED_RULES = frozenset({"antonym_flip", "negation"})
PREFIXES = ("counter", "inter", "super", "under", "trans", "anti", "fore", "over", "semi", "dis", "mis", "non",
            "out", "pre", "sub", "de", "im", "in", "re", "un")
MAX_DRAWS = 64


@dataclass(frozen=True, slots=True)
class HardNegative:
    """A (term, positive definition, negative definition) triple and the rule that made the negative."""

    term: str
    definition: str
    negative: str
    rule: str
    synset_id: str | None = None
    pos: str | None = None


def _get(record, name, default=None):
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def _check_rule(name: str) -> None:
    if name not in RULES:
        raise ValueError(f"rule: expected one of {RULES}, got {name!r}")


def term_prefix(term: str, terms: set[str]) -> str | None:
    """The longest PREFIXES entry p with term = p + rest (rest: a WordNet term of >= 3 letters, a
    hyphen after p allowed), or None. `terms` is the set of known terms (WordNet.terms())."""
    t = term_key(term)
    for p in sorted(PREFIXES, key=len, reverse=True):
        if t.startswith(p):
            rest = t[len(p):].lstrip("-")
            if len(rest) >= 3 and rest.isalpha() and rest in terms:
                return p
    return None


class _Pool:
    """Candidate replacement definitions indexed by POS, prefix and ontological type."""

    def __init__(self, pool, wordnet):
        self.items = []
        for r in pool:
            term, d = _get(r, "term"), _get(r, "definition")
            if isinstance(term, str) and isinstance(d, str) and d.strip():
                self.items.append((term_key(term), d, _get(r, "synset_id"), _get(r, "pos")))
        self.wordnet = wordnet
        self._by_pos: dict = {}
        self._by_prefix: dict = {}
        self._typed: list | None = None
        self._terms: set | None = None

    def terms(self) -> set:
        if self._terms is None:
            self._terms = self.wordnet.terms() if self.wordnet is not None else {i[0] for i in self.items}
        return self._terms

    def onto(self, synset_id):
        if synset_id is None or self.wordnet is None or synset_id not in self.wordnet:
            return None
        return self.wordnet.concept(synset_id).onto_type

    def by_pos(self, pos):
        if pos not in self._by_pos:
            self._by_pos[pos] = [i for i in self.items if i[3] == pos]
        return self._by_pos[pos]

    def by_prefix(self, prefix, pos):
        key = (prefix, pos)
        if key not in self._by_prefix:
            terms = self.terms()
            self._by_prefix[key] = [i for i in self.by_pos(pos) if term_prefix(i[0], terms) == prefix]
        return self._by_prefix[key]

    def typed(self):
        if self._typed is None:
            self._typed = [(i, t) for i in self.items if (t := self.onto(i[2])) is not None]
        return self._typed


def _draw(cands, rng, term, definition, synset_id, exclude_type=None):
    """A random candidate definition from a different term, concept and definition text (and, with
    exclude_type, a different ontological type); None after MAX_DRAWS misses or with no candidates."""
    if not cands:
        return None
    tk, dk = term_key(term), definition_key(definition)
    for _ in range(MAX_DRAWS):
        c = cands[rng.randrange(len(cands))]
        item, kind = c if exclude_type is not None else (c, None)
        if item[0] == tk or (synset_id is not None and item[2] == synset_id) or definition_key(item[1]) == dk:
            continue
        if exclude_type is not None and kind == exclude_type:
            continue
        return item[1]
    return None


class HardNegativeGenerator:
    """Applies the rules; holds WordNet, the spaCy pipeline (loaded on first use) and the pool indexes.

    Args:
        pool: records (term, definition, synset_id, pos) the swap rules draw replacements from
            (None: every WordNet term-definition pair).
        wordnet: a loaded spherekit.data.wordnet.WordNet (loaded when needed and None).
        nlp: a spaCy pipeline (spherekit.data._spacy.load_spacy() when None).
    """

    def __init__(self, pool=None, *, wordnet=None, nlp=None):
        self._wordnet = wordnet
        self._nlp = nlp
        self._pool = None if pool is None else _Pool(pool, wordnet)

    @property
    def pool(self) -> _Pool:
        """The replacement index (pool None: every WordNet term-definition pair, built on first use)."""
        if self._pool is None:
            self._pool = _Pool(self.wordnet.term_definition_pairs(), self.wordnet)
        return self._pool

    @property
    def wordnet(self):
        if self._wordnet is None:
            from .wordnet import load_wordnet

            self._wordnet = load_wordnet()
            if self._pool is not None:
                self._pool.wordnet = self._wordnet
        return self._wordnet

    @property
    def nlp(self):
        if self._nlp is None:
            from ._spacy import load_spacy

            self._nlp = load_spacy()
        return self._nlp

    def apply(self, name: str, text: str, *, term: str | None = None, pos: str | None = None,
              synset_id: str | None = None, rng: random.Random | None = None, doc=None) -> str | None:
        """The negative of definition `text` under rule `name`, or None when the rule does not apply.
        The swap rules need the pair's term (and pos; type_swap its synset_id) and an rng (default
        random.Random(0)); doc: a spaCy parse of `text` to reuse."""
        from . import _edits

        _check_rule(name)
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text: expected a non-empty string, got {text!r}")
        if name in PARSED_RULES:
            doc = doc if doc is not None else self.nlp(text)
            if name == "negation":
                return _edits.negate(doc)
            return _edits.antonym_flip(doc, self.wordnet)
        if term is None:
            raise ValueError(f"term: rule {name!r} needs the pair's term, got None")
        rng = rng or random.Random(0)
        if name == "type_swap":
            self.wordnet  # noqa: B018 - the pool needs WordNet for the types
            kind = self.pool.onto(synset_id)
            if kind is None:
                return None
            return _draw(self.pool.typed(), rng, term, text, synset_id, exclude_type=kind)
        if pos is None:
            return None
        if name == "pos_swap":
            return _draw(self.pool.by_pos(pos), rng, term, text, synset_id)
        self.wordnet  # noqa: B018 - prefixes are checked against the WordNet terms
        prefix = term_prefix(term, self.pool.terms())
        if prefix is None:
            return None
        return _draw(self.pool.by_prefix(prefix, pos), rng, term, text, synset_id)


_DEFAULT: dict = {}


def apply_rule(name: str, text: str, *, term: str | None = None, pos: str | None = None,
               synset_id: str | None = None, pool=None, rng: random.Random | None = None, wordnet=None,
               nlp=None) -> str | None:
    """Apply one rule to one definition (see HardNegativeGenerator.apply). `pool`: records for the swap
    rules (default: all WordNet term-definition pairs). Returns None when the rule does not apply."""
    _check_rule(name)
    if pool is None and wordnet is None and nlp is None:
        gen = _DEFAULT.get("gen")
        if gen is None:
            gen = _DEFAULT["gen"] = HardNegativeGenerator(None)
    else:
        gen = HardNegativeGenerator(pool, wordnet=wordnet, nlp=nlp)
    return gen.apply(name, text, term=term, pos=pos, synset_id=synset_id, rng=rng)


def make_hard_negatives(records, rules=RULES, seed: int = 0, *, pool=None, wordnet=None, nlp=None,
                        batch_size: int = 256, progress: bool = False) -> tuple[list[HardNegative], dict[str, dict]]:
    """Try every rule once on every record (term, definition, synset_id, pos; objects or dicts).

    Returns (negatives, stats): one HardNegative per successful application, ordered by record then by
    rule; stats[rule] = {"applied": a, "attempted": n, "rate": a / n}. pool: replacement records for
    the swap rules (default: `records`). Deterministic for a given seed. progress: a bar over the records.
    """
    records = list(records)
    rules = tuple(rules)
    for r in rules:
        _check_rule(r)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    gen = HardNegativeGenerator(records if pool is None else list(pool), wordnet=wordnet, nlp=nlp)
    defs = [_get(r, "definition") for r in records]
    for i, d in enumerate(defs):
        if not isinstance(d, str) or not d.strip():
            raise ValueError(f"records[{i}].definition: expected a non-empty string, got {d!r}")
    docs = None
    if PARSED_RULES.intersection(rules):
        docs = gen.nlp.pipe(defs, batch_size=batch_size)
        if progress:
            from tqdm.auto import tqdm

            docs = tqdm(docs, total=len(defs), desc="parse definitions", unit="def", leave=False)
        docs = list(docs)
    rngs = {r: random.Random(f"{seed}:{r}") for r in rules}
    stats = {r: {"applied": 0, "attempted": 0, "rate": 0.0} for r in rules}
    out = []
    for i, rec in enumerate(records):
        term, pos, sid = _get(rec, "term"), _get(rec, "pos"), _get(rec, "synset_id")
        for r in rules:
            neg = gen.apply(r, defs[i], term=term, pos=pos, synset_id=sid, rng=rngs[r],
                            doc=docs[i] if docs is not None else None)
            stats[r]["attempted"] += 1
            if neg is not None and neg.strip() and definition_key(neg) != definition_key(defs[i]):
                stats[r]["applied"] += 1
                out.append(HardNegative(term, defs[i], neg, r, sid, pos))
    for s in stats.values():
        s["rate"] = s["applied"] / s["attempted"] if s["attempted"] else 0.0
    return out, stats
