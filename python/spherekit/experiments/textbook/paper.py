"""What the textbook chapter (Section 31.1a) states, its statements as claims checked per backbone, and where a run
departs from it.

The chapter prints no outputs and trains nothing at scale: its one number is the std of random unit-vector cosines
in 768 dimensions ("In 768-dim BERT, std dev ~ 0.036"). Every other number of the card is measured here, on the
offline data. Each claim quotes the chapter, the rule says when it holds here (with its margin), and a claim
whose section did not run is "not run".
"""

from __future__ import annotations

from .. import fmt
from ..claims import Claim, Measured, NotRun
from ..printed import Printed

SECTION = "Section 31.1a"
R10 = "R@10"

# the keys of the sections' metrics that the claims read
PARAPHRASE, UNRELATED = "listing1/cosine (paraphrase)", "listing1/cosine (closest unrelated pair)"
MNRL_DIFF, MNRL_LOSS = "listing3/max abs diff (chapter vs spherekit MNRL)", "listing3/loss (random example)"
POSITIVES_RETURNED = "listing4/positives returned"
AGREES = "listing4/agrees (sentence-transformers mine_hard_negatives)"
STD_768, RELATIVE_ERROR = "random vectors/cosine std (d=768)", "random vectors/relative error (max over d)"
GAP_RANDOM, GAP_HARDEST = "cosine gap (random irrelevant, median)", "cosine gap (hardest irrelevant, median)"
IN_RANGE = "share in gap range (random irrelevant)"
AT_TARGET = "(fastest setting at the target recall)"
ANN_PARAMS = {"ivf": "nprobe", "hnsw": "efSearch"}
POOLINGS = ("cls", "mean", "max")
LOSSES = ("mnrl", "triplet", "cosine")

PRINTED = [Printed(f"{SECTION}, concentration of measure", "concentration", STD_768, 0.036,
                   setting="random unit vectors, d = 768")]


def _key(s, name: str) -> str:
    """A retrieval key at the card's eval_k ("mnrl/R@10")."""
    return f"{name}/R@{s.config['eval_k']}"


def _each_run(s, condition: str, read) -> list:
    """read(run) for every run (seed) of the condition; NotRun when a run lacks what read needs."""
    try:
        return [read(run) for run in s.runs(condition)]
    except (KeyError, TypeError):
        raise NotRun(f"{condition} (metrics or details of every run)") from None


# ---------------------------------------------------------------- listings

def _paraphrase(s):
    para, unrel = s.metric("listings", PARAPHRASE), s.metric("listings", UNRELATED)
    return Measured.compare(para - unrel, ">", 0.0,
                            f"cos(paraphrase) {fmt.num(para, 4)} vs cos(unrelated) <= {fmt.num(unrel, 4)}")


def _mnrl(s):
    diff = s.metric("listings", MNRL_DIFF)
    return Measured.compare(diff, "<", 1e-5, f"largest |chapter - spherekit| over the random and the real batch: "
                            f"{diff:.2e} (random example loss {fmt.num(s.get('listings', MNRL_LOSS), 4)})")


def _mining_listing(s):
    returned = s.metric("listings", POSITIVES_RETURNED)
    negatives = _each_run(s, "listings", lambda run: run["details"]["chapter_negatives"])
    agree = _each_run(s, "listings", lambda run: run["metrics"][AGREES])
    at_most = all(len(v) <= s.config["num_negatives"] for negs in negatives for v in negs.values())
    return Measured.decided(returned == 0 and at_most and all(agree),
                            f"listing 4 negatives {'; '.join(map(str, negatives))}; positives returned: "
                            f"{returned:g}; same as sentence-transformers' mine_hard_negatives: "
                            f"{'; '.join(map(str, agree))}")


# ---------------------------------------------------------------- concentration of measure

