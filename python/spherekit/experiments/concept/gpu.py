"""The GPU plan of "Principles of Concept Representation in Sentence Encoders": its `paper` preset as work items
(api.gpu_plan), which scripts/gpu_papers.py times for the predicted GPU time of the `paper` card."""

from __future__ import annotations

from ..api.gpu_plan import WorkItem


def gpu_plan(cfg) -> list[WorkItem]:
    """Per backbone: every trained condition x seed x cfg.steps training steps; a step encodes the three views."""
    from .spec import EXPERIMENT

    trained = [c for c in EXPERIMENT.selected(cfg) if getattr(EXPERIMENT.conditions[c].params, "trained", False)]
    texts = cfg.batch_size * (6 + cfg.negatives_per_pair)
    return [WorkItem(b, "train", texts, cfg.max_seq_length, len(trained) * len(cfg.seeds) * cfg.steps,
                     f"{len(trained)} trained conditions x {len(cfg.seeds)} seeds x {cfg.steps} steps; a step encodes "
                     f"the three views, {cfg.batch_size} x (2 syn + 2 t2d + {cfg.negatives_per_pair} negatives + 2 "
                     f"d2d) texts")
            for b in cfg.backbones]
