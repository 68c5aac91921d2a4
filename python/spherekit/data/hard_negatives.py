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
                  without a finite verb (most WordNet noun glosses are bare noun phrases) are not edited,
                  unless negation="verb or noun phrase": then a bare noun phrase is negated as in the
                  paper's Figure 1 ("a mammal" -> "not a mammal", spherekit.data._edits.negate_noun_phrase).
    pos_swap      d+ is replaced by the definition of a randomly drawn pair with a different term (and a
                  different concept and definition text) of the same coarse POS (n, v, a, r).
    prefix_swap   as pos_swap, but the other term shares the term's morphological prefix (PREFIXES). A
                  term has a prefix when it starts with it and the rest (a hyphen dropped) is itself a
                  WordNet term of at least 3 letters ("unhappy" -> un + happy; "read" has none); the
                  longest such prefix counts. Terms without a prefix are not edited.
    type_swap     d+ is replaced by the definition of a randomly drawn concept of a different coarse
                  ontological type (spherekit.data.ontology: person, organization, location, event,
                  artifact, biological entity, abstract concept). Concepts without a type are not edited.

Swap construction (swap=): "random" draws the replacement uniformly among the rule's candidates (the paper's
words: "a randomly sampled definition"); "nearest" takes the candidate whose definition is most similar to d+
(cosine of TF-IDF vectors over the pool's definitions: English stop words dropped, sublinear term frequency), so
the negative shares d+'s content words where the candidates allow: a random definition of another word is
separated by every encoder, a near one is not. Candidates are the rule's own (same POS; same POS and prefix; a
different ontological type), never the pair's term, concept or definition text, and, with "nearest", never a
term that shares a WordNet synset with the pair's term (a synonym's definition would be a false negative) nor a
definition with fewer than MIN_WORDS scored words (headword masking leaves glosses like "a small"). A
definition that shares no scored word with any candidate falls back to the random draw (counted per rule as
"random_fallback").

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
SWAP_RULES = ("pos_swap", "prefix_swap", "type_swap")
SWAPS = ("random", "nearest")
NEGATIONS = ("finite verb", "verb or noun phrase")
TOP = 32            # nearest: candidates looked at per definition before falling back to the random draw
MIN_WORDS = 2       # nearest: a candidate needs this many scored words (a masked "a small" matches anything small)
CHUNK = 64          # nearest: definitions scored per sparse product
PREFIXES = ("counter", "inter", "super", "under", "trans", "anti", "fore", "over", "semi", "dis", "mis", "non",
            "out", "pre", "sub", "de", "im", "in", "re", "un")
_LONGEST_FIRST = tuple(sorted(PREFIXES, key=len, reverse=True))
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
    for p in _LONGEST_FIRST:
        if t.startswith(p):
            rest = t[len(p):].lstrip("-")
            if len(rest) >= 3 and rest.isalpha() and rest in terms:
                return p
    return None


