"""Decontaminated train / dev / test splits of term-definition pairs ("Principles of Concept Representation in
Sentence Encoders" (arXiv:2606.06994), sec. 4.5, "Evaluation splits": "three decontaminated splits, each with test
concepts strictly absent from training").

    split = make_split("in-domain", seed=0)      # Split(train, dev, test, train_synonyms, ...)

kinds
  in-domain       WordNet synsets are shuffled (seeded) and partitioned: n_test synsets give the test
                  pairs, the next n_dev the dev pairs, the rest the training pairs.
  head-holdout    the n_test synsets with the largest sense_count (SemCor frequency; ties by synset id)
                  are the test set ("the most frequent synsets withheld entirely from training");
                  n_dev random other synsets the dev set.
  source-holdout  train on another source, test on WordNet: test = the pairs of n_test random WordNet
                  synsets; train = the pairs of train_source ("gcide", or "wiktionary" with a dump); dev =
                  the pairs of n_dev random train-source terms. The paper trains on Wiktionary; GCIDE is
                  the offline default here. GCIDE's WordNet-derived senses are never used.

Decontamination (checked by check_decontaminated, which raises ContaminationError): no dev or test
concept (synset, or "<source>:<term>" for other sources) and no dev or test term (term_key: case and
"_" folded) occurs in training, in training synonym pairs (either side) or, for test, in dev; no training
definition has the normalised text of a test definition. Pairs of training synsets whose term is a test or
dev term are dropped (counted in Split.info["dropped"]), so a polysemous word held out in one sense
leaves training entirely. sources adds extra training sources for in-domain / head-holdout (e.g.
("wordnet", "gcide")), filtered the same way. An empty train, dev or test set is an error.

Sizes are counts of synsets (or, for a float in (0, 1), a fraction of them). The paper gives none; the
defaults (DEFAULT_SIZES) are ours: 2,000 test and 1,000 dev synsets (head-holdout: the 1,000 most
frequent synsets), i.e. ~4-5k test pairs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .records import SynonymPair, TermDefinition, definition_key, term_key

SPLIT_KINDS = ("in-domain", "head-holdout", "source-holdout")
DEFAULT_SIZES = {
    "in-domain": {"n_test": 2000, "n_dev": 1000},
    "head-holdout": {"n_test": 1000, "n_dev": 1000},
    "source-holdout": {"n_test": 2000, "n_dev": 1000},
}


class ContaminationError(ValueError):
    """A test (or dev) concept, term or definition occurs where it must not."""


@dataclass
class Split:
    kind: str
    seed: int
    train: list[TermDefinition]
    dev: list[TermDefinition]
    test: list[TermDefinition]
    train_synonyms: list[SynonymPair] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def summary(self) -> str:
        return (f"{self.kind} (seed {self.seed}): train {len(self.train)} pairs + {len(self.train_synonyms)} "
                f"synonym pairs, dev {len(self.dev)}, test {len(self.test)} "
                f"({self.info.get('test_concepts', '?')} concepts); dropped {self.info.get('dropped', 0)}")


def _size(value, total: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected an int count or a float fraction, got {type(value).__name__}")
    n = int(round(value * total)) if isinstance(value, float) and 0 < value < 1 else int(value)
    if n < 1 or n >= total:
        raise ValueError(f"{name}: expected between 1 and {total - 1} synsets (of {total}), got {value!r}")
    return n


def _group(pairs) -> dict[str, list]:
    out: dict[str, list] = {}
    for p in pairs:
        out.setdefault(p.concept_id, []).append(p)
    return out


def _terms(pairs) -> set[str]:
    return {term_key(p.term) for p in pairs}


def _defs(pairs) -> set[str]:
    return {definition_key(p.definition) for p in pairs}


def _keep(pairs, concepts, terms, defs):
    kept, dropped = [], 0
    for p in pairs:
        if p.concept_id in concepts or term_key(p.term) in terms or definition_key(p.definition) in defs:
            dropped += 1
        else:
            kept.append(p)
    return kept, dropped


def check_decontaminated(split: Split) -> None:
    """Raise ContaminationError if a test/dev concept, term or test definition leaks (module docstring),
    ValueError if a part is empty."""
    for name in ("train", "dev", "test"):
        if not getattr(split, name):
            raise ValueError(f"split.{name}: empty ({split.kind}, seed {split.seed}); use more data or other sizes")
    held = {"test": split.test, "dev": split.dev}
    for hname, held_pairs in held.items():
        concepts = {p.concept_id for p in held_pairs}
        terms = _terms(held_pairs)
        others = [("train", split.train)] + ([("dev", split.dev)] if hname == "test" else [])
        for oname, pairs in others:
            bad = [p for p in pairs if p.concept_id in concepts or term_key(p.term) in terms]
            if bad:
                raise ContaminationError(f"{len(bad)} {oname} pairs share a concept or term with {hname}, "
                                         f"e.g. {bad[0]}")
        bad_syn = [s for s in split.train_synonyms if s.concept_id in concepts
                   or term_key(s.term_a) in terms or term_key(s.term_b) in terms]
        if bad_syn:
            raise ContaminationError(f"{len(bad_syn)} training synonym pairs share a concept or term with "
                                     f"{hname}, e.g. {bad_syn[0]}")
    test_defs = _defs(split.test)
    bad = [p for p in split.train if definition_key(p.definition) in test_defs]
    if bad:
        raise ContaminationError(f"{len(bad)} train pairs have a test definition, e.g. {bad[0]}")


def _extra_train(sources, wordnet, gcide, wiktionary, mask_headword, mask_token):
    out = []
    for src in sources:
        if src == "wordnet":
            continue
        if src == "gcide":
            from .gcide import load_gcide

            g = gcide or load_gcide()
            out += g.term_definition_pairs(mask_headword=mask_headword, mask_token=mask_token,
                                           exceptions=wordnet.exceptions)
        elif src == "wiktionary":
            out += _wiktionary_pairs(wiktionary, wordnet, mask_headword, mask_token)
        else:
            raise ValueError(f"sources: expected some of ('wordnet', 'gcide', 'wiktionary'), got {src!r}")
    return out


def _wiktionary_pairs(wiktionary, wordnet, mask_headword, mask_token):
    from . import wiktionary as wk

    if wiktionary is None:
        raise ValueError("wiktionary: a Wiktextract dump path (or loaded senses) is needed for the wiktionary source")
    is_path = isinstance(wiktionary, (str, bytes)) or hasattr(wiktionary, "__fspath__")
    senses = wk.load_wiktionary(wiktionary) if is_path else list(wiktionary)
    return wk.term_definition_pairs(senses, mask_headword=mask_headword, mask_token=mask_token,
                                    exceptions=wordnet.exceptions)


def make_split(kind: str = "in-domain", seed: int = 0, *, n_test=None, n_dev=None, wordnet=None, gcide=None,
               sources=("wordnet",), train_source: str = "gcide", wiktionary=None, mask_headword: bool = True,
               mask_token: str | None = None, synonyms: bool = True) -> Split:
    """A decontaminated Split of term-definition pairs (see the module docstring). wordnet / gcide: loaded
    objects to reuse (loaded when None); wiktionary: a dump path or WiktionarySense list."""
    if kind not in SPLIT_KINDS:
        raise ValueError(f"kind: expected one of {SPLIT_KINDS}, got {kind!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    if kind == "source-holdout" and train_source not in ("gcide", "wiktionary"):
        raise ValueError(f"train_source: expected 'gcide' or 'wiktionary', got {train_source!r}")
    from .wordnet import load_wordnet

    wn = wordnet or load_wordnet()
    sizes = DEFAULT_SIZES[kind]
    n_test = sizes["n_test"] if n_test is None else n_test
    n_dev = sizes["n_dev"] if n_dev is None else n_dev
    rng = random.Random(seed)
    wn_pairs = wn.term_definition_pairs(mask_headword=mask_headword, mask_token=mask_token)
    by_synset = _group(wn_pairs)
    synsets = sorted(by_synset)
    info: dict = {"n_test": n_test, "n_dev": n_dev}

    if kind == "source-holdout":
        nt = _size(n_test, len(synsets), "n_test")
        test_ids = rng.sample(synsets, nt)
        test = [p for sid in test_ids for p in by_synset[sid]]
        if train_source == "gcide":
            from .gcide import load_gcide

            src_pairs = (gcide or load_gcide()).term_definition_pairs(
                mask_headword=mask_headword, mask_token=mask_token, exceptions=wn.exceptions)
        else:
            src_pairs = _wiktionary_pairs(wiktionary, wn, mask_headword, mask_token)
        test_terms, test_defs = _terms(test), _defs(test)
        src_pairs, dropped = _keep(src_pairs, set(), test_terms, test_defs)
        by_term = _group(src_pairs)
        terms = sorted(by_term)
        nd = _size(n_dev, len(terms), "n_dev")
        dev_ids = set(rng.sample(terms, nd))
        dev = [p for t in sorted(dev_ids) for p in by_term[t]]
        train, d2 = _keep(src_pairs, dev_ids, _terms(dev), set())
        train_syn = []
        info.update(train_source=train_source, dropped=dropped + d2 - len(dev))
    else:
        if kind == "in-domain":
            order = synsets[:]
            rng.shuffle(order)
            nt = _size(n_test, len(order), "n_test")
            test_ids, rest = order[:nt], order[nt:]
            nd = _size(n_dev, len(rest), "n_dev")
            dev_ids = rest[:nd]
        else:  # head-holdout
            ranked = sorted(synsets, key=lambda s: (-wn.concept(s).sense_count, s))
            nt = _size(n_test, len(ranked), "n_test")
            test_ids, rest = ranked[:nt], sorted(ranked[nt:])
            nd = _size(n_dev, len(rest), "n_dev")
            dev_ids = rng.sample(rest, nd)
            info["min_test_sense_count"] = wn.concept(test_ids[-1]).sense_count
        test = [p for sid in test_ids for p in by_synset[sid]]
        test_terms = _terms(test)
        dev, d_dropped = _keep([p for sid in dev_ids for p in by_synset[sid]], set(), test_terms, _defs(test))
        held = set(test_ids) | set(dev_ids)
        held_terms = test_terms | _terms(dev)
        candidates = [p for p in wn_pairs if p.concept_id not in held]
        candidates += _extra_train(sources, wn, gcide, wiktionary, mask_headword, mask_token)
        train, dropped = _keep(candidates, held, held_terms, _defs(test))
        train_syn = []
        if synonyms:
            train_syn = [s for s in wn.synonym_pairs() if s.synset_id not in held
                         and term_key(s.term_a) not in held_terms and term_key(s.term_b) not in held_terms]
        info.update(dropped=dropped + d_dropped, sources=tuple(sources))
    info.update(test_concepts=len({p.concept_id for p in test}), test_terms=len(_terms(test)))
    split = Split(kind, seed, train, dev, test, train_syn, info)
    check_decontaminated(split)
    return split
