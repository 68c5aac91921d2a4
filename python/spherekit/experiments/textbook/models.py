"""Models and the one training call of the sections: a backbone with another pooling, and a training run with
MNRL (spherekit's fused loss), sentence-transformers' TripletLoss or CosineSimilarityLoss through
spherekit.training.trainer.train.

A training's record holds its logged loss curve and its probe (training.train's: the training loss of the first
rows, in fixed batches, eval mode, no gradient, before and after the training). The logged curve scores a new batch
at every step, whose difficulty varies more than a short fine-tuning of a pretrained encoder moves the loss; the
probe scores the same rows twice, so it says whether the objective fell (the core's gate,
spherekit.experiments.api.learning.grade_training, reads the probe when a record has one). The sections keep the
record as one of the run's trainings (ctx.record_training)."""

from __future__ import annotations

from pathlib import Path


def load(backbone: str, cfg):
    from ...models import load_backbone

    model = load_backbone(backbone)
    model.max_seq_length = min(cfg.max_seq_length, model.max_seq_length or cfg.max_seq_length)
    return model


def with_pooling(model, mode: str):
    """The same Transformer (shared weights) with a "cls" | "mean" | "max" Pooling; later modules kept."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    modules = list(model)
    at = next(i for i, m in enumerate(modules) if isinstance(m, Pooling))
    modules[at] = Pooling(modules[at].get_embedding_dimension(), pooling_mode=mode)
    out = SentenceTransformer(modules=modules, device=str(model.device))
    out.max_seq_length = model.max_seq_length
    return out


def build_loss(model, name: str, cfg):
    if name == "mnrl":
        from ...losses import MultipleNegativesRankingLoss

        return MultipleNegativesRankingLoss(model, scale=1.0 / cfg.temperature)
    if name == "triplet":
        from sentence_transformers.sentence_transformer.losses import TripletLoss

        return TripletLoss(model, triplet_margin=cfg.triplet_margin)
    if name == "cosine":
        from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

        return CosineSimilarityLoss(model)
    raise ValueError(f"unknown loss {name!r}; valid: mnrl, triplet, cosine")


def as_cosine_pairs(columns: dict[str, list[str]]) -> dict[str, list]:
    """(anchor, positive, negative_*) rows -> (sentence1, sentence2, score) pairs: 1.0 for the positive, 0.0 for
    each negative (the regression targets CosineSimilarityLoss fits)."""
    negs = [k for k in columns if k.startswith("negative")]
    s1, s2, score = [], [], []
    for i, anchor in enumerate(columns["anchor"]):
        for key, label in [("positive", 1.0)] + [(k, 0.0) for k in negs]:
            s1.append(anchor)
            s2.append(columns[key][i])
            score.append(label)
    return {"sentence1": s1, "sentence2": s2, "score": score}


def fit(model, columns: dict[str, list], loss_name: str, cfg, out_dir, *, seed: int, steps: int | None = None,
        callbacks=(), progress: bool = False) -> dict:
    """Train `model` in place on `columns` with loss `loss_name` (seed: of the training's order and dropout);
    returns the training record (module docstring)."""
    from datasets import Dataset

    from ...training.trainer import clear_checkpoints, loss_curve, train

    if loss_name == "cosine":
        columns = as_cosine_pairs(columns)
    loss = build_loss(model, loss_name, cfg)
    result = train(model, Dataset.from_dict(columns), loss, cfg.train_config(seed, steps), Path(out_dir),
                   callbacks=list(callbacks), progress=progress)
    clear_checkpoints(out_dir)
    return {"steps": result.steps, "seconds": round(result.seconds, 2), "rows": len(next(iter(columns.values()))),
            "curve": loss_curve(result.log_history), "probe": list(result.probe) if result.probe else None}
