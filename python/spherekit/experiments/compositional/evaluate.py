"""Measurements: retrieval on the suite (stage 1 = exact pooled-cosine top-K, stage 2 = an optional verifier), pooled
cosines of pairs (Figure 1), verifier scores on the held-out near-misses (Figure 3) with a scale-free separation.

Retrieval metrics per set, then the unweighted mean over sets (NanoBEIR's "mean"): nDCG@10 (binary gains, log2
discounts), MRR@10, Acc@1 (top-1 relevant) and Acc@10 (a relevant document in the top 10), each a mean over the
set's queries; nDCG@10, MRR@10 and Acc@1 are spherekit.evaluation.metrics', Acc@10 (which that module does not
have) is counted here. The released code's verifier "Acc@1" averaged Acc@1 and Acc@10 (a substring match of metric
names); here Acc@1 is Acc@1. With a verifier, the metrics of its stage 1 alone (the same encoder's pooled-cosine
ranking) are kept as "stage-1/<metric>": the verifier's gain is measured against them.

Per-query values (nDCG@10, MRR@10, Acc@1, and their stage-1 values) are kept for the claims' two-level bootstrap, in
the suite's set order, each weighted by N / (S x n_s) (N queries in all, S sets, n_s in the query's set): their
plain mean is then exactly the mean over sets (the weight is 1 when every set has the same number of queries).

Separation: ROC-AUC of the verifier's scores on (anchor, identity-or-paraphrase) pairs (label 1) against (anchor,
near-miss) pairs (label 0); 0.5 = no separation, 1 = every near-miss below every positive. Every pair's two scores
are kept too (per family, in the test order).
"""

from __future__ import annotations

import torch

from ...evaluation import metrics
from ..api.uncertainty import per_item
from .data import FAMILIES
from .spec import ITEM_METRICS, METRICS

STAGE1 = "stage-1"

_RETRIEVERS: dict = {}  # the untuned encoder's stage 1 per set (one backbone at a time), see retrieval()


def accuracy_at(ranked, relevant, k: int) -> float:
    """Share of queries with a relevant document in their top k."""
    hits = [any(int(i) in rel for i in row[:k].tolist()) for row, rel in zip(ranked, relevant)]
    return sum(hits) / len(hits)


def rank_metrics(ranked: torch.Tensor, relevant: list) -> dict[str, float]:
    rel = [set(r) for r in relevant]
    return {"nDCG@10": float(metrics.ndcg_at_k(ranked, rel, k=10)), "MRR@10": float(metrics.mrr(ranked, rel, k=10)),
            "Acc@1": float(metrics.accuracy_at_1(ranked, rel)), "Acc@10": accuracy_at(ranked, rel, 10)}


def per_query(ranked: torch.Tensor, relevant: list) -> dict[str, torch.Tensor]:
    """Each query's nDCG@10, MRR@10 and Acc@1 (their means are rank_metrics')."""
    rel = [set(r) for r in relevant]
    return {"nDCG@10": metrics.ndcg_at_k(ranked, rel, k=10, reduction="none"),
            "MRR@10": metrics.mrr(ranked, rel, k=10, reduction="none"),
            "Acc@1": metrics.accuracy_at_1(ranked, rel, reduction="none")}


def _summary(rankings: dict, suite) -> dict:
    """{"sets", "mean", "mean2", "per_item"} of one ranking per set ({set name: ranked ids})."""
    sets = {s.name: rank_metrics(rankings[s.name], s.relevant) for s in suite}
    n_items = sum(len(s.queries) for s in suite)
    items = {m: [] for m in ITEM_METRICS}
    for s in suite:
        weight = n_items / (len(suite) * len(s.queries))
        for m, values in per_query(rankings[s.name], s.relevant).items():
            items[m] += per_item(values * weight)
    first = list(sets.values())[:2]
    return {"sets": sets, "mean": {m: sum(v[m] for v in sets.values()) / len(sets) for m in METRICS},
            "mean2": {m: sum(v[m] for v in first) / len(first) for m in METRICS}, "per_item": items}


