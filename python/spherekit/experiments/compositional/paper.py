"""What "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" claims, checked on the runs of
one backbone, and where a run departs from it (departures.py).

The paper prints no table body and no figure values (PRINTED is empty): every number of the card is measured here.
Each claim is a rule `statistic op 0` on the units' means with a 95% interval from the experiment core's two-level
bootstrap (spherekit.experiments.api.uncertainty.two_level): every resample draws the evaluation items with
replacement (multiplicities w_i, the same items for every unit: paired) and every unit's seeds with replacement
(multiplicities v_us, the same draw for units of the same seed count), and recomputes the statistic:
- retrieval (C1, C2, C5, C5b, C6): the items are the suite's queries; a unit's value is its resampled seeds' mean
  per-query nDCG@10 / Acc@1 (evaluate.py), averaged over the resampled queries, sum_i w_i sum_s v_us x_usi / (m_u n).
  Runs measured before per-query values were kept give the point estimate alone: their noise is unknown, so the
  claim is inconclusive (spherekit.experiments.api.claims);
- Figure 1 (C4, C4b): the items are the held-out near-miss pairs; a pair's change B - A on seed s (Model A and
  Model B of the same seed) is taken v_s w_i times, pooled over the seeds;
- Figure 3 (C8, C9): the items are the held-out pairs; a verifier run's ROC-AUC is recomputed on each resample with
  pair i taken w_i times (uncertainty.count_weighted_auc), then averaged over the resampled seeds (runs measured
  before per-pair scores were kept: the point estimate alone, inconclusive, and the record says so).
A claim holds when the whole interval passes its rule, does not hold when none of it does, and is inconclusive
otherwise, or when a training of a condition it rests on (Claim.rests_on) did not learn (the core's gate,
spherekit.experiments.api.learning: the trainer's probe, the logged curve or a verifier's start and final loss).
The claims reading verifier runs (C5, C5b, C6, C8, C9: _verifier_claim) are also inconclusive when a trained
verifier among those they rest on is undertrained (undertrained.py: its near-miss ROC-AUC interval contains 0.5, or
it re-ranks below its own stage 1 beyond the interval), whichever side of the comparison it is on: a verifier
trained far short of the released step counts cannot decide a claim about what the verifier can do.
C3 and C7 cannot fail on one-token edits: a near-miss shares all but a word or two with its anchor, so pooled
cosines and MaxSim score it near identity by construction. They are sanity checks.

- C1 / C2 Table 1: Model B's mean nDCG@10 (Acc@1) below Model A's.
- C3 (sanity) Figure 1: under Model A every family's mean near-miss cosine above the midpoint of the reference
  positives' and negatives' means.
- C4 Figure 1: Model B lowers negation and spatial near-misses: per family, the mean change of the pair's cosine
  B - A below 0, and more than half of the pairs (pooled over seeds) lowered by more than LOWERED_BY, i.e. the
  upper median of the changes below -LOWERED_BY; the statistic is the largest of these four numbers (each + its
  offset). C4b: binding's drop (A - B) is the smallest of the three families.
- C5 Figure 2: frozen F1's nDCG@10 above every other frozen verifier's. C5b: "F0 and F4 are often close, while soft
  alignment F2 is consistently weaker": frozen F2's nDCG@10 and Acc@1 (the figure's two panels: "consistently")
  below those of each of frozen F0, F1 and F4 (F3 is not in the sentence).
- C6 Figure 2: end-to-end F4's gain over its own stage 1 (the jointly trained encoder's pooled-cosine ranking) is
  positive and larger than every other end-to-end verifier's gain over its own stage 1.
- C7 (sanity) Figure 3: frozen MaxSim (F1) scores near-misses at least as high as Model B's pooled cosine.
- C8 Figure 3: the best overall ROC-AUC (positives vs near-misses) of the F3/F4 runs above the best of the F0-F2 runs.
- C9 Figure 3: end-to-end F4's spatial ROC-AUC above every other verifier run's.
"""

