"""The DBpedia semantic-gap benchmark of "Principles of Concept Representation in Sentence Encoders"
(arXiv:2606.06994) (natural-language queries -> DBpedia property labels, zero lexical overlap; 3,063 train queries,
245 test queries, 2,849 candidate properties).

The paper does not give its file format; spherekit reads (our documented choice):
    pairs JSON lines   {"query": "where someone drew last breath", "property": "deathPlace", "split": "test"}
                       query, property required; split optional (train | test; default test)
    candidates file    optional plain text, one property label per line (the retrieval pool); without it
                       the pool is the distinct properties of the loaded pairs (every split)
A query's relevant item is its property; the same query text with several properties gets them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._io import DatasetFormatError, get_str, read_jsonl, read_lines

SPLITS = ("train", "test")


@dataclass
class DBpediaGap:
    queries: list[str]
    properties: list[list[str]]    # per query, its relevant property labels
    candidates: list[str]

    def retrieval_inputs(self):
        """-> (queries, candidates, relevant: per query a set of candidate indices) for RetrievalEvaluator."""
        index = {c: i for i, c in enumerate(self.candidates)}
        return list(self.queries), list(self.candidates), [{index[p] for p in props} for props in self.properties]


def load_dbpedia_gap(path, split: str = "test", candidates_path=None) -> DBpediaGap:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    by_query: dict[str, list[str]] = {}
    all_props: dict[str, None] = {}
    for line, obj in read_jsonl(path):
        query = get_str(path, line, obj, "query").strip()
        prop = get_str(path, line, obj, "property").strip()
        row_split = obj.get("split", "test")
        if row_split not in SPLITS:
            raise DatasetFormatError(path, line, "split", f"expected one of {SPLITS}, got {row_split!r}")
        all_props.setdefault(prop)
        if row_split == split:
            props = by_query.setdefault(query, [])
            if prop not in props:
                props.append(prop)
    if not by_query:
        raise DatasetFormatError(path, None, "split", f"no pairs with split {split!r}")
    if candidates_path is not None:
        cands = list(dict.fromkeys(t.strip() for _, t in read_lines(candidates_path) if t.strip()))
        if not cands:
            raise DatasetFormatError(candidates_path, None, None, "no candidate labels")
        known = set(cands)
        for q, props in by_query.items():
            missing = [p for p in props if p not in known]
            if missing:
                raise DatasetFormatError(candidates_path, None, "property",
                                         f"{missing[0]!r} (query {q!r}) is not among the candidates")
    else:
        cands = list(all_props)
    return DBpediaGap(list(by_query), list(by_query.values()), cands)