def _std(s):
    err, dim = s.metric("concentration", RELATIVE_ERROR), s.metric("concentration", "dimension")
    dims = sorted({*s.config["random_dims"], int(dim)})
    return Measured.compare(err, "<=", s.config["std_tolerance"], (
        f"std at d=768: {fmt.num(s.get('concentration', STD_768), 4)} (1/sqrt(768) = 0.0361); largest relative "
        f"error over d = {dims}: {fmt.num(err, 4)}. The backbone is far from isotropic: random passage pairs have "
        f"mean cosine {fmt.num(s.get('concentration', 'passages/anisotropy'))} and std "
        f"{fmt.num(s.get('concentration', 'passages/cosine std'))} (isotropic: 0 and "
        f"{fmt.num(s.get('concentration', 'isotropic/cosine std'))})"))


def _gap(s):
    lo, hi = s.config["gap_range"]
    gap = s.metric("concentration", GAP_RANDOM)
    share = s.get("concentration", IN_RANGE)
    return Measured.decided(lo <= gap <= hi, (
        f"median gap relevant - random irrelevant passage: {fmt.num(gap)} "
        f"({fmt.num(None if share is None else 100 * share, 0)}% of queries within {lo}-{hi}); relevant - hardest "
        f"irrelevant: {fmt.num(s.get('concentration', GAP_HARDEST))}"))


# ---------------------------------------------------------------- pooling

def _poolings(s):
    frozen = {p: s.metric("pooling", _key(s, f"frozen/{p}")) for p in POOLINGS}
    trained = {p: s.get("pooling", _key(s, f"trained/{p}")) for p in POOLINGS}
    text = f"frozen R@{s.config['eval_k']}: " + ", ".join(f"{p} {fmt.num(v)}" for p, v in frozen.items())
    if all(v is not None for v in trained.values()):
        text += "; after fine-tuning: " + ", ".join(f"{p} {fmt.num(v)}" for p, v in trained.items())
    return frozen, trained, text


def _mean_pooling(s):
    frozen, trained, text = _poolings(s)
    best = frozen["mean"] >= max(frozen.values()) and (
        trained["mean"] is None or trained["mean"] >= max(v for v in trained.values() if v is not None))
    return Measured.decided(best, text)


def _max_pooling(s):
    frozen, _, text = _poolings(s)
    return Measured.compare(frozen["max"] - frozen["mean"], "<", 0.0, text)


# ---------------------------------------------------------------- losses

def _losses(s):
    final = {x: s.metric("losses", _key(s, x)) for x in LOSSES}
    area = {x: s.metric("losses", _key(s, x) + " (mean over the training curve)") for x in LOSSES}
    start = fmt.num(s.get("losses", _key(s, "start")))
    text = (f"R@{s.config['eval_k']} after {s.config['steps']} steps (start {start}): "
            + ", ".join(f"{x} {fmt.num(v)}" for x, v in final.items()) + "; mean over the training curve: "
            + ", ".join(f"{x} {fmt.num(v)}" for x, v in area.items()))
    return Measured.decided(final["mnrl"] > final["triplet"] and area["mnrl"] > area["triplet"], text)


# ---------------------------------------------------------------- hard-negative mining

def _chains(s):
    rounds = range(1, s.config["rounds"] + 1)
    hard = [s.metric("mining", _key(s, f"hard/round{r}")) for r in rounds]
    rand = [s.metric("mining", _key(s, f"random/round{r}")) for r in rounds]
    text = (f"R@{s.config['eval_k']} from {fmt.num(s.get('mining', _key(s, 'start')))}: hard (BM25, then "
            "model-mined) " + " -> ".join(map(fmt.num, hard)) + "; random " + " -> ".join(map(fmt.num, rand)))
    return hard, rand, text


def _hard_vs_random(s):
    hard, rand, text = _chains(s)
    return Measured.compare(hard[-1] - rand[-1], ">", 0.0, text)


def _model_mined_round(s):
    hard, _, text = _chains(s)
    if len(hard) < 2:
        raise NotRun("a model-mined round (rounds >= 2)")
    return Measured.compare(hard[-1] - hard[0], ">", 0.0, text)