from __future__ import annotations

import math

import numpy as np

from ..api import fmt
from ..api.claims import NO_ITEMS, Claim, Measured, NotRun, difference
from ..api.uncertainty import two_level
from .data import FAMILIES
from .departures import departures
from .readings import auc_noise, fig1_means, fig1_pairs, fig3_means, lowered_share, spread
from .spec import verifier_of

PRINTED: list = []
LOWERED_BY = 0.01    # C4: a pair counts as lowered by Model B when its cosine drops by more than this
NO_PAIR_SCORES = "none: these runs kept no per-pair verifier scores (measured before they were)"
ENCODERS = ("model_a", "model_b")
FIGURE2_METRICS = ("nDCG@10", "Acc@1")  # Figure 2's panels
F2_BELOW = ("F0", "F1", "F4")  # sec. 3.2: "F0 and F4 are often close, while soft alignment F2 is consistently weaker"


# ---------------------------------------------------------------- the noise rules

def _top(values) -> np.ndarray:
    """The elementwise largest of (R,) arrays."""
    return np.max(np.stack(list(values)), axis=0)


def _least(values) -> np.ndarray:
    """The elementwise smallest of (R,) arrays."""
    return np.min(np.stack(list(values)), axis=0)


def _point(statistic, means: dict[str, float]) -> float:
    """statistic (of {name: (R,) values}) at the units' means."""
    return float(statistic({k: np.array([v]) for k, v in means.items()})[0])


def _retrieval(s, series: dict, statistic, text: str) -> Measured:
    """The rule statistic(means) > 0, where means = {name (any key): unit mean of (condition, metric)} for each
    series and statistic maps {name: (R,) values} to (R,) values, with the two-level bootstrap over the seeds and the
    queries (module docstring): a name's value on a resample is Draw.mean(condition, its (seeds, queries) series)."""
    measured = {k: s.metric(c, key) for k, (c, key) in series.items()}
    value = _point(statistic, measured)
    try:
        x = {k: s.series(c, key) for k, (c, key) in series.items()}
    except NotRun:
        return Measured.compare(value, ">", 0.0, text, uncertainty=NO_ITEMS)
    if len({v.shape[1] for v in x.values()}) != 1:
        raise ValueError(f"the series {sorted(series)} hold different numbers of queries")
    noise = two_level(lambda d: statistic({k: d.mean(c, x[k]) for k, (c, _) in series.items()}),
                      next(iter(x.values())).shape[1], {c: len(x[k]) for k, (c, _) in series.items()})
    return Measured.compare(value, ">", 0.0, text, **noise.measured())


def _verifiers(regime: str | None = None, names=None):
    """rests_on of a claim reading the verifier runs (of one regime; of the verifiers `names` only): the scope's
    verifier conditions."""
    return lambda s, label: [c for c in s.units if verifier_of(c) and (regime is None or c.startswith(regime + "_"))
                             and (names is None or verifier_of(c) in names)]


# ---------------------------------------------------------------- Table 1

def _model_b_drop(metric: str):
    def check(s):
        ma, mb = s.metric("model_a", metric), s.metric("model_b", metric)
        sa, sb = spread(s.unit("model_a"), metric), spread(s.unit("model_b"), metric)
        pm = f" ± {fmt.num(math.hypot(sa, sb))}" if sa is not None and sb is not None else ""
        rel = 100 * (ma - mb) / ma if ma else float("nan")
        text = f"A {fmt.num(ma)}, B {fmt.num(mb)}, B - A = {fmt.signed(mb - ma)}{pm} (relative drop {fmt.num(rel, 1)}%)"
        return difference(s, "model_a", "model_b", metric, "<", 0.0, text=text)
    return check


# ---------------------------------------------------------------- Figure 1

def _figure1(s, *conditions) -> list[dict]:
    means = [fig1_means(s.unit(c)) for c in conditions]
    if not all(means):
        raise NotRun(" and ".join(f"{c}'s Figure 1 records" for c in conditions))
    return means


