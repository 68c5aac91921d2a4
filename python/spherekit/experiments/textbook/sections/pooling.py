"""Section 3: CLS, mean and max pooling of the same backbone on the retrieval set, frozen and (pooling_steps > 0)
after the same short MNRL fine-tuning on (term, gloss) pairs."""

from __future__ import annotations

from ..config import POOLINGS


def run(cfg, backbone: str, data, unit_dir, progress: bool) -> dict:
    from ..evaluate import retrieval_metrics
    from ..models import fit, load, with_pooling

    metrics, details = {}, {"frozen": {}, "trained": {}, "training": {}}
    for mode in POOLINGS:
        model = with_pooling(load(backbone, cfg), mode)
        details["frozen"][mode] = retrieval_metrics(model, data.test, cfg)
        metrics[f"frozen_{mode}_recall@{cfg.eval_k}"] = details["frozen"][mode][f"recall@{cfg.eval_k}"]
        if cfg.pooling_steps:
            columns = {"anchor": [a for a, _ in data.train_pairs], "positive": [p for _, p in data.train_pairs]}
            details["training"][mode] = fit(model, columns, "mnrl", cfg, unit_dir / f"train-{mode}",
                                            steps=cfg.pooling_steps, progress=progress)
            details["trained"][mode] = retrieval_metrics(model, data.test, cfg)
            metrics[f"trained_{mode}_recall@{cfg.eval_k}"] = details["trained"][mode][f"recall@{cfg.eval_k}"]
    return {"metrics": metrics, "details": details}
