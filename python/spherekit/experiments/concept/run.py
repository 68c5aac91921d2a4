"""`spherekit reproduce concept`: the data of a preset and one run of a condition (what the runner calls).

A run builds the condition's encoder on the backbone (models.build_model), trains it with the condition's
objective through the one training path unless it is frozen (B0, B0-WM), and evaluates it on every suite
(evaluate.evaluate), keeping the in-domain values per item for the claims' bootstraps. M3's per-layer heads are
dropped before the model is saved (they are training-only).
"""

from __future__ import annotations


def prepare(cfg, root, progress: bool):
    from ...training.trainer import distributed_world_size
    from .data import load_or_build

    return load_or_build(cfg, root, progress=progress, world=distributed_world_size())


def run_unit(ctx) -> dict:
    from ...models import load_backbone
    from ...training.trainer import train
    from .evaluate import LAYER_ITEM_CONDITIONS, evaluate
    from .models import build_loss, build_model, readout_module, training_swaps
    from .spec import split_condition

    setup, source_holdout = split_condition(ctx.condition.name)
    cfg, data = ctx.cfg, ctx.data

    def build_and_train(out_dir):
        model = build_model(load_backbone(ctx.backbone), setup, cfg)
        loss = build_loss(model, setup, cfg, data.k, source_holdout)
        dataset = data.dataset(training_swaps(setup, cfg), source_holdout)
        result = train(model, dataset, loss, cfg.train_config(ctx.seed), out_dir, progress=ctx.progress)
        readout = readout_module(model)
        if readout is not None and setup.deep_supervision:
            readout.drop_deep_supervision()  # per-layer heads are training-only
        return model, result

    if setup.trained:
        model = ctx.train_or_load(build_and_train)
    else:
        model = build_model(load_backbone(ctx.backbone), setup, cfg)
    with ctx.timed("eval"):
        metrics, details, items = evaluate(model, data, cfg, source_holdout=source_holdout, progress=ctx.progress,
                                           layer_items=ctx.condition.name in LAYER_ITEM_CONDITIONS)
    readout = readout_module(model)
    if readout is not None and readout.mode == "learned":
        details["layer_weights"] = _layer_weights(readout)
    elif readout is not None and readout.mode == "gated":
        details.update(_gate_mixes(model, data, cfg.eval_batch_size, source_holdout))
    return {"metrics": metrics, "details": details, "per_item": items}  # per_item: the claims' bootstraps


def _layer_weights(readout) -> list[float]:
    """The learned layer mixture (M1, M3), lowest layer first."""
    import torch

    return [round(float(x), 4) for x in torch.softmax(readout.w.detach().float(), 0)]


GATE_TEXTS = 1000  # test texts the per-input gate's mixes are read on


def _gate_mixes(model, data, batch_size: int, source_holdout: bool) -> dict:
    """M2's per-input gate alpha(x) on the first GATE_TEXTS distinct texts of the model's test split:
    layer_weights = mean_x alpha(x) (lowest layer first) and gate_moved = mean_x TV(alpha(x), uniform), the mean
    total-variation distance of each input's mix from the gate's start (a zero output layer: the uniform mix). A
    gate can keep a uniform mean while moving per input, so the claims read gate_moved, not the mean."""
    import torch

    from ...evaluation.evaluators.geometry import split_texts
    from .spec import SOURCE_HOLDOUT

    kind = SOURCE_HOLDOUT if source_holdout else "in-domain"
    texts = split_texts(data.eval_sets[kind].records)[0][:GATE_TEXTS]
    alpha = torch.stack(model.encode(texts, output_value="layer_weights", batch_size=batch_size,
                                     show_progress_bar=False)).float()
    moved = 0.5 * (alpha - 1.0 / alpha.shape[1]).abs().sum(1)
    return {"layer_weights": [round(float(x), 4) for x in alpha.mean(0)], "gate_moved": round(float(moved.mean()), 4),
            "gate_texts": len(texts)}