# ---------------------------------------------------------------- thresholds

def _thresholds(s):
    best, rule = s.metric("thresholds", "best F1/F1"), s.metric("thresholds", "rule of thumb/F1")
    t, target = s.get("thresholds", "calibrated/threshold"), s.config["target_precision"]
    reach = (f"no threshold reaches precision {target}" if t is None else f"threshold for precision {target}: "
             f"{fmt.num(t)} (recall {fmt.num(s.get('thresholds', 'calibrated/recall'))})")
    return Measured.compare(best - rule, ">", 0.05, (
        f"{reach}; best-F1 threshold {fmt.num(s.get('thresholds', 'best F1/threshold'))} (F1 {fmt.num(best)}); at "
        f"{s.config['rule_of_thumb']}: precision {fmt.num(s.get('thresholds', 'rule of thumb/precision'))}, recall "
        f"{fmt.num(s.get('thresholds', 'rule of thumb/recall'))}, F1 {fmt.num(rule)}"))


# ---------------------------------------------------------------- approximate search

def _ann(s):
    corpus = int(s.metric("ann", "count (corpus)"))
    k = min(s.config["ann_k"], corpus)
    parts, scanned = [], []
    for x, param in ANN_PARAMS.items():
        best = s.metric("ann", f"{x}/R@{k} (exact neighbours, best setting)")
        p = s.get("ann", f"{x}/{param} {AT_TARGET}")
        share = s.get("ann", f"{x}/share scanned {AT_TARGET}")
        parts.append(f"{x}: max recall@{k} {fmt.num(best)}" + ("" if p is None else (
            f", {s.config['target_recall']:.0%} at {param} {p:g} (speed-up "
            f"{fmt.num(s.get('ann', f'{x}/speed-up {AT_TARGET}'), 2)}x, {fmt.pct(share)} of the corpus scanned)")))
        if share is not None:
            scanned.append(share)
    text = "; ".join(parts) + f" (corpus {corpus})"
    if not scanned:
        return Measured.decided(False, text + "; neither reaches the target recall")
    return Measured.compare(min(scanned), "<", 0.5, text)


# ---------------------------------------------------------------- order sensitivity

def _role_swap(s):
    swap = s.metric("order", "chapter pair/cosine (role swap)")
    return Measured.compare(swap, ">", 0.9, f"cos = {fmt.num(swap, 4)} for the chapter's pair (same-meaning passage "
                            f"{fmt.num(s.get('order', 'chapter pair/cosine (same meaning)'), 4)})")


def _rerank(s):
    c1, c2 = (s.metric("order", f"examples/correct ({x})") for x in ("pooled cosine", "verifier re-rank"))
    a1, a2 = (s.metric("order", f"near-misses/Acc ({x})") for x in ("pooled cosine", "verifier re-rank"))
    n = s.metric("order", "examples/count")
    return Measured.decided(c2 > c1 and a2 > a1, (
        f"same-meaning passage first: pooled cosine {c1:g}/{n:g} examples, verifier re-rank {c2:g}/{n:g}; held-out "
        f"near-misses ranked right: cosine {fmt.num(a1)}, verifier {fmt.num(a2)}"))


