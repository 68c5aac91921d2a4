"""Section 3: CLS, mean and max pooling of the same backbone on the retrieval set, frozen and (pooling_steps > 0)
after the same short MNRL fine-tuning on (term, gloss) pairs, each fine-tuning's record kept as the run's
training "pooling <mode>" (ctx.record_training: the claims' gate reads it). Each query's R@k is kept (per_item) for
the claims' bootstrap; the frozen measurements do not depend on the seed and are made once for every seed."""

from __future__ import annotations

from ...api.uncertainty import per_item
from ..spec import POOLINGS


def run(ctx) -> dict:
    from ..evaluate import retrieval
    from ..models import fit, load, with_pooling

    cfg, data, key = ctx.cfg, ctx.data, f"R@{ctx.cfg.eval_k}"
    metrics, items, details = {}, {}, {"frozen": {}, "trained": {}}

    def frozen(mode):
        values, per_query = retrieval(with_pooling(load(ctx.backbone, cfg), mode), data.test, cfg)
        return {"metrics": values, "per_query": per_query}

    for mode in POOLINGS:
        measured = ctx.cached(f"frozen-{mode}", lambda mode=mode: frozen(mode), shared=True)
        details["frozen"][mode] = measured["metrics"]
        metrics[f"frozen/{mode}/{key}"] = measured["metrics"][key]
        items[f"frozen/{mode}/{key}"] = per_item(measured["per_query"])
        if cfg.pooling_steps:
            model = with_pooling(load(ctx.backbone, cfg), mode)
            columns = {"anchor": [a for a, _ in data.train_pairs], "positive": [p for _, p in data.train_pairs]}
            ctx.record_training(f"pooling {mode}", fit(model, columns, "mnrl", cfg, ctx.dir / f"train-{mode}",
                                                       seed=ctx.seed, steps=cfg.pooling_steps, progress=ctx.progress))
            details["trained"][mode], per_query = retrieval(model, data.test, cfg)
            metrics[f"trained/{mode}/{key}"] = details["trained"][mode][key]
            items[f"trained/{mode}/{key}"] = per_item(per_query)
    return {"metrics": metrics, "per_item": items, "details": details}
