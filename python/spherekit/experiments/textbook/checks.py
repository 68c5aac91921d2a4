"""The checks of the textbook's claims (paper.CLAIMS): each reads the units of one backbone (a claims.Scope) and
returns what it measured, with the uncertainty of what it compares (noise.py: the two-level bootstrap over the
queries, pairs or items a section kept and its seeds). Whether the trainings a claim reads learned is the core's
gate (the claims' rests_on, spherekit.experiments.api.learning)."""

from __future__ import annotations

import numpy as np

from ..api import fmt
from ..api.claims import NO_ITEMS, Measured, NotRun
from .noise import series, set_mean, two_sample, unit_noise, weighted_median, within_unit

# the keys of the sections' metrics that the checks read
PARAPHRASE, UNRELATED = "listing1/cosine (paraphrase)", "listing1/cosine (closest unrelated pair)"
MNRL_DIFF, MNRL_LOSS = "listing3/max abs diff (chapter vs spherekit MNRL)", "listing3/loss (random example)"
POSITIVES_RETURNED = "listing4/positives returned"
AGREES = "listing4/agrees (sentence-transformers mine_hard_negatives)"
STD_768, RELATIVE_ERROR = "random vectors/cosine std (d=768)", "random vectors/relative error (max over d)"
GAP_RANDOM, GAP_HARDEST = "cosine gap (random irrelevant, median)", "cosine gap (hardest irrelevant, median)"
GAP_ITEMS = "cosine gap (random irrelevant)"
IN_RANGE = "share in gap range (random irrelevant)"
AT_TARGET = "(fastest setting at the target recall)"
ANN_PARAMS = {"ivf": "nprobe", "hnsw": "efSearch"}
POOLINGS = ("cls", "mean", "max")
LOSSES = ("mnrl", "triplet", "cosine")
CURVE_MEAN = "(mean over the training curve)"
CORPORA = ("terms", "sentences")
EVAL_COSINE, EVAL_LABEL, PAIRS_PER_QUERY = "cosine (evaluation pairs)", "label (evaluation pairs)", 3
RIGHT = "near-misses and examples/correct ({})"
PARAPHRASE_GAPS = "paraphrases/cosine gap (paraphrase - unrelated)"
ROLE_SWAPS = "role swaps/cosine"
NO_NOISE = "none: one fixed example on a frozen encoder (deterministic; the run kept no per-item values of the set)"

# margins of the rules
TRANSFER_LOSS = 0.05  # F1 a threshold calibrated on the other corpus must lose
RULE_OF_THUMB_LOSS = 0.05  # F1 the 0.7 rule must lose against the calibrated best
ROLE_SWAP_COSINE = 0.9
MAX_SCANNED = 0.5  # "skip large fractions of the search space": under half of the corpus scanned


def key(s, name: str) -> str:
    """A retrieval key at the card's eval_k ("mnrl/R@10")."""
    return f"{name}/R@{s.config['eval_k']}"


def each_run(s, condition: str, read) -> list:
    """read(run) for every run (seed) of the condition; NotRun when a run lacks what read needs."""
    try:
        return [read(run) for run in s.runs(condition)]
    except (KeyError, TypeError):
        raise NotRun(f"{condition} (metrics or details of every run)") from None


# ---------------------------------------------------------------- listings

def on_a_set(s, condition: str, key: str, op: str, margin: float, example: str, noun: str, what: str) -> Measured:
    """The rule `mean of the unit's per-item values of key  op  margin` on the frozen backbone, with a bootstrap
    over those items (`noun`: what they are); `example` (the chapter's single instance) goes into the text,
    unjudged."""
    values = s.series(condition, key)
    mean = float(values.mean())
    return set_mean(s, condition, key, op, margin, f"{example}; {what} over {values.shape[1]:,} {noun}: mean "
                    f"{fmt.num(mean, 4)}", noun, frozen=True)