class _Pool:
    """Candidate replacement definitions indexed by POS, prefix and ontological type (and, for the nearest swaps,
    by TF-IDF vectors of their definitions)."""

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
        self._types: list | None = None
        self._prefixes: list | None = None
        self._terms: set | None = None
        self._vectors = None
        self._transposed: dict = {}

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

    def prefixes(self) -> list:
        """Each item's term prefix (term_prefix), computed once."""
        if self._prefixes is None:
            terms = self.terms()
            self._prefixes = [term_prefix(i[0], terms) for i in self.items]
        return self._prefixes

    def types(self) -> list:
        """Each item's ontological type (or None), computed once."""
        if self._types is None:
            self._types = [self.onto(i[2]) for i in self.items]
        return self._types

    def by_prefix(self, prefix, pos):
        key = (prefix, pos)
        if key not in self._by_prefix:
            self._by_prefix[key] = [i for i, p in zip(self.items, self.prefixes()) if i[3] == pos and p == prefix]
        return self._by_prefix[key]

    def typed(self):
        if self._typed is None:
            self._typed = [(i, t) for i, t in zip(self.items, self.types()) if t is not None]
        return self._typed

    def draw(self, key, rng, term, definition, synset_id):
        """The random swap: a uniform draw from the bucket `key` (see HardNegativeGenerator.bucket)."""
        if key[0] == "type":
            return _draw(self.typed(), rng, term, definition, synset_id, exclude_type=key[1])
        cands = self.by_pos(key[1]) if key[0] == "pos" else self.by_prefix(key[1], key[2])
        return _draw(cands, rng, term, definition, synset_id)

    # ------------------------------------------------------------ nearest swaps

    def related(self, term, pos) -> set:
        """The pair's term and every term sharing a WordNet synset with it (its synonyms): never a nearest swap."""
        found = {term_key(term)}
        if self.wordnet is not None:
            for c in self.wordnet.synsets_of(term, pos):
                found.update(term_key(x) for x in c.lemmas)
        return found

    def vectors(self):
        """(vectorizer, item x vocabulary TF-IDF matrix, scored words per item) of the pool's definitions, built on
        first use."""
        if self._vectors is None:
            import numpy as np
            from sklearn.feature_extraction.text import TfidfVectorizer

            vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True, dtype=np.float32)
            matrix = vectorizer.fit_transform([i[1] for i in self.items]).tocsr()
            self._vectors = vectorizer, matrix, np.diff(matrix.indptr)
        return self._vectors

    def ids(self, key):
        """Item indices of a bucket: ("pos", p), ("prefix", prefix, p), ("type", kind) = typed items of another
        type."""
        import numpy as np

        if key[0] == "type":
            keep = [t is not None and t != key[1] for t in self.types()]
        elif key[0] == "pos":
            keep = [i[3] == key[1] for i in self.items]
        else:
            keep = [i[3] == key[2] and p == key[1] for i, p in zip(self.items, self.prefixes())]
        return np.flatnonzero(np.array(keep, dtype=bool))

    def nearest(self, queries, key) -> list:
        """For each query (term, definition, synset_id, pos): the bucket's definition with the highest TF-IDF
        cosine to the query's definition among the TOP best (ties: pool order) that are allowed (another term,
        not a synonym, another concept and definition text, at least MIN_WORDS scored words), or None."""
        import numpy as np

        if key not in self._transposed:
            ids = self.ids(key)
            ids = ids[self.vectors()[2][ids] >= MIN_WORDS]
            self._transposed[key] = ids, self.vectors()[1][ids].T.tocsr()
        ids, candidates = self._transposed[key]
        if not len(ids):
            return [None] * len(queries)
        q = self.vectors()[0].transform([d for _, d, _, _ in queries]).tocsr()
        out = []
        for lo in range(0, len(queries), CHUNK):
            scores = (q[lo:lo + CHUNK] @ candidates).tocsr()
            for r in range(scores.shape[0]):
                a, b = scores.indptr[r], scores.indptr[r + 1]
                cols, vals = scores.indices[a:b], scores.data[a:b]
                order = np.lexsort((cols, -vals))[:TOP]
                out.append(self._allowed(queries[lo + r], ids[cols[order]]))
        return out

    def _allowed(self, query, ranked):
        term, definition, synset_id, pos = query
        related, dk = self.related(term, pos), definition_key(definition)
        for n in ranked:
            t, d, sid, _ = self.items[n]
            if t in related or (synset_id is not None and sid == synset_id) or definition_key(d) == dk:
                continue
            return d
        return None


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


_UNSET = object()


class HardNegativeGenerator:
    """Applies the rules; holds WordNet, the spaCy pipeline (loaded on first use) and the pool indexes.

    Args:
        pool: records (term, definition, synset_id, pos) the swap rules draw replacements from
            (None: every WordNet term-definition pair).
        wordnet: a loaded spherekit.data.wordnet.WordNet (loaded when needed and None).
        nlp: a spaCy pipeline (spherekit.data._spacy.load_spacy() when None).
        swap: "random" | "nearest" (module docstring).  negation: "finite verb" | "verb or noun phrase".
    """

    def __init__(self, pool=None, *, wordnet=None, nlp=None, swap: str = "random", negation: str = "finite verb"):
        if swap not in SWAPS:
            raise ValueError(f"swap: expected one of {SWAPS}, got {swap!r}")
        if negation not in NEGATIONS:
            raise ValueError(f"negation: expected one of {NEGATIONS}, got {negation!r}")
        self._wordnet = wordnet
        self._nlp = nlp
        self._pool = None if pool is None else _Pool(pool, wordnet)
        self.swap, self.negation = swap, negation

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

    def bucket(self, name: str, term: str, pos: str | None, synset_id: str | None):
        """The candidates of swap rule `name` for a pair: ("pos", pos), ("prefix", prefix, pos) or ("type", the
        pair's type, whose candidates are the other types); None when the rule does not apply."""
        if name == "type_swap":
            self.wordnet  # noqa: B018 - the pool needs WordNet for the types
            kind = self.pool.onto(synset_id)
            return None if kind is None else ("type", kind)
        if pos is None:
            return None
        if name == "pos_swap":
            return ("pos", pos)
        self.wordnet  # noqa: B018 - prefixes are checked against the WordNet terms
        prefix = term_prefix(term, self.pool.terms())
        return None if prefix is None else ("prefix", prefix, pos)

    def nearest_swaps(self, name: str, records) -> list:
        """swap="nearest", rule `name` on every record at once (one sparse product per bucket): per record the
        nearest allowed definition, None when the rule applies but no candidate qualifies (the random draw
        stands in), or False when the rule does not apply."""
        out: list = [False] * len(records)
        groups: dict = {}
        for n, rec in enumerate(records):
            key = self.bucket(name, _get(rec, "term"), _get(rec, "pos"), _get(rec, "synset_id"))
            if key is not None:
                groups.setdefault(key, []).append(n)
        for key, members in groups.items():
            queries = [(_get(records[n], "term"), _get(records[n], "definition"), _get(records[n], "synset_id"),
                        _get(records[n], "pos")) for n in members]
            for n, neg in zip(members, self.pool.nearest(queries, key)):
                out[n] = neg
        return out

    def apply(self, name: str, text: str, *, term: str | None = None, pos: str | None = None,
              synset_id: str | None = None, rng: random.Random | None = None, doc=None, nearest=_UNSET) -> str | None:
        """The negative of definition `text` under rule `name`, or None when the rule does not apply.
        The swap rules need the pair's term (and pos; type_swap its synset_id) and an rng (default
        random.Random(0)); doc: a spaCy parse of `text` to reuse; nearest: this pair's entry of nearest_swaps
        (computed here when not given)."""
        from . import _edits

        _check_rule(name)
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text: expected a non-empty string, got {text!r}")
        if name in PARSED_RULES:
            doc = doc if doc is not None else self.nlp(text)
            if name == "negation":
                verb = _edits.negate(doc)
                if verb is None and self.negation == "verb or noun phrase":
                    return _edits.negate_noun_phrase(doc)
                return verb
            return _edits.antonym_flip(doc, self.wordnet)
        if term is None:
            raise ValueError(f"term: rule {name!r} needs the pair's term, got None")
        rng = rng or random.Random(0)
        if self.swap == "nearest":
            if nearest is _UNSET:
                nearest = self.nearest_swaps(name, [{"term": term, "definition": text, "synset_id": synset_id,
                                                     "pos": pos}])[0]
            if nearest is False:
                return None
            if nearest is not None:
                return nearest
        key = self.bucket(name, term, pos, synset_id)
        return None if key is None else self.pool.draw(key, rng, term, text, synset_id)


