"""Section 4: MNRL vs triplet loss vs cosine-similarity loss, each from the same backbone, on the same
(term, gloss, random negative) rows for the same steps and batch size, with retrieval measured along the way.

MNRL scores each query against the batch's positives and negatives (2B - 1 negatives); TripletLoss uses the
row's one negative; CosineSimilarityLoss regresses cos(term, gloss) to 1 and cos(term, negative) to 0 (each row
gives two pairs, so a batch holds B / 2 rows).

Each query's R@k is kept (per_item) after training and as its mean over the curve's points (the sample
efficiency of one query), for the claims' bootstrap; each loss's training record is the run's training "losses
<loss>" (ctx.record_training: the claims' gate reads it). Each loss's finished training is kept in the run's
cache (ctx.cached: its curve, per-query values and training record), so an interrupted unit resumes with the next
loss: every loss starts from the backbone and trains with the same seed, so the order and a resume do not change
any loss's result; the backbone's own retrieval is measured once for every seed."""

from __future__ import annotations

import random

from ...api.uncertainty import per_item
from ..spec import LOSSES

CURVE_MEAN = "(mean over the training curve)"


def run(ctx) -> dict:
    from ..evaluate import retrieval
    from ..mining import random_negatives, training_rows
    from ..models import load

    cfg, data = ctx.cfg, ctx.data
    negatives, _ = random_negatives(None, data.train, cfg, random.Random(ctx.seed))
    columns = training_rows(data.train, negatives, 1)
    begin = ctx.cached("start", lambda: dict(zip(("metrics", "per_query"), retrieval(load(ctx.backbone, cfg),
                                                                                       data.test, cfg))), shared=True)
    start = begin["metrics"]
    metrics, items, details = {}, {}, {"start": start, "curves": {}}
    key = f"R@{cfg.eval_k}"
    for loss in LOSSES:
        result = ctx.cached(f"train-{loss}", lambda loss=loss: _train_one(ctx, columns, loss))
        curve = [{"step": 0, "examples": 0, **start}] + result["curve"]
        ctx.record_training(f"losses {loss}", result["training"])
        details["curves"][loss] = curve
        metrics[f"{loss}/{key}"] = curve[-1][key]
        items[f"{loss}/{key}"] = per_item(result["per_query"][-1])
        # sample efficiency: the mean recall over the curve (area under it, start excluded), per query too
        metrics[f"{loss}/{key} {CURVE_MEAN}"] = round(sum(c[key] for c in curve[1:]) / (len(curve) - 1), 4)
        items[f"{loss}/{key} {CURVE_MEAN}"] = per_item([sum(v) / len(v) for v in zip(*result["per_query"])])
    metrics[f"start/{key}"] = start[key]
    items[f"start/{key}"] = per_item(begin["per_query"])
    return {"metrics": metrics, "per_item": items, "details": details}


def _train_one(ctx, columns, loss: str) -> dict:
    """Train a fresh backbone with `loss` for cfg.steps (in <run>/train-<loss>/); its retrieval curve (the last
    point at cfg.steps), each point's per-query R@k and the training record."""
    from ..evaluate import curve_callback, retrieval
    from ..models import fit, load

    cfg, test = ctx.cfg, ctx.data.test
    model = load(ctx.backbone, cfg)
    rows_per_step = cfg.batch_size // 2 if loss == "cosine" else cfg.batch_size
    curve = curve_callback(test, cfg, cfg.steps, rows_per_step)
    training = fit(model, columns, loss, cfg, ctx.dir / f"train-{loss}", seed=ctx.seed, callbacks=[curve],
                   progress=ctx.progress)
    points, per_query = list(curve.curve), list(curve.per_query)
    if not points or points[-1]["step"] != cfg.steps:
        values, last = retrieval(model, test, cfg)
        points.append({"step": cfg.steps, "examples": cfg.steps * rows_per_step, **values})
        per_query.append(last)
    return {"curve": points, "per_query": per_query, "training": training}
