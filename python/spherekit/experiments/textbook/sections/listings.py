"""Section 1: the chapter's listings run as printed on the backbone (listing 2 needs BAAI/bge-m3 on CUDA, which
is not available offline, and is skipped), and listing 1's point measured on a set: for every WordNet sentence of
the near-miss set (spherekit.data.nearmiss, built with cfg.data_seed) that has a one-word synonym paraphrase, the
gap cos(sentence, paraphrase) - cos(sentence, an unrelated sentence of the set), the unrelated partner drawn by a
seeded derangement (one cycle through the sentences, so none is its own partner). The gaps are kept per item
(per_item) for the claim's bootstrap."""

from __future__ import annotations

import dataclasses
import random
from itertools import combinations

import numpy as np
import torch
import torch.nn.functional as F

from ..chapter import CORPUS, POSITIVES, QUERIES, SENTENCES


def multiple_negatives_ranking_loss(query_emb, passage_emb, temperature=0.05):
    """Listing 3, verbatim: cross-entropy over query x passage similarities / temperature, diagonal positives."""
    similarity = torch.matmul(query_emb, passage_emb.T) / temperature
    labels = torch.arange(similarity.size(0), device=similarity.device)
    return F.cross_entropy(similarity, labels)


def chapter_mine_hard_negatives(model, queries, corpus, positives_map, top_k=30, num_negatives=5):
    """Listing 4, verbatim: the top_k most similar passages of each query, labelled positives dropped, the first
    num_negatives kept."""
    query_embs = model.encode(list(queries), normalize_embeddings=True)
    corpus_embs = model.encode(list(corpus), normalize_embeddings=True)
    hard_negatives = {}
    for q_idx, q_emb in enumerate(query_embs):
        sims = corpus_embs @ q_emb
        top_indices = np.argsort(sims)[::-1][:top_k]
        positives = positives_map.get(q_idx, set())
        neg_indices = [int(i) for i in top_indices if int(i) not in positives]
        hard_negatives[q_idx] = neg_indices[:num_negatives]
    return hard_negatives


def _spherekit_mnrl(model, q, p, temperature: float) -> float:
    from ....losses import MultipleNegativesRankingLoss

    loss = MultipleNegativesRankingLoss(model, scale=1.0 / temperature)
    return float(loss.compute_loss_from_embeddings([q, p], None))


PARAPHRASE_GAPS = "paraphrases/cosine gap (paraphrase - unrelated)"  # per_item key


def paraphrase_gaps(model, near, seed: int) -> tuple[dict, list[float]]:
    """Listing 1 on a set: metrics and the per-sentence gaps cos(s, paraphrase) - cos(s, unrelated) over the
    near-miss items' distinct anchors with a synonym paraphrase (module docstring)."""
    pairs = dict.fromkeys((x.anchor, x.positive) for x in (*near.train, *near.test) if x.positive_kind == "synonym")
    anchors, paraphrases = [a for a, _ in pairs], [p for _, p in pairs]
    if len(anchors) < 2:
        raise ValueError(f"listing 1 on a set needs at least 2 sentences with a synonym paraphrase, the near-miss "
                         f"set has {len(anchors)}: raise nearmiss_per_family")
    order = np.random.default_rng(seed).permutation(len(anchors))
    partner = np.empty_like(order)
    partner[order] = np.roll(order, -1)  # one cycle: a derangement
    a, p = (torch.from_numpy(np.asarray(model.encode(t, normalize_embeddings=True))) for t in (anchors, paraphrases))
    para, unrel = (a * p).sum(1), (a * a[torch.from_numpy(partner)]).sum(1)
    gaps = (para - unrel).tolist()
    metrics = {"paraphrases/count": len(anchors), "paraphrases/cosine (paraphrase, mean)": round(float(para.mean()), 4),
               "paraphrases/cosine (unrelated, mean)": round(float(unrel.mean()), 4),
               "paraphrases/cosine gap (mean)": round(float(np.mean(gaps)), 4)}
    return metrics, gaps


