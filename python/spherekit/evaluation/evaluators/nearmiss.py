"""Structural near-miss test ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), sec. 3.1-3.2, eq. 3): items (anchor, positive, near_miss, family) from spherekit.data.nearmiss.
With a = f(anchor), p = f(positive), n = f(near_miss) (unit vectors):

    "Acc (<family>)"                    fraction of items with cos(a, p) > cos(a, n)   (eq. 3 with margin 0)
    "ROC-AUC (<family>)"                positives cos(a, p), negatives cos(a, n) over the family's items
    "mean near-miss cosine (<family>)"  mean cos(a, n), Fig. 3's statistic (lower is better)
and the same without a family suffix over all items. Families: negation, binding, spatial. A ROC-AUC
needs both classes with distinct items: it is left out when every positive is the anchor itself
(cos = 1 for all positives), as with positive="anchor".
"""

from __future__ import annotations

import torch

from ...data.nearmiss import FAMILIES
from ._base import SpherekitEvaluator, check_limit, field, separation_auc


def balanced_limit(items, limit: int | None) -> list:
    """The first `limit` items taken round-robin over families (so a small limit keeps every family)."""
    items = list(items)
    if check_limit(limit) is None:
        return items
    by_family: dict[str, list] = {}
    for it in items:
        by_family.setdefault(field(it, "family"), []).append(it)
    out, i = [], 0
    while len(out) < limit and any(i < len(v) for v in by_family.values()):
        out += [v[i] for v in by_family.values() if i < len(v)][: limit - len(out)]
        i += 1
    return out


class NearMissEvaluator(SpherekitEvaluator):
    """Args: items with fields anchor, positive, near_miss, family (NearMiss records or dicts)."""

    def __init__(self, items, *, name: str = "nearmiss", batch_size: int = 64, show_progress: bool = False,
                 config: dict | None = None):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.items = list(items)
        if not self.items:
            raise ValueError("items is empty")
        self.anchors = [field(i, "anchor") for i in self.items]
        self.positives = [field(i, "positive") for i in self.items]
        self.near = [field(i, "near_miss") for i in self.items]
        self.families = [field(i, "family") for i in self.items]
        self.extra_config = dict(config or {})
        self.primary_metric = "Acc"

    def get_config_dict(self):
        return {**self.extra_config, "n_items": len(self.items),
                "per_family": {f: self.families.count(f) for f in dict.fromkeys(self.families)}}

    def compute_metrics(self, model) -> dict[str, float]:
        rows = self.encode_distinct(model, self.anchors + self.positives + self.near)
        a = rows(self.anchors)
        cp = (a * rows(self.positives)).sum(1)
        cn = (a * rows(self.near)).sum(1)
        distinct = torch.tensor([p != x for p, x in zip(self.positives, self.anchors)])
        fam = list(dict.fromkeys([f for f in FAMILIES if f in self.families] + self.families))
        out: dict[str, float] = {}
        for f in [None] + fam:
            keep = torch.ones(len(self.items), dtype=torch.bool) if f is None else \
                torch.tensor([x == f for x in self.families])
            suffix = "" if f is None else f" ({f})"
            p, n = cp[keep], cn[keep]
            out[f"Acc{suffix}"] = float((p > n).double().mean())
            if bool(distinct[keep].any()):
                out[f"ROC-AUC{suffix}"] = separation_auc(p, n)
            out[f"mean near-miss cosine{suffix}"] = float(n.double().mean())
        self.last_details = {"positive": cp, "near_miss": cn, "families": self.families}
        return out

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_cosine_distributions

        d = self.last_details
        groups = {"anchor vs positive": d["positive"]}
        for f in dict.fromkeys(d["families"]):
            keep = torch.tensor([x == f for x in d["families"]])
            groups[f"near-miss: {f}"] = d["near_miss"][keep]
        return [str(plot_cosine_distributions(groups, f"{out_dir}/{self.name}_cosines.png",
                                              title="anchor cosine: positives vs structural near-misses"))]


def make_evaluator(split=None, *, limit: int | None = None, seed: int = 0, batch_size: int = 64, **options):
    """The nearmiss suite (brings its own data: the held-out part of spherekit.data.nearmiss for `seed`;
    options go to build_nearmiss, e.g. n_per_family, positive)."""
    from ...data.nearmiss import load_nearmiss

    items = load_nearmiss("test", seed=seed, **options)
    return NearMissEvaluator(balanced_limit(items, limit), batch_size=batch_size,
                             config={"seed": seed, **{k: v for k, v in options.items() if k in
                                                      ("n_per_family", "positive", "test_fraction", "max_texts")}})
