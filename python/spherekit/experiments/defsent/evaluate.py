"""Evaluation of a DefSent+ encoder: the offline proxies (spherekit.experiments.defsent.heldout) and, when the
paper's data is there, SentEval's STS, each under the three evaluation poolings (CLS, Mean, Prompt; sec. 3.2).

    wordnet-sim/<pos>/Spearman, wordnet-sim/avg/Spearman
                              Spearman x 100 of cos(gloss_i, gloss_j) against WordNet's path similarity (test anchors;
                              pos = noun, verb); dev/wordnet-sim/avg/Spearman the same on the dev anchors (chooses the
                              pooling and the best run)
    cross-dictionary/MRR, /Acc@1, /Acc@10
                              WordNet gloss -> GCIDE definitions of the same term: MRR and the share of queries with a
                              relevant definition in the top 1 / 10 (x 100)
    probe/<task>/Acc, probe/avg/Acc
                              logistic-regression probe accuracy (%), k-fold cross-validation (SentEval's default
                              protocol: 10 folds, linear classifier on frozen embeddings; scikit-learn's
                              LogisticRegression instead of SentEval's torch one)
    sts/<set>/Spearman, sts/avg/Spearman
                              Spearman x 100 of cosine per STS year on its concatenated subsets, STS-B, SICK-R
    reverse-dictionary/Acc@1, @10, @100
                              reverse dictionary (training path only): held-out definitions ranked over the bank (%)

Keys are "<metric> (<pooling>)" plus "<metric> (best)" for the pooling with the highest dev proxy. For the keys the
claims compare (the "(best)" proxies, STS and the reverse dictionary) a run also keeps one value per evaluation item
and the items' strata and gold (spherekit.experiments.defsent.noise: the claims' two-level bootstrap).

MRR and Acc@k are spherekit.evaluation.metrics' MRR over a ranking that puts a relevant candidate before the others
it ties with (reciprocal_ranks counts the candidates above it instead of sorting): a relevant item ranks below the
candidates that score strictly higher only, so entries that share a row of the bank (the word bank's accent
variants) tie instead of being ordered arbitrarily. With r the first relevant rank, MRR = mean 1 / r and
Acc@k = mean [r <= k] = mean [1 / r >= 1 / k] (the library's recall_at_k is the share of the relevant candidates
in the top k, not a hit when a query has several).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..api.uncertainty import per_item
from .bank import encode_pooled, encode_poolings
from .spec import CROSS_MRR, DEV_SIM, POOLINGS, PROBE, SIM, STS, pooled, reverse_dictionary_key

POS = {"n": "noun", "v": "verb"}


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return 100.0 * float(spearmanr(a, b).statistic)


def pair_cosines(emb: torch.Tensor, pairs) -> np.ndarray:
    """cos(emb[i], emb[j]) of every pair (i, j, gold)."""
    if not pairs:
        return np.zeros(0)
    e = F.normalize(emb, dim=1)
    i = torch.tensor([p[0] for p in pairs])
    j = torch.tensor([p[1] for p in pairs])
    return (e[i] * e[j]).sum(1).numpy()


def sim_scores(emb: torch.Tensor, pairs) -> float:
    """Spearman x 100 of the pairs' cosines against their gold (NaN with fewer than 3 pairs or a constant gold)."""
    if len(pairs) < 3 or len({p[2] for p in pairs}) < 2:
        return float("nan")
    return _spearman(pair_cosines(emb, pairs), [p[2] for p in pairs])


