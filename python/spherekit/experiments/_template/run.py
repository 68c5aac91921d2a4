"""The toy paper's data and one run of a condition.

Data: 24 (term, gloss) pairs, split by the data seed into training pairs and `n_test` test pairs. A run loads the
backbone (frozen), or fine-tunes it with sentence-transformers' MNRL through the one training path
(ctx.train_or_load: resumable, saved once), starting from the backbone ("tuned") or from the best finished "tuned"
seed ("tuned-more"); then every test term retrieves its gloss among the test glosses. Each test term's values are
kept too ("per_item"): the claims' paired bootstrap resamples the test terms.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..api.uncertainty import per_item

PAIRS = (
    ("cat", "a small domesticated feline animal"), ("dog", "a domesticated canine kept as a pet"),
    ("river", "a large natural stream of water"), ("mountain", "a land mass that rises high above its surroundings"),
    ("bread", "food made of baked dough of flour and water"), ("chair", "a seat for one person with a back"),
    ("rain", "water falling in drops from clouds"), ("teacher", "a person whose job is teaching"),
    ("book", "a written work bound between covers"), ("winter", "the coldest season of the year"),
    ("doctor", "a person licensed to treat the sick"), ("ship", "a large vessel that travels on water"),
    ("apple", "the round fruit of a tree of the rose family"), ("clock", "a device that measures and shows time"),
    ("bridge", "a structure carrying a road across a river"), ("forest", "a large area covered with trees"),
    ("hammer", "a hand tool for driving nails"), ("island", "land surrounded by water"),
    ("salt", "a white crystalline substance used to season food"), ("moon", "the natural satellite of the earth"),
    ("song", "a short piece of music with words"), ("window", "an opening in a wall that lets in light"),
    ("key", "a metal piece that opens a lock"), ("cloud", "a visible mass of water droplets in the sky"),
)


@dataclass
class ToyData:
    train: list
    test: list
    stats: dict = field(default_factory=dict)


def prepare(cfg, root, progress: bool) -> ToyData:
    pairs = list(PAIRS)
    random.Random(cfg.data_seed).shuffle(pairs)
    if cfg.n_test >= len(pairs) - 1:
        raise ValueError(f"n_test must leave at least 2 training pairs; got {cfg.n_test} of {len(pairs)} pairs")
    test, train = pairs[:cfg.n_test], pairs[cfg.n_test:]
    return ToyData(train, test, {"train_pairs": len(train), "test_pairs": len(test)})


def run_unit(ctx) -> dict:
    from ...models import load_backbone

    if ctx.condition.name == "frozen":
        model = load_backbone(ctx.backbone)
    else:
        start = ctx.backbone if ctx.condition.name == "tuned" else _best_checkpoint(ctx)
        model = ctx.train_or_load(lambda out: _train(ctx, start, out))
    with ctx.timed("eval"):
        reciprocal, hits = _retrieve(model, ctx.data.test, ctx.cfg)
    return {"metrics": {"R@1": sum(hits) / len(hits), "MRR": sum(reciprocal) / len(reciprocal)},
            "per_item": {"R@1": per_item(hits), "MRR": per_item(reciprocal)}}  # for the claims' paired bootstrap


def _best_checkpoint(ctx) -> str:
    """The checkpoint of the finished 'tuned' run with the highest MRR (a clear error when it kept no model)."""
    best = max(ctx.requirement("tuned"), key=lambda r: r["result"]["metrics"]["MRR"])
    path = best["dir"] / "checkpoint"
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"{path} is missing: 'tuned-more' starts from the best 'tuned' model (a restored "
                                f"run keeps no model); re-train it alone: {ctx.retrain_command('tuned', best['seed'])}")
    return str(path)


def _train(ctx, start: str, out_dir):
    from datasets import Dataset

    from ...losses import MultipleNegativesRankingLoss
    from ...models import load_backbone
    from ...training.trainer import train

    model = load_backbone(start)
    model.max_seq_length = ctx.cfg.max_seq_length
    data = Dataset.from_dict({"anchor": [t for t, _ in ctx.data.train], "positive": [g for _, g in ctx.data.train]})
    loss = MultipleNegativesRankingLoss(model, scale=ctx.cfg.scale)
    return model, train(model, data, loss, ctx.cfg.train_config(ctx.seed), out_dir, progress=ctx.progress)


def _retrieve(model, pairs, cfg) -> tuple[list[float], list[float]]:
    """Per test term: the reciprocal rank of its gloss among the test glosses, and whether it ranks first."""
    from ...evaluation import metrics
    from ...evaluation.search import topk_cosine

    terms = model.encode([t for t, _ in pairs], batch_size=cfg.eval_batch_size, convert_to_tensor=True)
    glosses = model.encode([g for _, g in pairs], batch_size=cfg.eval_batch_size, convert_to_tensor=True)
    _, ranked = topk_cosine(terms, glosses, len(pairs), backend="torch")
    relevant = [{i} for i in range(len(pairs))]
    reciprocal = metrics.mrr(ranked, relevant, reduction="none").tolist()
    hits = metrics.recall_at_k(ranked, relevant, 1, reduction="none").tolist()
    return reciprocal, hits
