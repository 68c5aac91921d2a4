"""Section 3: CLS, mean and max pooling of the same backbone on the retrieval set, frozen and (pooling_steps > 0)
after the same short MNRL fine-tuning on (term, gloss) pairs."""

from __future__ import annotations

from ..spec import POOLINGS


def run(ctx) -> dict:
    from ..evaluate import retrieval_metrics
    from ..models import fit, load, with_pooling

    cfg, data, key = ctx.cfg, ctx.data, f"R@{ctx.cfg.eval_k}"
    metrics, details = {}, {"frozen": {}, "trained": {}, "training": {}}
    for mode in POOLINGS:
        model = with_pooling(load(ctx.backbone, cfg), mode)
        details["frozen"][mode] = retrieval_metrics(model, data.test, cfg)
        metrics[f"frozen/{mode}/{key}"] = details["frozen"][mode][key]
        if cfg.pooling_steps:
            columns = {"anchor": [a for a, _ in data.train_pairs], "positive": [p for _, p in data.train_pairs]}
            details["training"][mode] = fit(model, columns, "mnrl", cfg, ctx.dir / f"train-{mode}", seed=ctx.seed,
                                            steps=cfg.pooling_steps, progress=ctx.progress)
            details["trained"][mode] = retrieval_metrics(model, data.test, cfg)
            metrics[f"trained/{mode}/{key}"] = details["trained"][mode][key]
    return {"metrics": metrics, "details": details}