def _nanmean(values) -> float:
    values = [v for v in values if not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")


def retrieval(queries: torch.Tensor, corpus: torch.Tensor, relevant) -> dict:
    """MRR and Acc@1/10 (x 100) of cosine retrieval; relevant[q] = corpus ids relevant to query q."""
    return retrieval_items(queries, corpus, relevant)[0]


def reciprocal_ranks(scores: torch.Tensor, relevant, depth: int | None = None) -> np.ndarray:
    """Each query's 1 / r, r its first relevant rank with a relevant candidate before the candidates it ties with:

        r = 1 + #{j not relevant : s_j > max_{i relevant} s_i}

    (0 when r > depth; a NaN score ranks last). One comparison per score, no sort: the same numbers as
    spherekit.evaluation.metrics.mrr over that ranking."""
    if len(relevant) != len(scores):
        raise ValueError(f"relevant must have one entry per row of scores: {len(scores)}, got {len(relevant)}")
    mask = torch.zeros(scores.shape, dtype=torch.bool)
    for q, ids in enumerate(relevant):
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError(f"relevant[{q}] is empty; every query needs at least one relevant id")
        if min(ids) < 0 or max(ids) >= scores.shape[1]:
            raise ValueError(f"relevant[{q}] holds ids outside [0, {scores.shape[1]}) (the candidates): {ids}")
        mask[q, ids] = True
    s = torch.nan_to_num(scores, nan=float("-inf"))
    best = s.masked_fill(~mask, float("-inf")).amax(dim=1, keepdim=True)
    rank = 1 + ((s > best) & ~mask).sum(dim=1)
    recip = 1.0 / rank.to(torch.float64)
    return (recip if depth is None else torch.where(rank <= depth, recip, torch.zeros((), dtype=recip.dtype))).numpy()


def retrieval_items(queries: torch.Tensor, corpus: torch.Tensor, relevant) -> tuple[dict, np.ndarray]:
    """(retrieval's metrics, each query's reciprocal rank x 100)."""
    rr = reciprocal_ranks(F.normalize(queries, dim=1) @ F.normalize(corpus, dim=1).T, relevant)
    return ({CROSS_MRR: 100 * float(rr.mean()), "cross-dictionary/Acc@1": 100 * float((rr >= 1).mean()),
             "cross-dictionary/Acc@10": 100 * float((rr >= 1 / 10).mean())}, 100 * rr)


def probe_accuracy(emb: torch.Tensor, labels, folds: int, seed: int = 1111) -> float:
    return probe_items(emb, labels, folds, seed)[0]


def probe_items(emb: torch.Tensor, labels, folds: int, seed: int = 1111) -> tuple[float, np.ndarray]:
    """(the mean over folds of the held-out fold's accuracy %, each sentence's correctness x 100 when held out):
    k-fold cross-validation of a logistic regression (each sentence is held out once)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    x, y = emb.numpy(), np.asarray(labels)
    _, counts = np.unique(y, return_counts=True)
    k = max(2, min(folds, int(counts.min())))
    correct, fold_acc = np.zeros(len(y)), []
    for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y):
        hit = LogisticRegression(max_iter=2000).fit(x[train], y[train]).predict(x[test]) == y[test]
        correct[test] = 100.0 * hit
        fold_acc.append(100.0 * float(hit.mean()))
    return float(np.mean(fold_acc)), correct


def reverse_dictionary(vectors: torch.Tensor, targets, bank: torch.Tensor, ks=(1, 10, 100)) -> dict:
    """Acc@k (%) of ranking bank rows by raw dot product (eq. 1's score) for each vector; chunked over queries."""
    return reverse_dictionary_items(vectors, targets, bank, ks)[0]


def reverse_dictionary_items(vectors: torch.Tensor, targets, bank: torch.Tensor, ks=(1, 10, 100)):
    """(reverse_dictionary's metrics, {key: each definition's hit x 100}, items metadata)."""
    from .noise import item_meta

    rr, targets = [], [int(t) for t in targets]
    for start in range(0, len(targets), 16):
        rr.append(reciprocal_ranks(vectors[start:start + 16] @ bank.T, [[t] for t in targets[start:start + 16]],
                                   max(ks)))
    rr = np.concatenate(rr)
    hits = {reverse_dictionary_key(k): 100.0 * (rr >= 1 / k) for k in ks}
    meta = item_meta("mean", [["definitions", len(rr)]])
    return ({k: float(v.mean()) for k, v in hits.items()}, {k: per_item(v) for k, v in hits.items()},
            {k: meta for k in hits})


def evaluate_pooling(model, held, pooling: str, cfg, sts=None) -> dict:
    return evaluate_pooling_items(model, held, pooling, cfg, sts)[0]


class SharedPass:
    """embed(texts, pooling) for the evaluation: "cls" and "mean" of a text set come from one forward pass
    (bank.encode_poolings), so the three evaluation poolings cost two passes, not three."""

    def __init__(self, model, cfg):
        self.model, self.cache = model, {}
        self.enc = dict(batch_size=cfg.encode_batch_size, max_length=cfg.max_seq_length, template=cfg.prompt)

    def __call__(self, texts, pooling: str) -> torch.Tensor:
        key = tuple(texts)
        if (key, pooling) not in self.cache:
            together = ("cls", "mean") if pooling in ("cls", "mean") else (pooling,)
            for p, emb in encode_poolings(self.model, key, together, **self.enc).items():
                self.cache[(key, p)] = emb
        return self.cache.pop((key, pooling))


def evaluate_pooling_items(model, held, pooling: str, cfg, sts=None, embed=None) -> tuple[dict, dict, dict]:
    """(metrics, {key: per-item values}, {key: items metadata}) of one evaluation pooling (the per-item keys: SIM,
    CROSS_MRR, PROBE, STS). embed(texts, pooling): the encoder (default: encode_pooled; evaluate_encoder passes a
    SharedPass)."""
    from .noise import item_meta

    if embed is None:
        def embed(texts, pooling):
            return encode_pooled(model, texts, pooling=pooling, batch_size=cfg.encode_batch_size,
                                 max_length=cfg.max_seq_length, template=cfg.prompt)
    out, dev, values, meta = {}, [], {}, {}
    sim_cos, sim_gold, sim_strata = [], [], []
    for pos, s in held.sim.items():
        emb = embed(s["texts"], pooling)
        out[f"wordnet-sim/{POS[pos]}/Spearman"] = sim_scores(emb, s["test"])
        dev.append(sim_scores(emb, s["dev"]))
        sim_cos.append(pair_cosines(emb, s["test"]))
        sim_gold += [p[2] for p in s["test"]]
        sim_strata.append([POS[pos], len(s["test"])])
    out[SIM] = _nanmean([out[f"wordnet-sim/{POS[p]}/Spearman"] for p in held.sim])
    out[DEV_SIM] = _nanmean(dev)
    if sim_strata:
        values[SIM], meta[SIM] = np.concatenate(sim_cos), item_meta("spearman", sim_strata, sim_gold)
    c = held.crossdict
    metrics, rr = retrieval_items(embed(c["queries"], pooling), embed(c["corpus"], pooling), c["relevant"])
    out.update(metrics)
    values[CROSS_MRR], meta[CROSS_MRR] = rr, item_meta("mean", [["queries", len(rr)]])
    probe_correct, probe_strata = [], []
    for task, (texts, labels) in held.probes.items():
        out[f"probe/{task}/Acc"], correct = probe_items(embed(texts, pooling), labels, cfg.probe_folds)
        probe_correct.append(correct)
        probe_strata.append([task, len(correct)])
    out[PROBE] = _nanmean([out[f"probe/{t}/Acc"] for t in held.probes])
    if probe_strata:
        values[PROBE], meta[PROBE] = np.concatenate(probe_correct), item_meta("mean", probe_strata)
    if sts:
        sts_cos, sts_gold, sts_strata = [], [], []
        for name, (s1, s2, gold) in sts.items():
            a, b = embed(s1, pooling), embed(s2, pooling)
            cos = F.cosine_similarity(a, b).numpy()
            out[f"sts/{name}/Spearman"] = _spearman(cos, gold)
            sts_cos.append(cos)
            sts_gold += list(gold)
            sts_strata.append([name, len(gold)])
        out[STS] = _nanmean([out[f"sts/{n}/Spearman"] for n in sts])
        values[STS], meta[STS] = np.concatenate(sts_cos), item_meta("spearman", sts_strata, sts_gold)
    return out, values, meta


def evaluate_encoder(model, held, cfg, sts=None) -> tuple[dict, str, dict, dict]:
    """({"<metric> (<pooling>)": value, ..., "<metric> (best)": ...}, the pooling with the best dev proxy, and the
    best pooling's per-item values and items metadata under the "(best)" keys)."""
    embed = SharedPass(model, cfg)
    per = {p: evaluate_pooling_items(model, held, p, cfg, sts, embed) for p in POOLINGS}
    best = max(POOLINGS, key=lambda p: np.nan_to_num(per[p][0][DEV_SIM], nan=-np.inf))
    flat = {pooled(k, p): v for p, (m, _, _) in per.items() for k, v in m.items()}
    flat.update({pooled(k): v for k, v in per[best][0].items()})
    _, values, meta = per[best]
    return flat, best, {pooled(k): per_item(v) for k, v in values.items()}, {pooled(k): m for k, m in meta.items()}


def find_sts(data_dir) -> dict | None:
    """{"STS12".."STS16", "STS-B", "SICK-R": (sentences1, sentences2, gold)} from SentEval's layout under data_dir
    (<dir>/[data/]downstream/STS/STS1x-en-test/, STS/STSBenchmark/sts-test.csv, SICK/SICK_test_annotated.txt);
    each year's subsets concatenated (the paper's "all" setting). None when no STS folder is found."""
    from pathlib import Path

    from ...data.datasets.sick import load_sick
    from ...data.datasets.sts import load_sts
    from ...data.datasets.stsb import load_stsb

    if data_dir is None:
        return None
    roots = [Path(data_dir) / p for p in ("data/downstream", "downstream", ".")]
    root = next((r for r in roots if (r / "STS").is_dir()), None)
    if root is None:
        return None
    out = {}
    for year in (12, 13, 14, 15, 16):
        folder = root / "STS" / f"STS{year}-en-test"
        if folder.is_dir():
            pairs = [p for subset in load_sts(folder, year).values() for p in subset]
            out[f"STS{year}"] = pairs
    if (root / "STS" / "STSBenchmark" / "sts-test.csv").is_file():
        out["STS-B"] = load_stsb(root / "STS" / "STSBenchmark" / "sts-test.csv")
    if (root / "SICK" / "SICK_test_annotated.txt").is_file():
        out["SICK-R"] = load_sick(root / "SICK" / "SICK_test_annotated.txt")
    columns = {k: ([p.sentence1 for p in v], [p.sentence2 for p in v], [p.score for p in v]) for k, v in out.items()}
    return columns or None
