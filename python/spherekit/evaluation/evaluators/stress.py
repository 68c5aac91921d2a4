"""Hard-negative stress tests ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994),
appendix G, "Evaluation procedure"): for each test pair (query q = term, positive definition d+) every rule of
spherekit.data.hard_negatives that applies gives a negative d-; the model scores cos(f(q), f(d+)) and cos(f(q),
f(d-)).

    "ROC-AUC (<rule title>)"          positives: cos(q, d+) of the pairs the rule applied to; negatives:
                                      cos(q, d-) of that rule's negatives (one per such pair)
    "pair ROC-AUC (hard negatives)"   positives: cos(q, d+) of every pair; negatives: every generated d-
    "Acc (<rule title>)"              fraction of those pairs with cos(q, d+) > cos(q, d-)
A rule that applied to no pair gets no metrics. Rule titles: "antonym flip", "lexical negation",
"same-POS random swap", "same-POS prefix swap", "ontological type swap".
"""

from __future__ import annotations

import torch

from ...data.hard_negatives import RULE_TITLES, RULES, make_hard_negatives
from ._base import SpherekitEvaluator, apply_limit, field, separation_auc, split_test


class StressTestEvaluator(SpherekitEvaluator):
    """Args:
        records: term-definition pair records (term, definition, synset_id, pos; objects or dicts).
        rules: which hard-negative rules to run (default all five).
        seed: seeds the swap rules.  pool: replacement records for the swap rules (default: records).
        negatives: precomputed (HardNegative list, stats) from make_hard_negatives (skips generation).
    """

    def __init__(self, records, *, rules=RULES, seed: int = 0, pool=None, negatives=None, wordnet=None, nlp=None,
                 name: str = "stress", batch_size: int = 64, show_progress: bool = False):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.records = list(records)
        if not self.records:
            raise ValueError("records is empty")
        self.rules, self.seed = tuple(rules), seed
        if negatives is None:
            negatives = make_hard_negatives(self.records, self.rules, seed, pool=pool, wordnet=wordnet, nlp=nlp)
        self.negatives, self.stats = negatives
        self.primary_metric = "pair ROC-AUC (hard negatives)"

    def get_config_dict(self):
        return {"seed": self.seed, "rules": list(self.rules), "n_pairs": len(self.records),
                "applied": {r: s["applied"] for r, s in self.stats.items()}}

    def compute_metrics(self, model) -> dict[str, float]:
        terms = [field(r, "term") for r in self.records] + [n.term for n in self.negatives]
        defs = [field(r, "definition") for r in self.records] + [n.definition for n in self.negatives]
        rows = self.encode_distinct(model, terms + defs + [n.negative for n in self.negatives])

        def cos(a, b):
            return (rows(a) * rows(b)).sum(1)

        n = len(self.records)
        pos_all = cos(terms[:n], defs[:n])
        out: dict[str, float] = {}
        details = {"positive_cosines": pos_all}
        if self.negatives:
            neg_all = cos([x.term for x in self.negatives], [x.negative for x in self.negatives])
            out["pair ROC-AUC (hard negatives)"] = separation_auc(pos_all, neg_all)
            pos_pair = cos([x.term for x in self.negatives], [x.definition for x in self.negatives])
            for rule in self.rules:
                keep = torch.tensor([x.rule == rule for x in self.negatives])
                if not bool(keep.any()):
                    continue
                p, q = pos_pair[keep], neg_all[keep]
                title = RULE_TITLES[rule]
                out[f"ROC-AUC ({title})"] = separation_auc(p, q)
                out[f"Acc ({title})"] = float((p > q).double().mean())
                details[title] = q
        self.last_details = details
        return out

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_cosine_distributions

        groups = {"true pairs": self.last_details["positive_cosines"]}
        groups.update({k: v for k, v in self.last_details.items() if k != "positive_cosines"})
        return [str(plot_cosine_distributions(groups, f"{out_dir}/{self.name}_cosines.png",
                                              title="term-definition cosine: true pairs vs hard negatives"))]


def make_evaluator(split, *, limit: int | None = None, seed: int = 0, batch_size: int = 64, **options):
    """The stress suite on split.test (spherekit.evaluation.suites): the swap rules draw replacements from
    the whole test part (so a limit does not starve them), the rules run on the first `limit` pairs."""
    test = split_test(split, "stress")
    options.setdefault("pool", test)
    return StressTestEvaluator(apply_limit(test, limit), seed=seed, batch_size=batch_size, **options)
