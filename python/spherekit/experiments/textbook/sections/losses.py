"""Section 4: MNRL vs triplet loss vs cosine-similarity loss, each from the same backbone, on the same
(term, gloss, random negative) rows for the same steps and batch size, with retrieval measured along the way.

MNRL scores each query against the batch's positives and negatives (2B - 1 negatives); TripletLoss uses the
row's one negative; CosineSimilarityLoss regresses cos(term, gloss) to 1 and cos(term, negative) to 0 (each row
gives two pairs, so a batch holds B / 2 rows).

Each loss's finished training is kept in the run's cache (ctx.cached: its curve and training record), so an
interrupted unit resumes with the next loss: every loss starts from the backbone and trains with the same seed,
so the order and a resume do not change any loss's result."""

from __future__ import annotations

import random

from ..spec import LOSSES


def run(ctx) -> dict:
    from ..evaluate import retrieval_metrics
    from ..mining import random_negatives, training_rows
    from ..models import load

    cfg, data = ctx.cfg, ctx.data
    negatives, _ = random_negatives(None, data.train, cfg, random.Random(ctx.seed))
    columns = training_rows(data.train, negatives, 1)
    start = retrieval_metrics(load(ctx.backbone, cfg), data.test, cfg)
    metrics, details = {}, {"start": start, "curves": {}, "training": {}}
    key = f"R@{cfg.eval_k}"
    for loss in LOSSES:
        result = ctx.cached(f"train-{loss}", lambda loss=loss: _train_one(ctx, columns, loss))
        curve = [{"step": 0, "examples": 0, **start}] + result["curve"]
        details["training"][loss], details["curves"][loss] = result["training"], curve
        metrics[f"{loss}/{key}"] = curve[-1][key]
        # sample efficiency: the mean recall over the curve (area under it, start excluded)
        metrics[f"{loss}/{key} (mean over the training curve)"] = round(
            sum(c[key] for c in curve[1:]) / (len(curve) - 1), 4)
    metrics[f"start/{key}"] = start[key]
    return {"metrics": metrics, "details": details}


def _train_one(ctx, columns, loss: str) -> dict:
    """Train a fresh backbone with `loss` for cfg.steps (in <run>/train-<loss>/); its retrieval curve (the last
    point at cfg.steps) and training record."""
    from ..evaluate import curve_callback, retrieval_metrics
    from ..models import fit, load

    cfg, test = ctx.cfg, ctx.data.test
    model = load(ctx.backbone, cfg)
    rows_per_step = cfg.batch_size // 2 if loss == "cosine" else cfg.batch_size
    curve = curve_callback(test, cfg, cfg.steps, rows_per_step)
    training = fit(model, columns, loss, cfg, ctx.dir / f"train-{loss}", seed=ctx.seed, callbacks=[curve],
                   progress=ctx.progress)
    final = curve.curve[-1] if curve.curve and curve.curve[-1]["step"] == cfg.steps else \
        {"step": cfg.steps, **retrieval_metrics(model, test, cfg)}
    return {"curve": [c for c in curve.curve if c["step"] != final["step"]] + [final], "training": training}