def paraphrase(s):
    para, unrel = s.metric("listings", PARAPHRASE), s.metric("listings", UNRELATED)
    example = f"listing 1: cos(paraphrase) {fmt.num(para, 4)} vs cos(unrelated) <= {fmt.num(unrel, 4)}"
    if series(s, "listings", PARAPHRASE_GAPS) is None:
        return Measured.compare(para - unrel, ">", 0.0, example, uncertainty=NO_NOISE, exact=True)
    return on_a_set(s, "listings", PARAPHRASE_GAPS, ">", 0.0, example, "sentences",
                    "cos(sentence, its synonym paraphrase) - cos(sentence, an unrelated one)")


def mnrl_equality(s):
    diff = s.metric("listings", MNRL_DIFF)
    return Measured.compare(diff, "<", 1e-5, f"largest |chapter - spherekit| over the random and the real batch: "
                            f"{diff:.2e} (random example loss {fmt.num(s.get('listings', MNRL_LOSS), 4)})")


def mining_listing(s):
    returned = s.metric("listings", POSITIVES_RETURNED)
    negatives = each_run(s, "listings", lambda run: run["details"]["chapter_negatives"])
    agree = each_run(s, "listings", lambda run: run["metrics"][AGREES])
    at_most = all(len(v) <= s.config["num_negatives"] for negs in negatives for v in negs.values())
    return Measured.decided(returned == 0 and at_most and all(agree),
                            f"listing 4 negatives {'; '.join(map(str, negatives))}; positives returned: "
                            f"{returned:g}; same as sentence-transformers' mine_hard_negatives: "
                            f"{'; '.join(map(str, agree))}")


# ---------------------------------------------------------------- concentration of measure

def std(s):
    err, dim = s.metric("concentration", RELATIVE_ERROR), s.metric("concentration", "dimension")
    dims = sorted({*s.config["random_dims"], int(dim)})
    return Measured.compare(err, "<=", s.config["std_tolerance"], (
        f"std at d=768: {fmt.num(s.get('concentration', STD_768), 4)} (1/sqrt(768) = 0.0361); largest relative "
        f"error over d = {dims}: {fmt.num(err, 4)}. The backbone is far from isotropic: random passage pairs have "
        f"mean cosine {fmt.num(s.get('concentration', 'passages/anisotropy'))} and std "
        f"{fmt.num(s.get('concentration', 'passages/cosine std'))} (isotropic: 0 and "
        f"{fmt.num(s.get('concentration', 'isotropic/cosine std'))})"))


def gap(s):
    """The median gap (relevant - random irrelevant passage) within gap_range: |median - centre| within the
    half-width, with the two-level bootstrap (queries and seeds: each seed draws its own irrelevant passages) of
    the median of every seed's gaps pooled (noise.weighted_median)."""
    lo, hi = s.config["gap_range"]
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    share = s.get("concentration", IN_RANGE)

    def text(median, draws=""):
        return (f"relevant - random irrelevant passage: median {fmt.num(median)}{draws} "
                f"({fmt.num(None if share is None else 100 * share, 0)}% of queries within {lo}-{hi}); relevant - "
                f"hardest irrelevant: {fmt.num(s.get('concentration', GAP_HARDEST))}; value = median - {centre:g}")

    gaps = series(s, "concentration", GAP_ITEMS)  # (seeds, queries)
    if gaps is None:
        median = s.metric("concentration", GAP_RANDOM)
        return Measured.compare(median - centre, "within", half, text(median), uncertainty=NO_ITEMS)
    median = float(np.median(gaps))
    noise = unit_noise("concentration", [gaps], lambda d, a: weighted_median(a[0], d, "concentration") - centre,
                       "queries")
    return Measured.compare(median - centre, "within", half, text(median, f" (every seed's draws, {gaps.size:,})"),
                            **noise)


# ---------------------------------------------------------------- pooling

