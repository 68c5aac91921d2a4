"""Section 2: concentration of measure. Random unit vectors: the std of their pairwise cosines against 1/sqrt(d).
The backbone: the cosine distribution of random pairs of corpus passages (its mean is the anisotropy: 0 for
isotropic vectors) and, per query, the gap between its relevant passage and an irrelevant one (kept per query:
the claim's bootstrap resamples the queries)."""

from __future__ import annotations

import numpy as np
import torch

from ...api.uncertainty import per_item

BINS = np.linspace(-0.4, 1.0, 71)


def random_cosines(n: int, d: int, seed: int) -> np.ndarray:
    """Cosines of all pairs of n random unit vectors in R^d (Gaussian directions)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    iu = torch.triu_indices(n, n, offset=1)
    return (x @ x.T)[iu[0], iu[1]].numpy()


def cosine_std(n: int, d: int, seed: int = 0) -> float:
    return float(random_cosines(n, d, seed).std())


def _hist(x: np.ndarray) -> list[int]:
    return np.histogram(np.clip(x, BINS[0], BINS[-1]), BINS)[0].tolist()


def run(ctx) -> dict:
    from ..evaluate import embed
    from ..models import load

    cfg, data = ctx.cfg, ctx.data
    model = load(ctx.backbone, cfg)
    q, c = embed(model, data.test.queries, cfg).double(), embed(model, data.test.corpus, cfg).double()
    dim = int(c.shape[1])
    rows, hists = [], {}
    for d in sorted({*cfg.random_dims, dim}):
        cos = random_cosines(cfg.n_random_vectors, d, ctx.seed)
        rows.append({"d": d, "std": round(float(cos.std()), 5), "mean": round(float(cos.mean()), 5),
                     "expected": round(1 / np.sqrt(d), 5),
                     "relative_error": round(abs(float(cos.std()) * np.sqrt(d) - 1), 4)})
        hists[f"random d={d}"] = _hist(cos)
    rng = np.random.default_rng(ctx.seed)
    n = len(data.test.corpus)
    i, j = rng.integers(0, n, 20000), rng.integers(0, n, 20000)
    keep = i != j
    model_cos = (c[i[keep]] * c[j[keep]]).sum(1).numpy()
    hists[f"{ctx.backbone} passages"] = _hist(model_cos)
    sims = (q @ c.T).numpy()
    gaps_random, gaps_hardest, best_rel = [], [], []
    for qi, rel in enumerate(data.test.relevant):
        rel_ids = sorted(rel)
        best = sims[qi, rel_ids].max()
        mask = np.ones(n, bool)
        mask[rel_ids] = False
        others = sims[qi, mask]
        gaps_random.append(best - others[rng.integers(0, len(others))])
        gaps_hardest.append(best - others.max())
        best_rel.append(best)
    gaps_random, gaps_hardest = np.asarray(gaps_random), np.asarray(gaps_hardest)
    lo, hi = cfg.gap_range
    metrics = {
        "random vectors/cosine std (d=768)": next((r["std"] for r in rows if r["d"] == 768), None),
        "random vectors/relative error (max over d)": max(r["relative_error"] for r in rows),
        "dimension": dim, "passages/anisotropy": round(float(model_cos.mean()), 4),
        "passages/cosine std": round(float(model_cos.std()), 4), "isotropic/cosine std": round(1 / np.sqrt(dim), 4),
        "cosine gap (random irrelevant, median)": round(float(np.median(gaps_random)), 4),
        "share in gap range (random irrelevant)": round(float(((gaps_random >= lo) & (gaps_random <= hi)).mean()), 4),
        "cosine gap (hardest irrelevant, median)": round(float(np.median(gaps_hardest)), 4),
        "cosine (best relevant passage, median)": round(float(np.median(best_rel)), 4),
    }
    details = {"random": rows, "bins": BINS.round(3).tolist(), "histograms": hists,
               "gap_random_quantiles": np.quantile(gaps_random, [0.1, 0.25, 0.5, 0.75, 0.9]).round(4).tolist(),
               "gap_hardest_quantiles": np.quantile(gaps_hardest, [0.1, 0.25, 0.5, 0.75, 0.9]).round(4).tolist()}
    return {"metrics": metrics, "per_item": {"cosine gap (random irrelevant)": per_item(gaps_random)},
            "details": details}
