"""Section 5: hard-negative mining rounds. From the same backbone, two chains of cfg.rounds MNRL trainings on
the same (term, gloss) pairs with train_negatives negatives per query:

    hard     round 1 on BM25 negatives, round 2 (and later) on negatives mined by the model round 1 trained
    random   every round on freshly drawn random negatives

Retrieval is measured after every round (the same steps per round in both chains). Finished rounds are kept
under <run>/<chain>/round<r>/ so that an interrupted unit resumes after its last finished round."""

from __future__ import annotations

CHAINS = {"hard": ("bm25", "model"), "random": ("random",)}
EXAMPLES = 3


def run(ctx) -> dict:
    from ..evaluate import retrieval_metrics
    from ..mining import mining_rounds
    from ..models import fit, load

    cfg, data = ctx.cfg, ctx.data
    key = f"R@{cfg.eval_k}"
    start = retrieval_metrics(load(ctx.backbone, cfg), data.test, cfg)
    metrics, details = {f"start/{key}": start[key]}, {"start": start, "chains": {}, "examples": {}}
    for chain, miners in CHAINS.items():
        def train_round(model, columns, r, chain=chain):
            return model, fit(model, columns, "mnrl", cfg, ctx.dir / chain / f"round{r + 1}" / "trainer",
                              seed=ctx.seed, progress=ctx.progress)

        records = mining_rounds(load(ctx.backbone, cfg), data.train, cfg, miners, train_round,
                                lambda m: retrieval_metrics(m, data.test, cfg), seed=ctx.seed,
                                rounds_dir=ctx.dir / chain, load_model=lambda folder: load(str(folder), cfg))
        for rec in records:
            metrics[f"{chain}/round{rec['round']}/{key}"] = rec["metrics"][key]
            details["examples"][f"{chain} round {rec['round']} ({rec['miner']})"] = [
                {"query": data.train.queries[q], "negatives": [data.train.corpus[i] for i in rec["negatives"][q]]}
                for q in range(min(EXAMPLES, len(data.train.queries)))]
            rec.pop("negatives")
        details["chains"][chain] = records
    return {"metrics": metrics, "details": details}