def run(ctx) -> dict:
    from ....data.nearmiss import build_nearmiss
    from ...api.uncertainty import per_item
    from ..data import Retrieval
    from ..mining import model_negatives
    from ..models import load

    cfg = ctx.cfg
    model = load(ctx.backbone, cfg)

    # listing 1
    emb = model.encode(list(SENTENCES), normalize_embeddings=True)
    sim = emb @ emb.T
    pairs = {f"{i}-{j}": round(float(sim[i, j]), 4) for i, j in combinations(range(len(SENTENCES)), 2)}
    # listing 3 on the chapter's random example and on real embeddings (queries vs their first positives)
    torch.manual_seed(ctx.seed)
    q = F.normalize(torch.randn(cfg.listing_batch, cfg.listing_dim), dim=-1)
    p = F.normalize(torch.randn(cfg.listing_batch, cfg.listing_dim), dim=-1)
    rq = torch.from_numpy(np.asarray(model.encode(list(QUERIES), normalize_embeddings=True)))
    rp = torch.from_numpy(np.asarray(model.encode([CORPUS[min(POSITIVES[i])] for i in range(len(QUERIES))],
                                                  normalize_embeddings=True)))
    mnrl = {}
    for name, (a, b) in {"random": (q, p), "real": (rq, rp)}.items():
        chapter = float(multiple_negatives_ranking_loss(a, b, cfg.listing_temperature))
        ours = _spherekit_mnrl(model, a, b, cfg.listing_temperature)
        mnrl[name] = {"chapter": round(chapter, 6), "spherekit": round(ours, 6), "abs_diff": abs(chapter - ours)}
    # listing 4, and sentence-transformers' mine_hard_negatives on the same example
    chapter_negs = chapter_mine_hard_negatives(model, QUERIES, CORPUS, POSITIVES, cfg.top_k, cfg.num_negatives)
    example = Retrieval(list(QUERIES), list(CORPUS), [POSITIVES[i] for i in range(len(QUERIES))])
    st_negs, _ = model_negatives(model, example, dataclasses.replace(cfg, mining_margin=0.0),  # the listing's rule
                                 random.Random(ctx.seed))
    qe, ce = (model.encode(list(texts), normalize_embeddings=True) for texts in (QUERIES, CORPUS))
    near = build_nearmiss(n_per_family=cfg.nearmiss_per_family, seed=cfg.data_seed,
                          cache=ctx.data.root / "data" / "nearmiss")
    set_metrics, gaps = paraphrase_gaps(model, near, cfg.data_seed)
    metrics = {
        "dimension": int(emb.shape[1]),
        "listing1/cosine (paraphrase)": pairs["0-1"],
        "listing1/cosine (closest unrelated pair)": round(max(pairs["0-2"], pairs["1-2"]), 4),
        "listing3/max abs diff (chapter vs spherekit MNRL)": max(v["abs_diff"] for v in mnrl.values()),
        "listing3/loss (random example)": mnrl["random"]["chapter"],
        "listing4/positives returned": sum(len(set(chapter_negs[i]) & POSITIVES[i]) for i in chapter_negs),
        "listing4/agrees (sentence-transformers mine_hard_negatives)": all(chapter_negs[i] == st_negs[i]
                                                                            for i in chapter_negs),
        **set_metrics,
    }
    details = {"similarities": pairs, "sentences": list(SENTENCES), "mnrl": mnrl,
               "chapter_negatives": {str(k): v for k, v in chapter_negs.items()},
               "st_negatives": {str(i): v for i, v in enumerate(st_negs)},
               "corpus_similarities": (ce @ qe.T).T.round(4).tolist()}
    return {"metrics": metrics, "per_item": {PARAPHRASE_GAPS: per_item(gaps)}, "details": details}
