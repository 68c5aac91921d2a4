"""The GPU plan of "Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via
Hyperspherical Contrastive Learning": its `paper` preset as work items (api.gpu_plan), which scripts/gpu_papers.py
times for the predicted GPU time of the `paper` card. The heads train on cached backbone states: only the cache is
timed, the head steps are assumed."""

from __future__ import annotations

import math

from ..api.gpu_plan import WorkItem

N_LABELS = 12  # labels of one dataset (the plan counts one 12-label dataset)


def gpu_plan(cfg) -> list[WorkItem]:
    """Per backbone: the frozen backbone's cache and test embeddings (encode), and the head training (assumed)."""
    from . import departures

    n_train, n_test = (cfg.n_train_per_label or 500) * N_LABELS, cfg.n_test_per_label * N_LABELS
    runs = len(cfg.runs) * len(cfg.regimes) + len(cfg.label_count_runs) * len(cfg.label_counts)
    texts = n_train + n_test + n_test * (1 + runs * len(cfg.seeds))
    head_steps = runs * len(cfg.seeds) * cfg.epochs * math.ceil(n_train / cfg.batch_size)
    out = []
    for b in cfg.backbones:
        out.append(WorkItem(b, "encode", cfg.eval_batch_size, departures.TOKENS_PER_TEXT,
                            math.ceil(texts / cfg.eval_batch_size),
                            f"the frozen backbone's cache (every text once) and the test embeddings of Pretrained and "
                            f"{runs} runs x {len(cfg.seeds)} seeds, one {N_LABELS}-label dataset of "
                            f"{cfg.n_train_per_label or 500}/{cfg.n_test_per_label} texts per label, "
                            f"{departures.TOKENS_PER_TEXT} tokens per text (departures.TOKENS_PER_TEXT)"))
        out.append(WorkItem(b, "assumed", cfg.batch_size, 0, head_steps,
                            f"head training on cached states: {runs} runs x {len(cfg.seeds)} seeds x {cfg.epochs} "
                            f"epochs, assumed {departures.STEP_SECONDS[0]} s per step (departures.STEP_SECONDS, not "
                            f"timed)", assumed_s=departures.STEP_SECONDS[0]))
    return out
