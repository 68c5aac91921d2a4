"""NP paraphrase retrieval by modifier family ("Principles of Concept Representation in Sentence Encoders"
(arXiv:2606.06994) section 5.5, Table 5): each noun phrase queries the pool of all paraphrases (n = 4,000 in the
paper); R@1 and R@10 of its own paraphrase, overall and per family (intersective, subsective, relational, modal,
privative)."""

from __future__ import annotations

import torch

from ..encode import encode
from ._base import SpherekitEvaluator, field
from .retrieval import retrieval_scores


class NPParaphraseEvaluator(SpherekitEvaluator):
    """Args: items with fields query, paraphrase, family (dicts or objects, e.g. from
    spherekit.data.datasets.np_paraphrase.load_np_paraphrase); ks (1, 10).
    Returns "R@k (NP paraphrase)", "MRR (NP paraphrase)" and "R@k (<family>)" per family."""

    def __init__(self, items, *, ks=(1, 10), name: str = "np_paraphrase", batch_size: int = 64, show_progress: bool = False):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        items = list(items)
        if not items:
            raise ValueError("items is empty")
        self.queries = [field(it, "query") for it in items]
        self.families = [field(it, "family") for it in items]
        pool: dict[str, int] = {}
        self.targets = [pool.setdefault(field(it, "paraphrase"), len(pool)) for it in items]
        self.pool = list(pool)
        self.ks = tuple(ks)
        self.primary_metric = f"R@{self.ks[0]} (NP paraphrase)"

    def get_config_dict(self):
        return {"n_items": len(self.queries), "n_pool": len(self.pool), "ks": list(self.ks)}

    def compute_metrics(self, model) -> dict[str, float]:
        q = encode(model, self.queries, batch_size=self.batch_size, show_progress=self.show_progress)
        d = encode(model, self.pool, batch_size=self.batch_size, show_progress=self.show_progress)
        values = retrieval_scores(q, d, [{t} for t in self.targets], ks=self.ks, ndcg_k=None)
        out = {f"{k} (NP paraphrase)": float(v.mean()) for k, v in values.items()}
        fam = list(self.families)
        for family in sorted(set(fam)):
            sel = torch.tensor([f == family for f in fam])
            for k in self.ks:
                out[f"R@{k} ({family})"] = float(values[f"R@{k}"][sel].mean())
        self.last_details = {"per_query": values}
        return out