def _near_positive(s):
    (a,) = _figure1(s, "model_a")
    fams = [f for f in FAMILIES if f in a]
    if not fams:
        raise NotRun("near-miss pairs in model_a's Figure 1 records")
    mid = (a["positive"] + a["negative"]) / 2
    text = ", ".join(f"{f} {fmt.num(a[f])}" for f in fams) + \
        f"; positives {fmt.num(a['positive'])}, negatives {fmt.num(a['negative'])} (midpoint {fmt.num(mid)})"
    return Measured.compare(min(a[f] for f in fams) - mid, ">", 0.0, text)


def _changes(s):
    """(text of every family's mean change and lowered share, Model A and B cosines (seeds x pairs, over the seeds
    both have), each pair's family index)."""
    a, b = _figure1(s, *ENCODERS)
    fams = [f for f in FAMILIES if f in a]
    share = {f: lowered_share(s.unit("model_a"), s.unit("model_b"), f, LOWERED_BY) for f in fams}
    text = ", ".join(f"{f} {fmt.signed(b[f] - a[f])} ({fmt.pct(share[f], 0)} of pairs lowered)" for f in fams)
    got = fig1_pairs({c: s.unit(c) for c in ENCODERS})
    if got is None:
        raise NotRun("a seed shared by model_a's and model_b's Figure 1 records")
    values, family = got
    return text, values["model_a"], values["model_b"], family


def _pairs_rule(statistic, change: np.ndarray, op: str, text: str) -> Measured:
    """The rule statistic(draw) op 0 on Figure 1's changes B - A (seeds x pairs), with the two-level bootstrap over
    the seed pairs (model_a and model_b of a seed resampled together: the same seed count draws the same seeds) and
    the near-miss pairs."""
    m = len(change)
    noise = two_level(statistic, change.shape[1], {"model_a": m, "model_b": m})
    return Measured.compare(noise.value, op, 0.0, text, **noise.measured())


def _family_mean(change: np.ndarray, cols: np.ndarray, draw) -> np.ndarray:
    """(R,): the mean change of the pairs `cols` pooled over the seeds, pair (s, i) taken v_s w_i times:
    sum_s sum_i v_s w_i d_si / (m sum_i w_i) (NaN when no pair of the family was drawn)."""
    w = draw.items[:, cols]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (draw.seed_mean("model_b", change[:, cols]) * w).sum(1) / w.sum(1)


def _upper_median(change: np.ndarray, cols: np.ndarray, draw) -> np.ndarray:
    """(R,): the upper median of the changes of the pairs `cols` pooled over the seeds, pair (s, i) taken
    c_si = v_s w_i times: the element at 0-based position floor(N / 2) of the N = sum c_si values sorted (all ones:
    d[K // 2] of the K sorted changes); NaN when no pair of the family was drawn."""
    d = change[:, cols].ravel()
    counts = (draw.seeds["model_b"][:, :, None] * draw.items[:, None, cols]).reshape(len(draw.items), -1)
    order = np.argsort(d, kind="stable")
    below = np.cumsum(counts[:, order], axis=1)
    total = below[:, -1]
    at = (below > np.floor(total / 2)[:, None]).argmax(1)
    return np.where(total > 0, d[order][at], np.nan)


def _lowers(s):
    text, a, b, family = _changes(s)
    if not {FAMILIES.index("negation"), FAMILIES.index("spatial")} <= set(family.tolist()):
        raise NotRun("negation and spatial near-misses in the Figure 1 records")
    change = b - a
    cols = [np.flatnonzero(family == FAMILIES.index(f)) for f in ("negation", "spatial")]
    return _pairs_rule(lambda d: _top([x for c in cols for x in (_family_mean(change, c, d),
                                                                 _upper_median(change, c, d) + LOWERED_BY)]),
                       change, "<", text)


