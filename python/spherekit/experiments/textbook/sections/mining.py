"""Section 5: hard-negative mining rounds. From the same backbone, two chains of cfg.rounds MNRL trainings on
the same (query, gloss) pairs with train_negatives negatives per query:

    hard     round 1 on BM25 negatives, round 2 (and later) on negatives mined by the model round 1 trained
             (sentence-transformers' mine_hard_negatives with the false-negative margin cfg.mining_margin)
    random   every round on freshly drawn random negatives

The queries are cfg.mining_queries: WordNet example sentences (multi-word: BM25 has words to match, so its
negatives are BM25's own rather than random top-ups) or masked terms (the earlier setting). Retrieval is
measured after every round on the held-out queries of the same kind (the same steps per round in both chains),
with each query's R@k kept for the claims' bootstrap, and each round's training record kept as the run's training
"mining <chain> round <r>" (ctx.record_training: the claims' gate reads it). With cfg.reshuffle_rounds each round
draws its own batch order (seed + 1000 x round), so a later round trains on rows round 1 did not see. Finished
rounds are kept under <run>/<chain>/round<r>/ so that an interrupted unit resumes after its last finished round."""

from __future__ import annotations

from ...api.uncertainty import per_item

CHAINS = {"hard": ("bm25", "model"), "random": ("random",)}
EXAMPLES = 3
ROUND_SEED = 1000


def round_seed(cfg, seed: int, r: int) -> int:
    """The training seed of round r (0-based): its own batch order with reshuffle_rounds, else the run's seed."""
    return seed + ROUND_SEED * r if cfg.reshuffle_rounds else seed


def run(ctx) -> dict:
    from ..evaluate import retrieval
    from ..mining import mining_rounds
    from ..models import fit, load

    cfg = ctx.cfg
    train, test = ctx.data.mining_sets(cfg.mining_queries)
    key = f"R@{cfg.eval_k}"
    start = ctx.cached("start", lambda: dict(zip(("metrics", "per_query"), retrieval(load(ctx.backbone, cfg), test,
                                                                                       cfg))), shared=True)
    metrics = {f"start/{key}": start["metrics"][key], "count (test queries)": len(test.queries)}
    items = {f"start/{key}": per_item(start["per_query"])}
    details = {"queries": cfg.mining_queries, "start": start["metrics"], "chains": {}, "examples": {}}
    for chain, miners in CHAINS.items():
        def train_round(model, columns, r, chain=chain):
            return model, fit(model, columns, "mnrl", cfg, ctx.dir / chain / f"round{r + 1}" / "trainer",
                              seed=round_seed(cfg, ctx.seed, r), progress=ctx.progress)

        def evaluate(model):
            values, per_query = retrieval(model, test, cfg)
            return {**values, "per_query": per_query}

        records = mining_rounds(load(ctx.backbone, cfg), train, cfg, miners, train_round, evaluate, seed=ctx.seed,
                                rounds_dir=ctx.dir / chain, load_model=lambda folder: load(str(folder), cfg))
        for rec in records:
            metrics[f"{chain}/round{rec['round']}/{key}"] = rec["metrics"][key]
            items[f"{chain}/round{rec['round']}/{key}"] = per_item(rec["metrics"].pop("per_query"))
            details["examples"][f"{chain} round {rec['round']} ({rec['miner']})"] = [
                {"query": train.queries[q], "negatives": [train.corpus[i] for i in rec["negatives"][q]]}
                for q in range(min(EXAMPLES, len(train.queries)))]
            rec.pop("negatives")
            ctx.record_training(f"mining {chain} round {rec['round']}", rec.pop("training"))
        details["chains"][chain] = records
    return {"metrics": metrics, "per_item": items, "details": details}
