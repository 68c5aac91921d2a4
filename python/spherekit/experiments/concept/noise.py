"""The uncertainty of the concept claims where claims.difference (a paired bootstrap of a mean over items) does
not apply, and the rule that decides whether a trained condition learned.

ROC-AUC (stress rules, pair ROC-AUC against the hard negatives) is not a mean over items. Each run keeps, per test
pair i, cos(term, definition) p_i and cos(term, rule r's negative) n_ri (absent where r did not apply; evaluate.py
packs them into strings).
With c_i the number of times pair i is drawn in a resample of the test pairs (uncertainty.bootstrap),

    AUC = sum_i sum_j c_i c_o(j) ([n_j < p_i] + [n_j = p_i] / 2) / (sum_i c_i * sum_j c_o(j))

over the positives i and negatives j (o(j): the pair negative j belongs to) of the rule (its pairs only) or of all
rules (pair ROC-AUC). The negatives are sorted once, so a resample costs O(pairs + negatives). A condition's
statistic is the mean over its runs (seeds) on the same resample; a claim's is a linear combination of those (a
difference of two conditions, or one condition against a constant), so both sides see the same pairs (paired).

Geometry (anisotropy over 10,000 random pairs, effective rank of the test texts) is compared through the spread
over seeds: for value = sum_c a_c mean_c, the interval is value +- t(0.975, m - 1) sqrt(sum_c a_c^2 s_c^2 / n_c),
s_c the sample std over condition c's n_c seeds and m the smallest n_c of the conditions with several seeds; a
frozen condition (one run) adds no spread. The 10,000 pairs' own sampling error is left out there (the pairs are
the same for every seed and condition, and their cosines are not kept); where two frozen conditions are compared
(paper._layer_mean), and where one model's layers are compared on the same pairs (paper._final_layer), it is
bounded by Hoeffding's inequality instead.

Learned: a trained condition learned when, in every seed, its training loss fell by the experiment core's rule
(spherekit.experiments.learning.judge_training: its probe by 5%, or where a run kept no probe, its logged losses'
last quarter against the first, at least 5% and beyond the noise); a claim
that reads a condition that did not learn is inconclusive.
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import NO_ITEMS, Measured, NotRun
from ..learning import judge_training
from ..uncertainty import CONFIDENCE, bootstrap
from .spec import SETUPS

AUC_RESAMPLES = 1000
TRUE_PAIR = "cosine (true pair)"


class _AUCItems:
    """One run's per-pair cosines for one ROC-AUC (one rule's, or the pair ROC-AUC over all rules)."""

    def __init__(self, positive: list, negatives: list[list]):
        self.n = len(positive)
        self.p = np.asarray(positive, dtype=np.float64)
        owner, values = [], []
        for column in negatives:
            for i, x in enumerate(column):
                if x is not None:
                    owner.append(i)
                    values.append(x)
        order = np.argsort(values, kind="stable")
        self.neg = np.asarray(values, dtype=np.float64)[order]
        self.owner = np.asarray(owner, dtype=np.int64)[order]
        self.has_negative = np.bincount(self.owner, minlength=self.n) > 0
        self.left = np.searchsorted(self.neg, self.p, "left")
        self.right = np.searchsorted(self.neg, self.p, "right")

    def auc(self, counts: np.ndarray, rule_only: bool) -> float:
        """ROC-AUC with pair i drawn counts[i] times (rule_only: positives are the pairs that have a negative)."""
        w_pos = counts * self.has_negative if rule_only else counts
        w_neg = counts[self.owner]
        cum = np.concatenate(([0.0], np.cumsum(w_neg)))
        below, ties = cum[self.left], cum[self.right] - cum[self.left]
        total = w_pos.sum() * cum[-1]
        return float((w_pos * (below + 0.5 * ties)).sum() / total) if total else math.nan


def unpacked(values) -> list:
    """Per-pair cosines as evaluate.packed wrote them (a string), or a list (None where a rule did not apply)."""
    if isinstance(values, str):
        return [None if t == "-" else float(t) for t in values.split()]
    return list(values)


def _auc_runs(scope, condition: str, metric: str) -> tuple[list[_AUCItems], bool]:
    """Each run's items of the ROC-AUC `metric` ("in-domain/ROC-AUC (lexical negation)" or "in-domain/pair ROC-AUC
    (hard negatives)"), and whether it is one rule's."""
    split, name = metric.split("/", 1)
    rule_only = not name.startswith("pair ")
    out = []
    for run in scope.runs(condition):
        items = run.get("per_item", {})
        positive = items.get(f"{split}/{TRUE_PAIR}")
        if positive is None:
            raise NotRun(f"{condition} ({metric}, per item)")
        if rule_only:
            title = name[name.index("(") + 1:-1]
            columns = [items.get(f"{split}/cosine ({title})") or []]
        else:
            columns = [v for k, v in items.items() if k.startswith(f"{split}/cosine (") and k != f"{split}/{TRUE_PAIR}"]
        out.append(_AUCItems(unpacked(positive), [unpacked(c) for c in columns]))
    return out, rule_only


