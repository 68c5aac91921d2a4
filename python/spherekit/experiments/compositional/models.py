"""Model A / Model B training (Table 1) and the verifier runs (Figures 2-3), one seed at a time.

Model A / B: sentence-transformers' MultipleNegativesRankingLoss (spherekit's fused form) with scale 10 over
(anchor, positive, negative) rows through spherekit.training.trainer.train: AdamW, warmup 10% then linear
decay, the same steps / batch / seed for A and B. Learning rate, weight decay and (with `steps` 0) the step count
are the released code's table values for the encoder's size (released.py).

Verifiers: spherekit.training.verifier.train_verifier, MNRL over verifier scores (in-batch plus the
explicit negative of each row) on the Model B mixture, as the released code trains them. Frozen: the token
embeddings of every training text are encoded once and cached (per backbone, in memory); only the verifier
trains, and F0-F2 (no parameters) are evaluated untrained. End to end: the encoder (at the table's size-scaled
encoder LR) and the verifier train together; stage 1 then uses the trained encoder as well.

The training records (the run's "training": "encoder" for Model A / B, "verifier" for a verifier run) are what the
experiment core's gate judges (spherekit.experiments.api.learning): an encoder's holds the trainer's probe (the
MNRL loss of its first 64 rows before and after the training, eval mode, no gradient) and its logged curve; a
verifier's its "start" (the loss of its first step, scored before that step's update) and "final" (the mean loss
of its last 10% of steps): the loss must fall by 5%.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from . import released
from .spec import released_verifier_steps

_TOKEN_CACHE: dict = {}
FIRST_STEP = "first step"  # a verifier's "start": the loss of its first step, scored before that step's update


def load(backbone: str, cfg):
    from ...models import load_backbone

    model = load_backbone(backbone, device="cpu" if not torch.cuda.is_available() else None)
    model.max_seq_length = min(cfg.max_seq_length, model.max_seq_length or cfg.max_seq_length)
    return model


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _loss(model, cfg):
    from ...losses import MultipleNegativesRankingLoss

    return MultipleNegativesRankingLoss(model, scale=cfg.scale)


def encoder_steps(model, cfg) -> int:
    """Optimizer steps of Model A and Model B on one backbone (the same for both and every seed): cfg.steps when
    set, else the released code's table for the encoder's size at cfg.batch_size (released.encoder_steps)."""
    return cfg.steps or released.encoder_steps(n_params(model), cfg.batch_size, cfg.time_budget_s, cfg.min_steps)


def train_encoder(model, rows, steps: int, cfg, seed: int, out_dir, progress: bool = True) -> dict:
    from datasets import Dataset

    from ...training.trainer import TrainConfig, clear_checkpoints, loss_curve, train

    rules = released.encoder_rules(n_params(model))
    tc = TrainConfig(steps=steps, batch_size=cfg.batch_size, lr=rules["lr"], warmup_steps=int(cfg.warmup_ratio * steps),
                     weight_decay=rules["weight_decay"], seed=seed, precision="auto", save_steps=0,
                     logging_steps=cfg.logging_steps)
    columns = {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}
    result = train(model, Dataset.from_dict(columns), _loss(model, cfg), tc, Path(out_dir), progress=progress)
    clear_checkpoints(out_dir)
    return {"steps": result.steps, "lr": rules["lr"], "weight_decay": rules["weight_decay"],
            "train_seconds": round(result.seconds, 2), "rows": len(rows),
            **({"probe": list(result.probe)} if result.probe is not None else {}),
            "curve": loss_curve(result.log_history)}


def build(name: str, cfg, width: int):
    from ...nn import build_verifier

    kwargs = {"F2": dict(lam=cfg.f2_lam, tau=cfg.f2_tau),
              "F3": dict(channels=cfg.f3_channels, num_layers=2, kernel_size=3, mlp_hidden=128, map_size=cfg.map_size),
              "F4": dict(patch=cfg.f4_patch, width=width, num_layers=1, num_heads=1, ff_dim=cfg.f4_ff,
                         map_size=cfg.map_size)}.get(name, {})
    return build_verifier(name, **kwargs)


def _frozen_tokens(encoder, backbone: str, rows, cfg):
    from ...training.verifier import TokenTriplets

    key = (backbone, len(rows), rows[0][0], cfg.max_seq_length)
    if key not in _TOKEN_CACHE:
        _TOKEN_CACHE.clear()
        _TOKEN_CACHE[key] = TokenTriplets.from_texts(encoder, [r[0] for r in rows], [r[1] for r in rows],
                                                     [[r[2]] for r in rows], batch_size=cfg.eval_batch_size)
    return _TOKEN_CACHE[key]


def verifier_steps(cfg, regime: str, name: str, encoder) -> int:
    """cfg.verifier_steps when set, else the released code's table (released.verifier_steps) at cfg's verifier batch;
    a condition of cfg.released_steps: the released code's count, its table at its own batches (the paper's
    verifier_batch_light / heavy, 128 / 32) and its 4-minute budget, whatever cfg's time_budget_s (the count
    undertrained.released_count exempts); frozen F0-F2 have no parameters and do not train (as in the released
    code)."""
    if regime == "frozen" and name in ("F0", "F1", "F2"):
        return 0
    if f"{regime}_{name}" in cfg.released_steps:
        return released_verifier_steps(n_params(encoder), regime, name)
    return cfg.verifier_steps or released.verifier_steps(n_params(encoder), regime, name, cfg.verifier_batch(name),
                                                         cfg.time_budget_s)


def train_verifier_run(encoder, backbone: str, verifier, regime: str, name: str, rows, cfg, seed: int,
                       progress: bool = True) -> dict:
    """Train one verifier run (progress: its progress bar, off under --no-progress); its training record: steps,
    seconds, "start" (the loss of the first step, before its update; "start_from" says so) and "final" (the mean
    loss of the last 10% of the steps), the mean in-batch accuracy of those steps ("final_accuracy")."""
    from ...training.verifier import train_verifier

    steps = verifier_steps(cfg, regime, name, encoder)
    if steps == 0:
        return {"steps": 0, "train_seconds": 0.0}
    batch = cfg.verifier_batch(name)
    epochs = max(1, math.ceil(steps * batch / len(rows)))
    rules = released.encoder_rules(n_params(encoder))
    start = time.perf_counter()
    if regime == "frozen":
        data = _frozen_tokens(encoder, backbone, rows, cfg)
        result = train_verifier(verifier, data, batch_size=batch, epochs=epochs, max_steps=steps, lr=cfg.verifier_lr,
                                weight_decay=cfg.verifier_weight_decay, scale=cfg.verifier_scale, seed=seed,
                                progress=progress)
    else:
        result = train_verifier(verifier, [tuple(r) for r in rows], encoder=encoder, freeze_encoder=False,
                                batch_size=batch, epochs=epochs, max_steps=steps, lr=cfg.verifier_lr,
                                weight_decay=cfg.verifier_weight_decay, encoder_lr=rules["e2e_encoder_lr"],
                                encoder_weight_decay=rules["e2e_encoder_weight_decay"], scale=cfg.verifier_scale,
                                seed=seed, progress=progress)
    hist = result.history
    tail = hist[-max(1, len(hist) // 10):]
    record = {"steps": result.steps, "train_seconds": round(time.perf_counter() - start, 2)}
    if hist:
        record.update(start=hist[0]["loss"], start_from=FIRST_STEP, final=sum(h["loss"] for h in tail) / len(tail),
                      final_accuracy=sum(h["accuracy"] for h in tail) / len(tail))
    return record