def _binding_least(s):
    text, a, b, family = _changes(s)
    if FAMILIES.index("binding") not in family:
        raise NotRun("binding near-misses in the Figure 1 records")
    others = [f for f in ("negation", "spatial") if FAMILIES.index(f) in family]
    if not others:
        raise NotRun("negation or spatial near-misses in the Figure 1 records")
    change = b - a
    cols = {f: np.flatnonzero(family == FAMILIES.index(f)) for f in ("binding", *others)}

    def statistic(d):
        drops = {f: -_family_mean(change, c, d) for f, c in cols.items()}
        return drops["binding"] - _least(drops[f] for f in others)

    return _pairs_rule(statistic, change, "<", text)


# ---------------------------------------------------------------- Figure 2

def _regime(s, regime: str) -> dict[str, str]:
    """{verifier: condition} of the regime's verifier units in the scope."""
    return {verifier_of(c): c for c in s.units if verifier_of(c) and c.startswith(regime + "_")}


def _extreme(regime: str, name: str, highest: bool):
    """name's nDCG@10 above (highest) or below every other verifier's of the regime: min over the others of the
    difference > 0."""
    sign = 1 if highest else -1

    def check(s):
        conds = _regime(s, regime)
        if len(conds) < 2 or name not in conds:
            raise NotRun(f"two or more {regime} verifiers including {name}")
        means = {v: s.metric(c, "nDCG@10") for v, c in conds.items()}
        order = sorted(means, key=means.get, reverse=highest)
        return _retrieval(s, {v: (c, "nDCG@10") for v, c in conds.items()},
                          lambda m: _least(sign * (m[name] - m[o]) for o in m if o != name),
                          ", ".join(f"{v} {fmt.num(means[v])}" for v in order))
    return check


def _f2_weaker(s):
    """C5b: frozen F2's nDCG@10 and Acc@1 (Figure 2's two panels) below those of each of frozen F0, F1 and F4 that
    ran: the smallest of the differences other - F2 > 0."""
    conds = _regime(s, "frozen")
    others = [v for v in F2_BELOW if v in conds]
    if "F2" not in conds or not others:
        raise NotRun("frozen F2 and one or more of frozen " + ", ".join(F2_BELOW))
    series = {(v, m): (conds[v], m) for v in ("F2", *others) for m in FIGURE2_METRICS}
    means = {k: s.metric(c, m) for k, (c, m) in series.items()}
    text = "; ".join(f"{m}: " + ", ".join(f"{v} {fmt.num(means[v, m])}" for v in others) + f" vs F2 "
                     f"{fmt.num(means['F2', m])}" for m in FIGURE2_METRICS)
    return _retrieval(s, series, lambda x: _least(x[o, m] - x["F2", m] for o in others for m in FIGURE2_METRICS),
                      text)


def _e2e_gain(s):
    conds = _regime(s, "e2e")
    if len(conds) < 2 or "F4" not in conds:
        raise NotRun("two or more end-to-end verifiers including F4")
    if any(s.get(c, "stage-1/nDCG@10") is None for c in conds.values()):
        raise NotRun("the end-to-end encoders' own stage-1 scores (stage-1/nDCG@10; runs measured before they were "
                     "kept have none)")
    series = {**{v: (c, "nDCG@10") for v, c in conds.items()},
              **{f"{v}/stage-1": (c, "stage-1/nDCG@10") for v, c in conds.items()}}

    def gains(m):
        return {v: m[v] - m[f"{v}/stage-1"] for v in conds}

    def statistic(m):
        g = gains(m)
        return np.minimum(g["F4"], g["F4"] - _top(g[v] for v in g if v != "F4"))

    means = {k: s.metric(c, key) for k, (c, key) in series.items()}
    g = gains(means)
    text = "gain over its own stage 1: " + ", ".join(
        f"{v} {fmt.signed(g[v])} ({fmt.num(means[v])} vs {fmt.num(means[f'{v}/stage-1'])})"
        for v in sorted(g, key=g.get, reverse=True))
    if s.get("base", "nDCG@10") is not None:
        text += f"; the untuned stage 1 (base) {fmt.num(s.metric('base', 'nDCG@10'))}"
    return _retrieval(s, series, statistic, text)


