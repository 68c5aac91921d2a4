"""The offline evaluation sets of the DefSent+ reproduction (none is in the paper; its STS and SentEval data are
not available offline), built from WordNet 3.0 and GCIDE and held out of every training dictionary:

    sim        graded similarity (the STS analogue): glosses of WordNet noun / verb synsets around random anchors
               (the anchor, its hypernyms, up to 3 co-hyponyms, up to 2 hyponyms); gold = WordNet's path similarity
               of two synsets; pairs inside each anchor's neighbourhood and across neighbourhoods. Anchors split in
               halves: dev (chooses the best seed and pooling) and test.
    crossdict  cross-dictionary definition retrieval: for held-out terms found in both sources, a WordNet gloss
               retrieves the term's GCIDE definitions among those of every held-out term.
    probes     transfer probes (the SentEval analogue): WordNet example sentences (never in a dictionary)
               labelled with their synset's supersense (lexname, 10 most frequent) or part of speech.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from ...data.records import definition_key, term_key


@dataclass
class HeldOut:
    terms: frozenset                      # term keys removed from every dictionary
    definition_keys: frozenset            # definition keys removed from every dictionary
    sim: dict = field(default_factory=dict)        # pos -> {"texts", "dev": [(i, j, gold)], "test": [...]}
    crossdict: dict = field(default_factory=dict)  # {"queries", "corpus", "relevant": [[corpus ids]]}
    probes: dict = field(default_factory=dict)     # task -> (texts, labels)

    def stats(self) -> dict:
        return {"heldout_terms": len(self.terms), "heldout_glosses": len(self.definition_keys),
                **{f"sim_{pos}_pairs": len(s["dev"]) + len(s["test"]) for pos, s in self.sim.items()},
                "crossdict_queries": len(self.crossdict.get("queries", [])),
                **{f"probe_{t}": len(v[0]) for t, v in self.probes.items()}}


def _neighbourhood(c, by_id, hyponyms, rng) -> list[str]:
    ids = [c.synset_id] + [h for h in c.hypernyms if h in by_id]
    for h in c.hypernyms[:1]:
        sibs = [s for s in hyponyms.get(h, []) if s != c.synset_id]
        ids += rng.sample(sibs, min(3, len(sibs)))
    kids = hyponyms.get(c.synset_id, [])
    ids += rng.sample(kids, min(2, len(kids)))
    return list(dict.fromkeys(ids))


def _sim_pairs(groups, n_pairs, rng, reader):
    """Half the pairs inside a neighbourhood, half across; gold = WordNet path similarity."""
    flat = [s for g in groups for s in g]
    pairs = set()
    tries = 0
    while len(pairs) < n_pairs and tries < 20 * n_pairs:
        tries += 1
        a, b = rng.sample(rng.choice(groups), 2) if len(pairs) % 2 == 0 and groups else rng.sample(flat, 2)
        if a != b:
            pairs.add(tuple(sorted((a, b))))
    out = []
    for a, b in sorted(pairs):
        gold = reader.synset(a).path_similarity(reader.synset(b))
        out.append((a, b, float(gold or 0.0)))
    return out


def build_sim(wn, n_anchors: int, n_pairs: int, rng) -> dict:
    by_id = {c.synset_id: c for c in wn.concepts}
    hyponyms = defaultdict(list)
    for c in wn.concepts:
        for h in c.hypernyms:
            hyponyms[h].append(c.synset_id)
    reader = wn.reader()
    out = {}
    for pos in ("n", "v"):
        candidates = [c for c in wn.concepts if c.pos == pos and c.hypernyms]
        anchors = rng.sample(candidates, min(n_anchors // 2, len(candidates)))
        groups = [[s for s in _neighbourhood(c, by_id, hyponyms, rng) if s in by_id] for c in anchors]
        groups = [g for g in groups if len(g) >= 2]
        split = {"dev": groups[0::2], "test": groups[1::2]}
        pairs = {k: _sim_pairs(g, n_pairs // 2, rng, reader) for k, g in split.items()}
        ids = sorted({s for k in pairs for p in pairs[k] for s in p[:2]})
        index = {s: i for i, s in enumerate(ids)}
        out[pos] = {"texts": [by_id[s].definition for s in ids],
                    **{k: [(index[a], index[b], g) for a, b, g in v] for k, v in pairs.items()}}
    return out


def build_crossdict(wn, gcide, n_terms: int, rng) -> tuple[dict, set]:
    from ...data.gcide import cross_source_definition_pairs

    both = sorted(t for t in wn.terms() & gcide.terms() if t.isalpha())
    terms = rng.sample(both, min(n_terms, len(both)))
    pairs = cross_source_definition_pairs(wn, gcide, max_per_term=1, terms=terms)
    corpus, owner = [], []
    for t in sorted({p.term for p in pairs}):
        for s in gcide.senses_of(t, include_wordnet_derived=False):
            corpus.append(s.definition)
            owner.append(t)
    by_term = defaultdict(list)
    for i, t in enumerate(owner):
        by_term[t].append(i)
    return ({"queries": [p.definition_a for p in pairs], "corpus": corpus,
             "relevant": [by_term[p.term] for p in pairs]}, {term_key(t) for t in terms})


def build_probes(wn, n: int, rng) -> dict:
    examples = [(c, e) for c in wn.concepts for e in c.examples if len(e.split()) >= 4]
    rng.shuffle(examples)
    counts = defaultdict(int)
    for c, _ in examples:
        counts[c.lexname] += 1
    top = set(sorted(counts, key=counts.get, reverse=True)[:10])
    sup = [(e, c.lexname) for c, e in examples if c.lexname in top][:n]
    pos = [(e, c.pos) for c, e in examples][n:2 * n]
    return {"supersense": ([e for e, _ in sup], [y for _, y in sup]), "pos": ([e for e, _ in pos], [y for _, y in pos])}


def build_heldout(n_terms: int, n_anchors: int, n_pairs: int, n_probe: int, seed: int) -> HeldOut:
    from ...data.gcide import load_gcide
    from ...data.wordnet import load_wordnet

    wn, gcide = load_wordnet(), load_gcide()
    rng = random.Random(seed)
    sim = build_sim(wn, n_anchors, n_pairs, rng)
    crossdict, terms = build_crossdict(wn, gcide, n_terms, rng)
    glosses = {definition_key(t) for s in sim.values() for t in s["texts"]}
    glosses |= {definition_key(t) for t in crossdict["queries"] + crossdict["corpus"]}
    return HeldOut(frozenset(terms), frozenset(glosses), sim, crossdict, build_probes(wn, n_probe, rng))
