"""Section 7: approximate search. The backbone embeds ann_corpus glosses and ann_queries terms; faiss IVF-Flat
(nprobe swept) and HNSW-Flat (efSearch swept) are compared with exact inner-product search (IndexFlatIP) on
recall@k against the exact top-k, the speed-up in query time (best of 3, one faiss thread) and the fraction of
the corpus whose distance was computed (faiss' own counters). Each query's recall at every setting is kept
(per_item, "<method>/R@<k> (exact neighbours, <param> <value>)") for the claim's bootstrap over queries."""

from __future__ import annotations

import math
import time

import numpy as np

from ...api.uncertainty import per_item

REPEATS = 3
PARAMS = {"ivf": "nprobe", "hnsw": "efSearch"}


def _timed(index, q: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    best, ids = math.inf, None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        _, ids = index.search(q, k)
        best = min(best, time.perf_counter() - t0)
    return ids, best


def query_recalls(found: np.ndarray, exact: np.ndarray) -> list[float]:
    """Per query |found ∩ exact| / k (exact: the true top-k ids; found's -1 padding never counts): Recall@k of
    spherekit.evaluation.metrics with the exact neighbours as the relevant set."""
    from ....evaluation.metrics import recall_at_k

    return recall_at_k(found, [set(map(int, e)) for e in exact], found.shape[1], reduction="none").tolist()


def setting_key(method: str, value: int, k: int) -> str:
    """The per_item key of one setting's per-query recall."""
    return f"{method}/R@{k} (exact neighbours, {PARAMS[method]} {value})"


def sweep(corpus: np.ndarray, queries: np.ndarray, cfg) -> dict:
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        n, d = corpus.shape
        k = min(cfg.ann_k, n)
        flat = faiss.IndexFlatIP(d)
        flat.add(corpus)
        exact, t_exact = _timed(flat, queries, k)
        nlist = cfg.ivf_nlist or max(1, int(4 * math.sqrt(n)))
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.train(corpus)
        ivf.add(corpus)
        hnsw = faiss.IndexHNSWFlat(d, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        hnsw.add(corpus)
        rows = []
        for method, index, values, set_param, stats in (
                ("ivf", ivf, cfg.ivf_nprobe, lambda v: setattr(ivf, "nprobe", min(v, nlist)),
                 faiss.cvar.indexIVF_stats),
                ("hnsw", hnsw, cfg.hnsw_ef, lambda v: setattr(hnsw.hnsw, "efSearch", v), faiss.cvar.hnsw_stats)):
            for v in values:
                set_param(v)
                stats.reset()
                ids, t = _timed(index, queries, k)
                visited = stats.ndis / (REPEATS * len(queries) * n)
                per_query = query_recalls(ids, exact)
                rows.append({"method": method, "param": int(v), "recall": round(float(np.mean(per_query)), 4),
                             "seconds": t, "speedup": round(t_exact / t, 2), "fraction_scanned": round(visited, 4),
                             "per_query": per_query})
        return {"rows": rows, "exact_seconds": t_exact, "nlist": nlist, "n": n, "queries": len(queries), "k": k}
    finally:
        faiss.omp_set_num_threads(threads)


def run(ctx) -> dict:
    from ..evaluate import embed
    from ..models import load

    cfg, data = ctx.cfg, ctx.data
    model = load(ctx.backbone, cfg)
    corpus = embed(model, data.ann_corpus, cfg).float().contiguous().numpy()
    queries = embed(model, data.ann_queries, cfg).float().contiguous().numpy()
    result = sweep(corpus, queries, cfg)
    items = {setting_key(r["method"], r["param"], result["k"]): per_item(r.pop("per_query"), 4) for r in result["rows"]}
    metrics = {"count (corpus)": result["n"]}
    for method, param in PARAMS.items():
        rows = [r for r in result["rows"] if r["method"] == method]
        ok = [r for r in rows if r["recall"] >= cfg.target_recall]
        best = max(ok, key=lambda r: r["speedup"]) if ok else None
        at = "(fastest setting at the target recall)"
        metrics[f"{method}/R@{result['k']} (exact neighbours, best setting)"] = max(r["recall"] for r in rows)
        metrics[f"{method}/{param} {at}"] = None if best is None else best["param"]
        metrics[f"{method}/speed-up {at}"] = None if best is None else best["speedup"]
        metrics[f"{method}/share scanned {at}"] = None if best is None else best["fraction_scanned"]
    return {"metrics": metrics, "per_item": items, "details": result}