# ---------------------------------------------------------------- Figure 3

def _maxsim_near_identical(s):
    f3 = fig3_means({"frozen_F1": s.unit("frozen_F1")})
    (b,) = _figure1(s, "model_b")
    fams = [f for f in FAMILIES if f in b]
    bcos = float(np.mean([b[f] for f in fams])) if fams else None
    if "frozen_F1" not in f3 or not bcos:
        raise NotRun("frozen_F1's Figure 3 records and Model B's near-miss cosines")
    m = f3["frozen_F1"]["overall"]["mean"]
    return Measured.compare(m - bcos, ">=", 0.0, f"frozen F1 {fmt.num(m)} vs Model B cosine {fmt.num(bcos)}")


def _auc_rule(s, conds: list[str], family: str, statistic, text: str) -> Measured:
    """statistic({condition: ROC-AUC}) > 0 on `family` ("overall": every pair), statistic mapping {condition: (R,)
    values} to (R,) values, with the two-level bootstrap over the seeds and the family's pairs: a run's ROC-AUC with
    pair i taken w_i times (uncertainty.count_weighted_auc), averaged over the resampled seeds, sum_s v_s AUC_s(w) /
    m."""
    means = {c: v[family]["auc"] for c, v in fig3_means({c: s.unit(c) for c in conds}).items() if family in v}
    value = _point(statistic, means)
    noise = auc_noise({c: s.unit(c) for c in conds}, family, statistic)
    if noise is None:
        return Measured.compare(value, ">", 0.0, text, uncertainty=NO_PAIR_SCORES)
    return Measured.compare(value, ">", 0.0, text, **noise.measured())


def _learned_separate(s):
    f3 = fig3_means(s.units)
    learned = [c for c in f3 if verifier_of(c) in ("F3", "F4")]
    simple = [c for c in f3 if verifier_of(c) in ("F0", "F1", "F2")]
    if not (learned and simple):
        raise NotRun("a learned (F3, F4) and a parameter-free (F0-F2) verifier")
    text = ", ".join(f"{c} {fmt.num(f3[c]['overall']['auc'])}" for c in sorted(f3))
    return _auc_rule(s, sorted(f3), "overall", lambda m: _top(m[c] for c in learned) - _top(m[c] for c in simple),
                     text)


def _spatial(s):
    f3 = {c: v for c, v in fig3_means(s.units).items() if "spatial" in v}
    if len(f3) < 2 or "e2e_F4" not in f3:
        raise NotRun("two or more verifier runs with spatial near-misses including e2e_F4")
    order = sorted(f3, key=lambda c: f3[c]["spatial"]["auc"], reverse=True)
    text = ", ".join(f"{c} {fmt.num(f3[c]['spatial']['auc'])}" for c in order)
    return _auc_rule(s, order, "spatial", lambda m: _least(m["e2e_F4"] - m[c] for c in m if c != "e2e_F4"), text)


# ---------------------------------------------------------------- the claims

def _verifier_claim(cid: str, statement: str, source: str, rule: str, check, rests) -> Claim:
    """A claim reading verifier runs: resting on them (the core's gate on their trainings and on whether a trained
    one is undertrained, spec.undertrained), the rule says so."""
    return Claim(cid, statement, source, f"{rule}; inconclusive when a trained verifier it reads is undertrained "
                 "(trained for fewer steps than the released count, with a near-miss ROC-AUC interval containing "
                 "0.5, or re-ranking below its own stage 1 beyond the interval)", check, rests_on=rests)