_DEFAULT: dict = {}


def apply_rule(name: str, text: str, *, term: str | None = None, pos: str | None = None,
               synset_id: str | None = None, pool=None, rng: random.Random | None = None, wordnet=None,
               nlp=None, swap: str = "random", negation: str = "finite verb") -> str | None:
    """Apply one rule to one definition (see HardNegativeGenerator.apply). `pool`: records for the swap
    rules (default: all WordNet term-definition pairs). Returns None when the rule does not apply."""
    _check_rule(name)
    if pool is None and wordnet is None and nlp is None:
        gen = _DEFAULT.get((swap, negation))
        if gen is None:
            gen = _DEFAULT[(swap, negation)] = HardNegativeGenerator(None, swap=swap, negation=negation)
    else:
        gen = HardNegativeGenerator(pool, wordnet=wordnet, nlp=nlp, swap=swap, negation=negation)
    return gen.apply(name, text, term=term, pos=pos, synset_id=synset_id, rng=rng)


def make_hard_negatives(records, rules=RULES, seed: int = 0, *, pool=None, wordnet=None, nlp=None,
                        batch_size: int = 256, progress: bool = False, swap: str = "random",
                        negation: str = "finite verb") -> tuple[list[HardNegative], dict[str, dict]]:
    """Try every rule once on every record (term, definition, synset_id, pos; objects or dicts).

    Returns (negatives, stats): one HardNegative per successful application, ordered by record then by
    rule; stats[rule] = {"applied": a, "attempted": n, "rate": a / n} (with swap="nearest", the swap rules also
    count "random_fallback": applications where no candidate was near and the random draw stood in). pool:
    replacement records for the swap rules (default: `records`). swap, negation: the rules' construction
    (HardNegativeGenerator). Deterministic for a given seed. progress: a bar over the records.
    """
    records = list(records)
    rules = tuple(rules)
    for r in rules:
        _check_rule(r)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    gen = HardNegativeGenerator(records if pool is None else list(pool), wordnet=wordnet, nlp=nlp, swap=swap,
                                negation=negation)
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
    nearest = {r: gen.nearest_swaps(r, records) for r in rules if r in SWAP_RULES and swap == "nearest"}
    rngs = {r: random.Random(f"{seed}:{r}") for r in rules}
    stats = {r: {"applied": 0, "attempted": 0, "rate": 0.0, **({"random_fallback": 0} if r in nearest else {})}
             for r in rules}
    out = []
    for i, rec in enumerate(records):
        term, pos, sid = _get(rec, "term"), _get(rec, "pos"), _get(rec, "synset_id")
        for r in rules:
            near = nearest[r][i] if r in nearest else _UNSET
            neg = gen.apply(r, defs[i], term=term, pos=pos, synset_id=sid, rng=rngs[r],
                            doc=docs[i] if docs is not None else None, nearest=near)
            stats[r]["attempted"] += 1
            if neg is not None and neg.strip() and definition_key(neg) != definition_key(defs[i]):
                stats[r]["applied"] += 1
                if near is None:  # only with swap="nearest": the random draw stood in
                    stats[r]["random_fallback"] += 1
                out.append(HardNegative(term, defs[i], neg, r, sid, pos))
    for s in stats.values():
        s["rate"] = s["applied"] / s["attempted"] if s["attempted"] else 0.0
    return out, stats
