"""Semantic textual similarity (DefSent+ (arXiv:2405.16153)): Spearman's rho x 100 between cos(u, v) of the two
sentences' embeddings and the human scores. For a benchmark with several subsets (STS12-16) it reports each subset,
"all" (rho over the concatenation of the subsets, as SentEval's and SimCSE's "all") and "mean" (the plain mean of
the subset values)."""

from __future__ import annotations

import torch

from ..encode import encode
from ..metrics import spearman
from ._base import SpherekitEvaluator


class STSEvaluator(SpherekitEvaluator):
    """Args: subsets: {subset name: (sentences1, sentences2, gold scores)}; name (the benchmark, e.g. "STS12").
    Returns "Spearman x100 (<name> <subset>)", "Spearman x100 (<name> all)", "Spearman x100 (<name> mean)";
    a single subset gives only "Spearman x100 (<name>)"."""

    def __init__(self, subsets, *, name: str = "sts", batch_size: int = 64, show_progress: bool = False):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        if not subsets:
            raise ValueError("subsets is empty")
        self.subsets = {}
        for key, (s1, s2, gold) in subsets.items():
            if not (len(s1) == len(s2) == len(gold)) or len(s1) < 2:
                raise ValueError(f"subset {key!r}: sentences1, sentences2 and scores need equal length >= 2, "
                                 f"got {len(s1)}, {len(s2)}, {len(gold)}")
            self.subsets[key] = (list(s1), list(s2), [float(g) for g in gold])
        self.primary_metric = self._key("all" if len(self.subsets) > 1 else None)

    def _key(self, subset):
        return f"Spearman x100 ({self.name}{'' if subset is None else ' ' + subset})"

    def get_config_dict(self):
        return {"subsets": {k: len(v[0]) for k, v in self.subsets.items()}}

    def compute_metrics(self, model) -> dict[str, float]:
        out, cos_all, gold_all = {}, [], []
        for key, (s1, s2, gold) in self.subsets.items():
            u = encode(model, s1, batch_size=self.batch_size, show_progress=self.show_progress)
            v = encode(model, s2, batch_size=self.batch_size, show_progress=self.show_progress)
            cos = (u * v).sum(1)
            cos_all.append(cos)
            gold_all += gold
            out[key] = 100.0 * spearman(cos, gold)
        if len(self.subsets) == 1:
            return {self._key(None): next(iter(out.values()))}
        metrics = {self._key(k): v for k, v in out.items()}
        metrics[self._key("all")] = 100.0 * spearman(torch.cat(cos_all), gold_all)
        metrics[self._key("mean")] = sum(out.values()) / len(out)
        return metrics
