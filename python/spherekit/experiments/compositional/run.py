"""`spherekit reproduce compositional`: the data of a preset and one run of a condition (what the runner calls).

A run is (backbone, condition, seed): base evaluates the untuned backbone; model_a / model_b train the encoder on
their rows (the same steps: cfg.steps, or the released code's table for the backbone's size); <regime>_<F> trains
verifier F (frozen or end to end) and re-ranks with it. Its metrics are the retrieval means over the suite's sets
(for a verifier also those of its stage 1 alone, "stage-1/<metric>"); its per-query values ("per_item") feed the
claims' two-level bootstrap; its extras are the per-set numbers, Figure 1's cosines (base, A, B) or Figure 3's
verifier scores (verifiers), per pair; its trainings go through ctx.record_training into the run's "training":
"encoder" (Model A / B) or "verifier" (models.py says what each record holds). Trained models are not kept (the
card is about the measurements): a re-evaluation retrains.
"""

from __future__ import annotations

from ..api.learning import ENCODER

VERIFIER = "verifier"  # the name of a verifier run's training record (ENCODER: Model A / B's)


def prepare(cfg, root, progress: bool):
    from .data import load_data

    return load_data(cfg, root)


def run_unit(ctx) -> dict:
    import torch

    from . import evaluate, models
    from .spec import verifier_of

    cfg, data, cond, seed = ctx.cfg, ctx.data, ctx.condition.name, ctx.seed
    torch.manual_seed(seed)
    encoder = models.load(ctx.backbone, cfg)
    extras: dict = {}
    if cond in ("model_a", "model_b"):
        rows = data.train_a if cond == "model_a" else data.train_b
        with ctx.timed("train"):
            ctx.record_training(ENCODER, models.train_encoder(encoder, rows, models.encoder_steps(encoder, cfg), cfg,
                                                              seed, ctx.dir, progress=ctx.progress))
    if cond in ("base", "model_a", "model_b"):
        with ctx.timed("eval"):
            retrieval = evaluate.retrieval(encoder, data.suite, cfg, untuned=ctx.backbone if cond == "base" else None)
            extras["figure1"] = evaluate.figure1(encoder, data, cfg)
    else:
        regime, name = ctx.condition.params["regime"], verifier_of(cond)
        verifier = models.build(name, cfg, encoder.get_embedding_dimension())
        with ctx.timed("train"):
            ctx.record_training(VERIFIER, models.train_verifier_run(encoder, ctx.backbone, verifier, regime, name,
                                                                    data.train_b, cfg, seed, progress=ctx.progress))
        verifier.eval()
        with ctx.timed("eval"):
            retrieval = evaluate.retrieval(encoder, data.suite, cfg, verifier,
                                           untuned=ctx.backbone if regime == "frozen" else None)
            extras["figure3"] = evaluate.figure3(encoder, verifier, data, cfg)
        extras["parameters"] = sum(p.numel() for p in verifier.parameters())
    metrics, per_item = retrieval.pop("mean"), retrieval.pop("per_item")
    first = retrieval.pop(evaluate.STAGE1, None)
    if first:
        stage1 = f"{evaluate.STAGE1}/"
        metrics.update({stage1 + m: v for m, v in first["mean"].items()})
        per_item.update({stage1 + m: v for m, v in first["per_item"].items()})
        retrieval[evaluate.STAGE1] = {"sets": first["sets"]}
    return {"metrics": metrics, "per_item": per_item, "retrieval": retrieval, **extras}