def _pooling_text(s):
    frozen = {p: s.metric("pooling", key(s, f"frozen/{p}")) for p in POOLINGS}
    trained = {p: s.get("pooling", key(s, f"trained/{p}")) for p in POOLINGS}
    text = f"frozen R@{s.config['eval_k']}: " + ", ".join(f"{p} {fmt.num(v)}" for p, v in frozen.items())
    ran = all(v is not None for v in trained.values())
    if ran:
        text += "; after fine-tuning: " + ", ".join(f"{p} {fmt.num(v)}" for p, v in trained.items())
    return ran, text


def mean_pooling(s):
    ran, text = _pooling_text(s)
    stages = ("frozen", "trained") if ran else ("frozen",)
    pairs = [(key(s, f"{stage}/{p}"), key(s, f"{stage}/mean")) for stage in stages for p in ("cls", "max")]
    return within_unit(s, "pooling", pairs, ">", 0.0, text + "; value = the smallest lead of mean", frozen=not ran)


def max_pooling(s):
    _, text = _pooling_text(s)
    return within_unit(s, "pooling", [(key(s, "frozen/mean"), key(s, "frozen/max"))], "<", 0.0,
                       text + "; value = max - mean (frozen)", frozen=True)


# ---------------------------------------------------------------- losses

def losses(s):
    final = {x: s.metric("losses", key(s, x)) for x in LOSSES}
    area = {x: s.metric("losses", f"{key(s, x)} {CURVE_MEAN}") for x in LOSSES}
    start = fmt.num(s.get("losses", key(s, "start")))
    text = (f"R@{s.config['eval_k']} after {s.config['steps']} steps (start {start}): "
            + ", ".join(f"{x} {fmt.num(v)}" for x, v in final.items()) + "; mean over the training curve: "
            + ", ".join(f"{x} {fmt.num(v)}" for x, v in area.items()) + "; value = the smaller lead of mnrl")
    pairs = [(key(s, "triplet"), key(s, "mnrl")),
             (f"{key(s, 'triplet')} {CURVE_MEAN}", f"{key(s, 'mnrl')} {CURVE_MEAN}")]
    return within_unit(s, "losses", pairs, ">", 0.0, text)


# ---------------------------------------------------------------- hard-negative mining

def _chains(s):
    rounds = range(1, s.config["rounds"] + 1)
    hard = [s.metric("mining", key(s, f"hard/round{r}")) for r in rounds]
    rand = [s.metric("mining", key(s, f"random/round{r}")) for r in rounds]
    queries = s.config.get("mining_queries", "terms")
    text = (f"{queries} queries, R@{s.config['eval_k']} from {fmt.num(s.get('mining', key(s, 'start')))}: hard "
            "(BM25, then model-mined) " + " -> ".join(map(fmt.num, hard)) + "; random " + " -> ".join(map(fmt.num,
                                                                                                         rand)))
    return hard, rand, text


def hard_vs_random(s):
    hard, _, text = _chains(s)
    last = len(hard)
    return within_unit(s, "mining", [(key(s, f"random/round{last}"), key(s, f"hard/round{last}"))], ">", 0.0,
                       text + f"; value = hard - random after round {last}")


def model_mined_round(s):
    hard, _, text = _chains(s)
    if len(hard) < 2:
        raise NotRun("a model-mined round (rounds >= 2)")
    return within_unit(s, "mining", [(key(s, "hard/round1"), key(s, f"hard/round{len(hard)}"))], ">", 0.0,
                       text + f"; value = hard round {len(hard)} - round 1")


# ---------------------------------------------------------------- thresholds

def rule_of_thumb(s):
    best, rule = s.metric("thresholds", "best F1/F1"), s.metric("thresholds", "rule of thumb/F1")
    t, target = s.get("thresholds", "calibrated/threshold"), s.config["target_precision"]
    reach = (f"no threshold reaches precision {target}" if t is None else f"threshold for precision {target}: "
             f"{fmt.num(t)} (recall {fmt.num(s.get('thresholds', 'calibrated/recall'))})")
    return Measured.compare(best - rule, ">", RULE_OF_THUMB_LOSS, (
        f"{reach}; best-F1 threshold {fmt.num(s.get('thresholds', 'best F1/threshold'))} (F1 {fmt.num(best)}); at "
        f"{s.config['rule_of_thumb']}: precision {fmt.num(s.get('thresholds', 'rule of thumb/precision'))}, recall "
        f"{fmt.num(s.get('thresholds', 'rule of thumb/recall'))}, F1 {fmt.num(rule)}"))


