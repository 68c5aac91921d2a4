"""`spherekit reproduce circumplex`: the data of a preset and one run of a condition (what the runner calls).

A run builds the encoder (backbone + GPT/nGPT head pooled and masked per backbone as the paper's Table 3 and appendix
B say, or for Pretrained the backbone's states pooled the same way without a head), trains it with the run's loss
through the one training path (spherekit.training.trainer.train, its record under the run's "training"; nGPT weights
renormalised after every step) and embeds the test texts to measure V-measure, CD-r, the label x label cosine matrix,
PCA explained variance, the PCA-dimension sweep and 2-D PCA / MDS projections (measure.py), and keeps per test text
what the claims' bootstrap needs (the run's "per_item", noise.py). The Pretrained run also measures the backbone's own
sentence embedding ("backbone pooling/...").
Frozen runs train on cached backbone token states (cache.py): the backbone runs once per text for the whole grid
(the caches are shared by the runs of one process through data.caches, and on disk under <preset>/data/token_states),
not on every step of every run.
"""

from __future__ import annotations

STATES = "token_states"


def prepare(cfg, root, progress: bool):
    from .data import load_data

    return load_data(cfg)


def run_unit(ctx) -> dict:
    from ...models import load_backbone
    from .measure import evaluate_second, evaluate_unit
    from .models import build_model, pooling_of, resolve_causal, resolve_pooling
    from ..api.uncertainty import PER_ITEM
    from .noise import OWN
    from .spec import PRETRAINED

    cfg, data, run = ctx.cfg, ctx.data, ctx.condition.params
    labels = None
    if run.labels:
        from .evaluate import label_count_subsets

        labels = label_count_subsets(data.angles, (run.labels,))[run.labels]
    train_items, test_items, order = data.subset(labels)

    def backbone():
        model = load_backbone(ctx.backbone)
        model.max_seq_length = min(cfg.max_seq_length, model.max_seq_length or cfg.max_seq_length)
        return model

    def settings(first) -> dict:  # the head's pooling and mask on this backbone
        return {"pooling": resolve_pooling(cfg.pooling, first), "causal": resolve_causal(cfg.head_mask, first)}

    extra, own_items = {}, {}
    if run.run == PRETRAINED:
        model = backbone()
        if cfg.pretrained_pooling == "head":  # the paper's e = Norm(Pooling(h)) with the heads' pooling
            with ctx.timed("eval"):
                extra, own_items = evaluate_second(model, test_items, data.angles, cfg, OWN, progress=ctx.progress)
            model = build_model(model, head="none", pooling=settings(model)["pooling"], frozen=True, dropout=0.0,
                                seed=0)
    else:
        def build_and_train(out):
            first = backbone()
            return _train(ctx, run, first, train_items, order, settings(first), out)

        model = ctx.train_or_load(build_and_train)
    with ctx.timed("eval"):
        metrics, details, items = evaluate_unit(model, test_items, data.angles, cfg, progress=ctx.progress,
                                                   projections=ctx.seed in (None, min(cfg.seeds)))
    return {"metrics": {**metrics, **extra}, "details": {**details, "pooling": pooling_of(model)},
            "labels": list(order), PER_ITEM: {**items, **own_items}}


def _token_states(ctx, backbone):
    """The frozen backbone's token states of every text (built or read once per process and backbone)."""
    from .cache import TokenStateCache

    cfg, data = ctx.cfg, ctx.data
    key = (str(backbone[0].auto_model.config._name_or_path), cfg.cache_dtype, backbone.max_seq_length)
    if key not in data.caches:
        data.caches[key] = TokenStateCache.load_or_build(backbone, data.texts, ctx.root / "data" / STATES,
                                                         dtype=cfg.cache_dtype, batch_size=cfg.eval_batch_size,
                                                         progress=ctx.progress)
    return data.caches[key]


def _train(ctx, run, backbone, train_items, order, head, out_dir):
    """Train one run; returns (the model to save, on the real backbone, and the training.TrainResult)."""
    from datasets import Dataset

    from ...training.trainer import train
    from .cache import CachedTokenStates
    from .models import build_loss, build_model, callbacks, to_uncached

    cfg, data = ctx.cfg, ctx.data
    frozen = run.regime == "frozen"
    first = backbone
    if frozen and cfg.cache_states:
        with ctx.timed("cache"):
            first = CachedTokenStates(_token_states(ctx, backbone))
    model = build_model(first, head=run.head, pooling=head["pooling"], frozen=frozen, dropout=cfg.dropout,
                        d_mlp=cfg.d_mlp, alpha_init=cfg.alpha_init, causal=head["causal"], seed=ctx.seed)
    ids = {label: i for i, label in enumerate(order)}
    loss = build_loss(model, run.loss, [data.angles[label] for label in order], temperature=cfg.temperature,
                      margin=cfg.margin)
    dataset = Dataset.from_dict({"text": [it.text for it in train_items],
                                 "label": [ids[it.label] for it in train_items]})
    result = train(model, dataset, loss, cfg.train_config(len(train_items), ctx.seed), out_dir,
                   callbacks=callbacks(run.head), progress=ctx.progress)
    return to_uncached(model, backbone), result
