"""The GPU plan of the textbook chapter on sentence embeddings (Section 31.1a: bi-encoders, pooling, contrastive
training, hard negatives): its `paper` preset as work items (api.gpu_plan), which scripts/gpu_papers.py times for
the predicted GPU time of the `paper` card."""

from __future__ import annotations

from ..api.gpu_plan import WorkItem


def gpu_plan(cfg) -> list[WorkItem]:
    """Per backbone: the training steps of the sections that train (losses, mining rounds, pooling) x seeds; the
    other sections encode only and are not counted."""
    from .spec import EXPERIMENT

    runs = {"losses": 3, "mining": cfg.rounds, "pooling": 3 if cfg.pooling_steps else 0}
    chosen = [s for s in EXPERIMENT.selected(cfg) if runs.get(s)]
    steps = sum(runs[s] * (cfg.pooling_steps if s == "pooling" else cfg.steps) for s in chosen)
    return [WorkItem(b, "train", 3 * cfg.batch_size, cfg.max_seq_length, steps * len(cfg.seeds),
                     f"trained sections {', '.join(chosen)}: {steps} steps x {len(cfg.seeds)} seeds of "
                     f"{cfg.batch_size} (query, positive, negative) rows; the other sections encode only (not counted)")
            for b in cfg.backbones]