BOOT_Q = "two-level bootstrap over the seeds and the queries"
BOOT_P = "two-level bootstrap over the seeds and the held-out pairs"
CLAIMS = [
    Claim("C1", "structural negatives (Model B) lower mean nDCG@10 vs Model A", "Table 1",
          f"Model B's nDCG@10 below Model A's: B - A < 0 ({BOOT_Q})", _model_b_drop("nDCG@10"), rests_on=ENCODERS),
    Claim("C2", "structural negatives (Model B) lower mean Acc@1 vs Model A", "Table 1",
          f"Model B's Acc@1 below Model A's: B - A < 0 ({BOOT_Q})", _model_b_drop("Acc@1"), rests_on=ENCODERS),
    Claim("C3", "under Model A near-misses stay near the positive regime", "Figure 1",
          "under Model A every family's mean near-miss cosine above the midpoint of the reference positives' and "
          "negatives' means (one-token edits: cannot fail)", _near_positive, sanity=True),
    Claim("C4", "Model B lowers the cosine of negation and spatial near-misses", "Figure 1",
          f"for negation and spatial: the mean change B - A of a pair's cosine < 0 and more than half of the pairs "
          f"(pooled over seeds) lowered by more than {LOWERED_BY} (upper median of B - A < -{LOWERED_BY}); the largest "
          f"of the four (each plus its offset) < 0 ({BOOT_P})", _lowers, rests_on=ENCODERS),
    Claim("C4b", "the binding gain is the least definitive (smallest drop)", "Figure 1",
          f"binding's mean drop (A - B) minus the smaller of negation's and spatial's < 0 ({BOOT_P})", _binding_least,
          rests_on=ENCODERS),
    _verifier_claim("C5", "MaxSim (F1) is the strongest frozen reranker (nDCG@10)", "Figure 2",
                    f"frozen F1's nDCG@10 minus every other frozen verifier's > 0 (two or more ran; {BOOT_Q})",
                    _extreme("frozen", "F1", highest=True), _verifiers("frozen")),
    _verifier_claim("C5b", "soft alignment (F2) is consistently weaker than F0, F1 and F4 (frozen; 'F0 and F4 are "
                    "often close, while soft alignment F2 is consistently weaker')", "Figure 2",
                    "frozen F0's, F1's and F4's nDCG@10 and Acc@1 (Figure 2's panels) each minus frozen F2's > 0 "
                    f"(F2 and one or more of them ran; F3 is not in the paper's sentence; {BOOT_Q})",
                    _f2_weaker, _verifiers("frozen", ("F2", *F2_BELOW))),
    _verifier_claim("C6", "end-to-end F4 gives the largest gains", "Figure 2",
                    "end-to-end F4's nDCG@10 gain over its own stage 1 (the jointly trained encoder alone) > 0 and "
                    f"above every other end-to-end verifier's gain over its own stage 1 (two or more ran; {BOOT_Q})",
                    _e2e_gain, _verifiers("e2e")),
    Claim("C7", "MaxSim (F1) scores near-misses as near-identical (>= Model B's pooled cosine)", "Figure 3",
          "frozen F1's mean score on the held-out near-misses at least Model B's mean near-miss cosine (mean of the "
          "families' means; one-token edits: cannot fail)", _maxsim_near_identical, sanity=True),
    _verifier_claim("C8", "F3/F4 separate near-misses where F0-F2 do not (ROC-AUC)", "Figure 3",
                    "the best overall ROC-AUC (positives vs near-misses) of the F3/F4 runs minus the best of the "
                    f"F0-F2 runs > 0 ({BOOT_P}, the AUCs recomputed per resample)", _learned_separate, _verifiers()),
    _verifier_claim("C9", "end-to-end F4 is strongest on spatial flips (spatial ROC-AUC)", "Figure 3",
                    f"end-to-end F4's spatial ROC-AUC minus every other verifier run's > 0 ({BOOT_P}: the spatial "
                    "ones)", _spatial, _verifiers()),
]

__all__ = ["CLAIMS", "PRINTED", "departures"]