CLAIMS = [
    Claim("listings-1", "paraphrase vs unrelated: 'A feline rested on the rug.' is closer to 'The cat sat on the "
          "mat.' than 'Stock prices rose sharply today.' is", f"{SECTION}, listing 1",
          "holds when cos(paraphrase) is above the cosine of both unrelated pairs", _paraphrase),
    Claim("listings-2", "the MNRL function is 'the cross-entropy of a softmax over similarities': spherekit's fused "
          "MultipleNegativesRankingLoss gives the same value on the same embeddings", f"{SECTION}, listing 3",
          "holds when the largest |chapter - spherekit| is below 1e-5", _mnrl),
    Claim("listings-3", "mine_hard_negatives returns 'the top-k most similar non-positive corpus indices': labelled "
          "positives never returned, at most num_negatives per query", f"{SECTION}, listing 4",
          "holds when no positive is returned, no query gets more than num_negatives, and the listing returns what "
          "sentence-transformers' mine_hard_negatives returns", _mining_listing),
    Claim("concentration-1", "'randomly drawn unit vectors have pairwise cosine similarities concentrating tightly "
          "around zero, std dev ~ 1/sqrt(d). In 768-dim BERT, std dev ~ 0.036'",
          f"{SECTION}, concentration of measure",
          "holds when the largest relative error |std * sqrt(d) - 1| is at most std_tolerance (0.05)", _std),
    Claim("concentration-2", "'The similarity between a query and a completely irrelevant document may differ from "
          "the similarity to the most relevant document by only 0.1-0.3 units'",
          f"{SECTION}, concentration of measure", "holds when the median gap lies in gap_range (0.1-0.3)", _gap),
    Claim("pooling-1", "mean pooling 'tends to produce the most robust representations'; 'start with mean pooling'",
          f"{SECTION}, pooling", "holds when mean is best (frozen, and after fine-tuning where it ran)",
          _mean_pooling),
    Claim("pooling-2", "max pooling 'can capture salient features but is less commonly used'", f"{SECTION}, pooling",
          "holds when max is below mean (frozen)", _max_pooling),
    Claim("losses-1", "'triplet loss is less sample-efficient than MNRL because it uses only one negative per "
          "anchor'", f"{SECTION}, contrastive training",
          "holds when MNRL is above triplet on both (R@10 after training and its mean over the training curve)",
          _losses),
    Claim("mining-1", "'Random negatives are typically too easy ... providing little learning signal'; hard "
          "negatives 'force the model to learn fine-grained distinctions'", f"{SECTION}, hard negatives",
          "holds when hard negatives end above random", _hard_vs_random),
    Claim("mining-2", "'starting with BM25 negatives for initial training and then mining harder negatives with the "
          "trained model for further fine-tuning rounds'", f"{SECTION}, hard negatives",
          "holds when the model-mined round improves on the BM25 round", _model_mined_round),
    Claim("thresholds-1", "''use cosine similarity above 0.7' advice ... will quietly destroy your RAG system': "
          "thresholds depend on the embedding model; 'Calibrate similarity thresholds empirically on YOUR embedding "
          "model and corpus'", f"{SECTION}, similarity thresholds",
          "holds when 0.7 loses more than 0.05 F1 against the calibrated best", _thresholds),
    Claim("ann-1", "'approximate-nearest-neighbor algorithms can skip large fractions of the search space and still "
          "achieve 95%+ recall'", f"{SECTION}, approximate search",
          "holds when one reaches the target recall scanning under half the corpus", _ann),
    Claim("order-1", "'the patient was treated by the doctor' and 'the doctor was treated by the patient' 'may embed "
          "similarly despite having opposite meanings'", f"{SECTION}, word order", "holds when above 0.9", _role_swap),
    Claim("order-2", "'retrieval based on embeddings should be followed by a re-ranking or verification step'",
          f"{SECTION}, word order", "holds when the re-rank beats pooled cosine on both", _rerank),
]


def departures(results: dict) -> list[str]:
    """Where the run departs from the chapter (beyond the configuration table's marked values)."""
    return [
        "data: the chapter names no data set; every measurement is on offline WordNet data (a held-out term "
        "retrieves its glosses, headwords masked; the ANN corpus is WordNet glosses)",
        "listing 2 (BAAI/bge-m3 on CUDA) is not run: the model is not available offline",
        "hard-negative mining: BM25, model-mined and random negatives; the chapter's cross-encoder source is left out",
        "order sensitivity: the verifier (a small CNN over the token similarity map, trained on structural "
        "near-misses) is ours; the chapter names no re-ranker",
    ]


__all__ = ["CLAIMS", "PRINTED", "departures"]
