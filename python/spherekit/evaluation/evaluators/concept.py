"""Concept retrieval ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994)):
term-to-definition (t2d) and definition-to-term (d2t) R@k and MRR, and pair ROC-AUC, on the test part of a WordNet
split.

Pools: the distinct definitions (t2d) and the distinct terms (d2t) of the evaluated pairs. A term
query's relevant items are every definition it is paired with (a polysemous term has several), and a
definition query's relevant items are every term paired with it (the synonyms of its concept).
Pair ROC-AUC: positives are cos(term, its definition) of every pair; each pair also gets one negative
cos(term, definition of a different concept) drawn with the seed; ROC-AUC separates the two.
"""

from __future__ import annotations

import torch

from ..encode import encode
from ._base import SpherekitEvaluator, apply_limit, field, separation_auc, split_test
from .retrieval import _named, retrieval_scores


def _concept_of(record):
    for name in ("concept_id", "synset_id"):
        try:
            value = field(record, name)
        except KeyError:
            continue
        if value is not None:
            return value
    return f"term:{field(record, 'term')}"


def build_pools(records):
    """-> (terms, definitions, t2d relevant, d2t relevant, pairs as (term index, definition index), concepts)."""
    terms: dict[str, int] = {}
    defs: dict[str, int] = {}
    pairs, concepts = [], []
    for rec in records:
        t, d = field(rec, "term"), field(rec, "definition")
        if not isinstance(t, str) or not isinstance(d, str) or not t.strip() or not d.strip():
            raise ValueError(f"records need non-empty string term and definition, got {rec!r:.200}")
        ti = terms.setdefault(t, len(terms))
        di = defs.setdefault(d, len(defs))
        pairs.append((ti, di))
        concepts.append(_concept_of(rec))
    t2d = [set() for _ in terms]
    d2t = [set() for _ in defs]
    for ti, di in pairs:
        t2d[ti].add(di)
        d2t[di].add(ti)
    return list(terms), list(defs), t2d, d2t, pairs, concepts


def random_negative_definitions(pairs, concepts, n_defs: int, seed: int = 0) -> list[int]:
    """For each pair, a definition index of a different concept (seeded); -1 when none exists."""
    def_concepts: dict[int, set] = {}
    for (_, di), c in zip(pairs, concepts):
        def_concepts.setdefault(di, set()).add(c)
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for (_, di), c in zip(pairs, concepts):
        choice = -1
        for _ in range(32):  # rejection sampling; pools are large, collisions rare
            cand = int(torch.randint(0, n_defs, (1,), generator=gen))
            if c not in def_concepts[cand]:
                choice = cand
                break
        out.append(choice)
    return out


class ConceptRetrievalEvaluator(SpherekitEvaluator):
    """t2d / d2t retrieval and pair ROC-AUC over term-definition pair records.

    Args:
        records: pair records with fields term, definition and synset_id (or concept_id); dicts or objects.
        ks: R@k cut-offs.  seed: seeds the random negative definitions of pair ROC-AUC.
    Returns (plain words): "R@k (term to definition)", "MRR (term to definition)", the same for
        "definition to term", and "pair ROC-AUC (random negative)".
    """

    def __init__(self, records, *, ks=(1, 10), seed: int = 0, name: str = "concept", batch_size: int = 64,
                 show_progress: bool = False, search_backend: str = "auto"):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        records = list(records)
        if not records:
            raise ValueError("records is empty")
        self.terms, self.definitions, self.t2d, self.d2t, self.pairs, self.concepts = build_pools(records)
        self.ks, self.seed, self.search_backend = tuple(ks), seed, search_backend
        self.negatives = random_negative_definitions(self.pairs, self.concepts, len(self.definitions), seed)
        self.primary_metric = "MRR (term to definition)"

    def get_config_dict(self):
        return {"ks": list(self.ks), "seed": self.seed, "n_pairs": len(self.pairs), "n_terms": len(self.terms),
                "n_definitions": len(self.definitions)}

    def compute_metrics(self, model) -> dict[str, float]:
        t = encode(model, self.terms, batch_size=self.batch_size, show_progress=self.show_progress)
        d = encode(model, self.definitions, batch_size=self.batch_size, show_progress=self.show_progress)
        t2d = retrieval_scores(t, d, self.t2d, ks=self.ks, ndcg_k=None, search_backend=self.search_backend)
        d2t = retrieval_scores(d, t, self.d2t, ks=self.ks, ndcg_k=None, search_backend=self.search_backend)
        out = {**_named(t2d, "term to definition"), **_named(d2t, "definition to term")}
        ti = torch.tensor([p[0] for p in self.pairs])
        di = torch.tensor([p[1] for p in self.pairs])
        neg = torch.tensor(self.negatives)
        keep = neg >= 0
        pos_cos = (t[ti] * d[di]).sum(1)
        neg_cos = (t[ti[keep]] * d[neg[keep]]).sum(1)
        self.last_details = {"positive_cosines": pos_cos, "negative_cosines": neg_cos, "t2d": t2d, "d2t": d2t}
        if neg_cos.numel():
            out["pair ROC-AUC (random negative)"] = separation_auc(pos_cos, neg_cos)
        return out

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_cosine_distributions

        path = plot_cosine_distributions(
            {"true pairs": self.last_details["positive_cosines"], "random negatives": self.last_details["negative_cosines"]},
            f"{out_dir}/{self.name}_pair_cosines.png", title="term-definition cosine similarity")
        return [str(path)]


def make_evaluator(split, *, limit: int | None = None, seed: int = 0, batch_size: int = 64, **options):
    """The concept suite on split.test (see spherekit.evaluation.suites)."""
    records = apply_limit(split_test(split, "concept"), limit)
    return ConceptRetrievalEvaluator(records, seed=seed, batch_size=batch_size, **options)
