"""The data of "Pooling Matters for Frozen Encoders" and one run of a condition.

Data: 30 (term, gloss) pairs written for this reproduction (the paper's own list is not published), split by the
data seed into training pairs and `n_test` test pairs. A run loads the backbone and sets its pooling (mean, CLS or
max: the condition's params), frozen; or fine-tunes it with that pooling with sentence-transformers' MNRL through
the one training path (ctx.train_or_load: resumable, saved once). Then every test term retrieves its gloss among
the test glosses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

PAIRS = (
    ("lantern", "a portable lamp with a protective case"), ("harbor", "a sheltered place where ships can anchor"),
    ("violin", "a bowed string instrument held under the chin"), ("desert", "a dry region with little rainfall"),
    ("glacier", "a slowly moving mass of ice"), ("orchard", "a piece of land planted with fruit trees"),
    ("anchor", "a heavy object that holds a boat in place"), ("candle", "a stick of wax with a wick that burns"),
    ("pilot", "a person who flies an aircraft"), ("volcano", "a mountain that erupts lava and ash"),
    ("wallet", "a small flat case for carrying money"), ("ladder", "a set of rungs for climbing up or down"),
    ("thunder", "the loud sound that follows lightning"), ("baker", "a person who makes bread and cakes"),
    ("compass", "an instrument that shows the direction of north"), ("kettle", "a pot used for boiling water"),
    ("meadow", "a field of grass and wild flowers"), ("needle", "a thin pointed steel tool used for sewing"),
    ("owl", "a night bird of prey with large eyes"), ("pencil", "a writing tool with a core of graphite"),
    ("puzzle", "a game that tests ingenuity or knowledge"), ("saddle", "a seat fastened on the back of a horse"),
    ("tunnel", "an underground passage through a hill"), ("umbrella", "a folding canopy that protects from rain"),
    ("vaccine", "a substance that gives immunity against a disease"), ("whale", "a very large sea mammal"),
    ("zipper", "a fastener of two rows of interlocking teeth"), ("mirror", "a glass surface that reflects images"),
    ("honey", "a sweet fluid made by bees from nectar"), ("judge", "an official who decides cases in a court"),
)


@dataclass
class PoolingData:
    train: list
    test: list
    stats: dict = field(default_factory=dict)


def prepare(cfg, root, progress: bool) -> PoolingData:
    pairs = list(PAIRS)
    random.Random(cfg.data_seed).shuffle(pairs)
    if cfg.n_test > len(pairs) - cfg.batch_size:
        raise ValueError(f"n_test must leave at least batch_size ({cfg.batch_size}) training pairs; got "
                         f"{cfg.n_test} of {len(pairs)} pairs")
    test, train = pairs[:cfg.n_test], pairs[cfg.n_test:]
    return PoolingData(train, test, {"pairs": len(pairs), "train_pairs": len(train), "test_pairs": len(test)})


def run_unit(ctx) -> dict:
    pooling = ctx.condition.params["pooling"]
    if ctx.condition.params["tuned"]:
        model = ctx.train_or_load(lambda out: _train(ctx, pooling, out))
    else:
        model = _load(ctx.backbone, pooling, ctx.cfg.max_seq_length)
    with ctx.timed("eval"):
        reciprocal, hits = _retrieve(model, ctx.data.test, ctx.cfg)
    return {"metrics": {R1: sum(hits) / len(hits), MRR: sum(reciprocal) / len(reciprocal)},
            "per_item": {MRR: reciprocal}, "details": {"pooling": pooling}}


MRR, R1 = "MRR", "R@1"


def _pooling_module():
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:
        from sentence_transformers.models import Pooling
    return Pooling


def _load(backbone: str, pooling: str, max_seq_length: int):
    """The backbone with its pooling module replaced by `pooling` ("mean", "cls", "max"), reading at most
    `max_seq_length` tokens per text (the same for frozen and fine-tuned runs)."""
    from spherekit.models import load_backbone

    model = load_backbone(backbone)
    Pooling = _pooling_module()
    index = [i for i, module in enumerate(model) if isinstance(module, Pooling)]
    if len(index) != 1:
        raise ValueError(f"backbone {backbone}: expected one Pooling module, found {len(index)} in {model}")
    dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    model[index[0]] = Pooling(dimension(), pooling_mode=pooling)
    model.max_seq_length = max_seq_length
    return model


def _train(ctx, pooling: str, out_dir):
    from datasets import Dataset

    from spherekit.training.trainer import train
    from spherekit.losses import MultipleNegativesRankingLoss

    model = _load(ctx.backbone, pooling, ctx.cfg.max_seq_length)
    data = Dataset.from_dict({"anchor": [t for t, _ in ctx.data.train], "positive": [g for _, g in ctx.data.train]})
    loss = MultipleNegativesRankingLoss(model, scale=ctx.cfg.scale)
    return model, train(model, data, loss, ctx.cfg.train_config(ctx.seed), out_dir, progress=ctx.progress)


def _retrieve(model, pairs, cfg) -> tuple[list[float], list[float]]:
    """Per test term: the reciprocal rank of its gloss among the test glosses, and whether it ranks first."""
    from spherekit.evaluation import metrics
    from spherekit.evaluation.search import topk_cosine

    terms = model.encode([t for t, _ in pairs], batch_size=cfg.eval_batch_size, convert_to_tensor=True)
    glosses = model.encode([g for _, g in pairs], batch_size=cfg.eval_batch_size, convert_to_tensor=True)
    _, ranked = topk_cosine(terms, glosses, len(pairs), backend="torch")
    relevant = [{i} for i in range(len(pairs))]
    reciprocal = metrics.mrr(ranked, relevant, reduction="none").tolist()
    hits = metrics.recall_at_k(ranked, relevant, 1, reduction="none").tolist()
    return reciprocal, hits
