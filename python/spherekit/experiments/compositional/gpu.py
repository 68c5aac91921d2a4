"""The GPU plan of "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization": its `paper`
preset as work items (api.gpu_plan), which scripts/gpu_papers.py times for the predicted GPU time of the `paper`
card. The step counts follow the released scripts' time budget scaled by model size (released.encoder_steps,
released.verifier_steps), hence callables of the backbone's parameter count."""

from __future__ import annotations

from ..api.gpu_plan import WorkItem


def gpu_plan(cfg) -> list[WorkItem]:
    """Per backbone: Model A / B training, and the encoder's share of every verifier that trains (e2e) or encodes
    (frozen F3, F4; frozen F0-F2 have no parameters and do not train: models.verifier_steps)."""
    from . import released
    from .spec import EXPERIMENT

    out, seeds = [], len(cfg.seeds)
    chosen = set(EXPERIMENT.selected(cfg))
    for b in cfg.backbones:
        encoders = [c for c in ("model_a", "model_b") if c in chosen]
        out.append(WorkItem(b, "train", 3 * cfg.batch_size, cfg.max_seq_length,
                            lambda n, k=len(encoders): k * seeds * released.encoder_steps(
                                n, cfg.batch_size, cfg.time_budget_s, cfg.min_steps),
                            f"{' and '.join(encoders)} x {seeds} seeds x released.encoder_steps (the released "
                            f"scripts' {cfg.time_budget_s:.0f} s budget) of {cfg.batch_size} triplets"))
        for regime in ("frozen", "e2e"):
            for name in cfg.verifiers:
                if f"{regime}_{name}" not in chosen or (regime == "frozen" and name in ("F0", "F1", "F2")):
                    continue
                batch = cfg.verifier_batch(name)
                out.append(WorkItem(b, "train" if regime == "e2e" else "encode", 3 * batch, cfg.max_seq_length,
                                    lambda n, r=regime, v=name, bs=batch: seeds * released.verifier_steps(
                                        n, r, v, bs, cfg.time_budget_s),
                                    f"{regime}_{name} x {seeds} seeds x released.verifier_steps; the encoder's share "
                                    f"of a step of {batch} triplets (the verifier's own maps and layers not counted)"))
    return out