def f1_at(scores: np.ndarray, labels: np.ndarray, t: float) -> float:
    """F1 of "a match when cos >= t" (0 when nothing is predicted or nothing is right)."""
    pred = scores >= t
    tp = float((pred & (labels > 0.5)).sum())
    if tp == 0:
        return 0.0
    return 2 * tp / (float(pred.sum()) + float((labels > 0.5).sum()))


def transfer(s):
    """Each corpus's held-out pairs at its own calibrated threshold vs at the other corpus's: the smaller F1 loss
    of the two corpora must exceed TRANSFER_LOSS, with a two-sample bootstrap over the held-out queries of both
    (noise.two_sample: the corpora's queries are different, unpaired items)."""
    t = {c: s.metric("thresholds", f"{c}/threshold (best F1, calibration part)") for c in CORPORA}
    f1 = {(c, src): s.metric("thresholds", f"{c}/F1 (evaluation part, {src} threshold)") for c in CORPORA
          for src in CORPORA}
    other = dict(zip(CORPORA, reversed(CORPORA)))
    losses_ = {c: f1[c, c] - f1[c, other[c]] for c in CORPORA}
    text = ("best-F1 thresholds (calibration parts): " + ", ".join(f"{c} {fmt.num(t[c])}" for c in CORPORA)
            + "; F1 on each corpus's evaluation part, own vs other corpus's threshold: "
            + ", ".join(f"{c} {fmt.num(f1[c, c])} vs {fmt.num(f1[c, other[c]])}" for c in CORPORA)
            + "; value = the smaller F1 loss")
    value = min(losses_.values())
    arrays = {c: (series(s, "thresholds", f"{c}/{EVAL_COSINE}"), series(s, "thresholds", f"{c}/{EVAL_LABEL}"))
              for c in CORPORA}
    if any(x is None for pair in arrays.values() for x in pair):
        return Measured.compare(value, ">", TRANSFER_LOSS, text, uncertainty=NO_ITEMS)
    arrays = {c: (cos.mean(axis=0), lab.mean(axis=0)) for c, (cos, lab) in arrays.items()}  # frozen: seeds alike
    grouped = {c: (cos.reshape(-1, PAIRS_PER_QUERY), lab.reshape(-1, PAIRS_PER_QUERY))
               for c, (cos, lab) in arrays.items()}

    def loss(c, idx):
        cos, lab = grouped[c][0][idx].ravel(), grouped[c][1][idx].ravel()
        return f1_at(cos, lab, t[c]) - f1_at(cos, lab, t[other[c]])

    a, b = CORPORA
    lo, hi, how = two_sample(lambda ia, ib: min(loss(a, ia), loss(b, ib)), len(grouped[a][0]), len(grouped[b][0]))
    return Measured.compare(value, ">", TRANSFER_LOSS, text, interval=(lo, hi), uncertainty=how)


# ---------------------------------------------------------------- approximate search