def auc_compare(scope, terms: list[tuple[float, str]], metric: str, op: str, margin: float, text: str, *,
                constant: float = 0.0, label: str | None = None) -> Measured:
    """The rule `sum_c a_c AUC_c + constant op margin` for terms [(a_c, condition)], with a bootstrap over the test
    pairs (module docstring). Runs without per-item values give the point estimate alone."""
    value = sum(a * scope.metric(c, metric) for a, c in terms) + constant
    try:
        runs = {c: _auc_runs(scope, c, metric) for _, c in terms}
    except NotRun:
        return Measured.compare(value, op, margin, text, uncertainty=NO_ITEMS, label=label)
    n = {items.n for rs, _ in runs.values() for items in rs}
    if len(n) != 1:
        raise ValueError(f"{metric}: the runs hold different numbers of test pairs {sorted(n)}")
    n_items = n.pop()

    def statistic(idx):
        counts = np.bincount(idx, minlength=n_items).astype(np.float64)
        return sum(a * np.mean([r.auc(counts, runs[c][1]) for r in runs[c][0]]) for a, c in terms) + constant

    lo, hi, how = bootstrap(statistic, n_items, n_resamples=AUC_RESAMPLES)
    return Measured.compare(value, op, margin, text, interval=(lo, hi), uncertainty=how.replace("items", "test pairs"),
                            label=label)


def seed_compare(scope, terms: list[tuple[float, str]], metric: str, op: str, margin: float, text: str, *,
                 constant: float = 0.0, label: str | None = None) -> Measured:
    """The rule `sum_c a_c metric_c + constant op margin` with the t-interval over seeds (module docstring)."""
    from scipy.stats import t as student

    value = sum(a * scope.metric(c, metric) for a, c in terms) + constant
    var, dof = 0.0, []
    for a, c in terms:
        values = [r["metrics"][metric] for r in scope.runs(c) if r.get("metrics", {}).get(metric) is not None]
        if len(values) > 1:
            var += a * a * float(np.var(values, ddof=1)) / len(values)
            dof.append(len(values) - 1)
    if not dof:
        return Measured.compare(value, op, margin, text, uncertainty="one run per condition: no spread over seeds",
                                label=label)
    half = float(student.ppf(0.5 + CONFIDENCE / 2, min(dof))) * math.sqrt(var)
    return Measured.compare(value, op, margin, text, interval=(value - half, value + half), label=label,
                            uncertainty=f"t-interval over seeds (n = {min(dof) + 1}), {CONFIDENCE:.0%}")


def not_learned(scope, conditions) -> list[str]:
    """The trained conditions among `conditions` that did not learn (learning.judge_training: the probe, else the
    logged curve), each seed with its losses."""
    out = []
    for c in conditions:
        if not SETUPS[c.split("@")[0]].trained:
            continue
        for run in scope.runs(c):
            ok, why = judge_training(run.get("training"))
            if ok is False:
                out.append(f"{c} seed {run['seed']} (loss {why})")
    return out


__all__ = ["AUC_RESAMPLES", "auc_compare", "not_learned", "seed_compare"]