def _retriever(encoder, s, cfg, untuned: str | None):
    """Stage 1 of one set (pooled index + token store of its corpus); `untuned` (the backbone's name) marks the
    untuned encoder, whose stage 1 is built once and kept in memory for every base / frozen unit and seed."""
    from ...retrieval.two_stage import TwoStageRetriever

    key = (untuned, s.name, len(s.corpus), s.corpus[0], cfg.max_seq_length, cfg.top_k)
    if untuned and key in _RETRIEVERS:
        return _RETRIEVERS[key]
    retriever = TwoStageRetriever.from_texts(encoder, s.corpus, None, k=min(cfg.top_k, len(s.corpus)),
                                             batch_size=cfg.eval_batch_size, pair_batch_size=512)
    if untuned:
        for old in [k for k in _RETRIEVERS if k[0] != untuned]:  # one backbone's sets at a time
            del _RETRIEVERS[old]
        _RETRIEVERS[key] = retriever
    return retriever


def retrieval(encoder, suite, cfg, verifier=None, untuned: str | None = None) -> dict:
    """{"sets": {name: metrics}, "mean": metrics over sets, "mean2": over the first two sets (the released code's
    Figure 2 used two sets), "per_item": {metric: weighted per-query values}}; with a verifier the top-K of stage 1
    are re-ranked by its scores, and "stage-1" holds the same record of stage 1 alone. untuned: the backbone's name
    when `encoder` is its untuned checkpoint (stage 1 reused across units and seeds)."""
    reranked, first = {}, {}
    with torch.no_grad():
        for s in suite:
            retriever = _retriever(encoder, s, cfg, untuned)
            retriever.verifier = verifier
            result = retriever.search_texts(encoder, s.queries, batch_size=cfg.eval_batch_size)
            reranked[s.name], first[s.name] = result.ids, result.stage1_ids
    out = _summary(reranked, suite)
    if verifier is not None:
        out[STAGE1] = _summary(first, suite)
    return out


def pooled_cosines(encoder, pairs, batch_size: int) -> list[float]:
    a = encoder.encode([p[0] for p in pairs], batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True)
    b = encoder.encode([p[1] for p in pairs], batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True)
    return [round(float(x), 5) for x in (a * b).sum(-1).cpu()]


def figure1(encoder, data, cfg) -> dict:
    """Pooled cosines of the held-out near-miss pairs (per family) and of the reference positives / negatives."""
    out = {f: pooled_cosines(encoder, [(t["anchor"], t["near_miss"]) for t in data.nearmiss_test
                                       if t["family"] == f], cfg.eval_batch_size)
           for f in FAMILIES if any(t["family"] == f for t in data.nearmiss_test)}
    out["positive"] = pooled_cosines(encoder, data.reference_pos, cfg.eval_batch_size)
    out["negative"] = pooled_cosines(encoder, data.reference_neg, cfg.eval_batch_size)
    return out


@torch.no_grad()
def verifier_scores(encoder, verifier, left, right, batch_size: int) -> list[float]:
    from ...nn.token_encoder import encode_tokens

    scores = []
    for i in range(0, len(left), batch_size):
        a = encode_tokens(encoder, left[i:i + batch_size], batch_size=batch_size)
        b = encode_tokens(encoder, right[i:i + batch_size], batch_size=batch_size)
        scores += [float(x) for x in verifier.score(a.tokens, a.mask, b.tokens, b.mask).cpu()]
    return scores


def figure3(encoder, verifier, data, cfg) -> dict:
    """Per family and overall: mean / std of the verifier's near-miss scores (lower is better), its mean score on
    the positives, the ROC-AUC of positives vs near-misses and the number of pairs; per family also every pair's
    two scores ("scores": {"near_miss", "positive"}, in the test order) for the claims' bootstrap."""
    test = data.nearmiss_test
    near = verifier_scores(encoder, verifier, [t["anchor"] for t in test], [t["near_miss"] for t in test],
                           cfg.eval_batch_size)
    pos = verifier_scores(encoder, verifier, [t["anchor"] for t in test], [t["positive"] for t in test],
                          cfg.eval_batch_size)
    out = {}
    for fam in (*FAMILIES, "overall"):
        idx = [i for i, t in enumerate(test) if fam == "overall" or t["family"] == fam]
        if not idx:
            continue
        n, p = torch.tensor([near[i] for i in idx]), torch.tensor([pos[i] for i in idx])
        auc = metrics.roc_auc(torch.cat([p, n]), torch.cat([torch.ones(len(p)), torch.zeros(len(n))]))
        out[fam] = {"mean": float(n.mean()), "std": float(n.std(unbiased=False)), "positive_mean": float(p.mean()),
                    "auc": float(auc), "n": len(idx)}
        if fam != "overall":
            out[fam]["scores"] = {"near_miss": per_item(n), "positive": per_item(p)}
    return out