def ann(s):
    """The highest recall@k among the settings that scan under MAX_SCANNED of the corpus must reach the target,
    with a bootstrap over the queries of that setting's recall (the section is unseeded: fixed embeddings)."""
    corpus = int(s.metric("ann", "count (corpus)"))
    rows = each_run(s, "ann", lambda run: run["details"]["rows"])[0]
    k = min(s.config["ann_k"], corpus)
    parts = []
    for x, param in ANN_PARAMS.items():
        best = s.metric("ann", f"{x}/R@{k} (exact neighbours, best setting)")
        p = s.get("ann", f"{x}/{param} {AT_TARGET}")
        parts.append(f"{x}: max recall@{k} {fmt.num(best)}" + ("" if p is None else (
            f", {s.config['target_recall']:.0%} at {param} {p:g} (speed-up "
            f"{fmt.num(s.get('ann', f'{x}/speed-up {AT_TARGET}'), 2)}x, "
            f"{fmt.pct(s.get('ann', f'{x}/share scanned {AT_TARGET}'))} of the corpus scanned)")))
    cheap = [r for r in rows if r["fraction_scanned"] < MAX_SCANNED]
    if not cheap:
        return Measured.decided(False, "; ".join(parts) + f" (corpus {corpus}); no setting scans under "
                                f"{MAX_SCANNED:.0%} of the corpus", exact=True,
                                uncertainty="none needed: the scanned share is the index's deterministic count")
    best = max(cheap, key=lambda r: r["recall"])
    param = ANN_PARAMS[best["method"]]
    text = "; ".join(parts) + (f" (corpus {corpus}); value = recall@{k} of {best['method']} {param} {best['param']} "
                               f"({fmt.pct(best['fraction_scanned'])} scanned), the best under "
                               f"{MAX_SCANNED:.0%} scanned")
    per_query = series(s, "ann", f"{best['method']}/R@{k} (exact neighbours, {param} {best['param']})")
    if per_query is None:
        return Measured.compare(best["recall"], ">=", s.config["target_recall"], text, uncertainty=NO_ITEMS)
    return Measured.compare(best["recall"], ">=", s.config["target_recall"], text,
                            **unit_noise("ann", [per_query], lambda d, a: d.mean("ann", a[0]), "queries",
                                         frozen="unseeded: searches of fixed embeddings, no training noise"))


# ---------------------------------------------------------------- order sensitivity

def role_swap(s):
    swap = s.metric("order", "chapter pair/cosine (role swap)")
    same = s.get("order", "chapter pair/cosine (same meaning)")
    example = f"cos = {fmt.num(swap, 4)} for the chapter's pair (same-meaning passage {fmt.num(same, 4)})"
    if series(s, "order", ROLE_SWAPS) is None:
        return Measured.compare(swap, ">", ROLE_SWAP_COSINE, example, uncertainty=NO_NOISE, exact=True)
    return on_a_set(s, "order", ROLE_SWAPS, ">", ROLE_SWAP_COSINE, example, "role swaps",
                    "cos(sentence, its subject-object swap)")


def rerank(s):
    """The re-rank puts the right passage first more often than pooled cosine, over the held-out near-misses and
    the chapter's role swaps together, with the two-level bootstrap over those items and the verifier's seeds."""
    c1, c2 = (s.metric("order", f"examples/correct ({x})") for x in ("pooled cosine", "verifier re-rank"))
    a1, a2 = (s.metric("order", f"near-misses/Acc ({x})") for x in ("pooled cosine", "verifier re-rank"))
    n = s.metric("order", "examples/count")
    text = (f"same-meaning passage first: pooled cosine {c1:g}/{n:g} examples, verifier re-rank {c2:g}/{n:g}; "
            f"held-out near-misses ranked right: cosine {fmt.num(a1)}, verifier {fmt.num(a2)}")
    right = [series(s, "order", RIGHT.format(x)) for x in ("pooled cosine", "verifier re-rank")]
    if any(x is None for x in right):
        sizes = each_run(s, "order", lambda run: sum(f["n"] for f in run["details"]["nearmiss"].values()))[0]
        value = ((a2 - a1) * sizes + (c2 - c1)) / (sizes + n)
        return Measured.compare(value, ">", 0.0, text + f"; value = re-rank - cosine over {sizes:g} + {n:g} items",
                                uncertainty=NO_ITEMS)
    value = float(right[1].mean() - right[0].mean())
    noise = unit_noise("order", right, lambda d, a: d.mean("order", a[1]) - d.mean("order", a[0]), "items")
    return Measured.compare(value, ">", 0.0, text + f"; value = re-rank - cosine over {right[0].shape[1]} items",
                            **noise)

