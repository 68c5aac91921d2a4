"""Model A / Model B training (Table 1) and the verifier runs (Figures 2-3), one seed at a time.

Model A / B: sentence-transformers' MultipleNegativesRankingLoss (spherekit's fused form) with scale 10 over
(anchor, positive, negative) rows through spherekit.experiments.training.train: AdamW, warmup 10% then linear
decay, LR and weight decay by encoder size (size_rules), the same steps / batch / seed for A and B. Steps
are fixed by the preset or, as the paper does, set from a wall-clock budget and a measured throughput (at least
min_steps).

Verifiers: spherekit.experiments.verifier_training.train_verifier, MNRL over verifier scores (in-batch plus the
explicit negative of each row) on the Model B mixture, as the released code trains them. Frozen: the token
embeddings of every training text are encoded once and cached (per backbone, in memory); only the verifier
trains, and F0-F2 (no parameters) are evaluated untrained. End to end: the encoder (at the code's size-scaled
encoder LR) and the verifier train together; stage 1 then uses the trained encoder as well.
"""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path

import torch

_TOKEN_CACHE: dict = {}
# the code's 4-minute step counts for a <50M encoder (run_frozen_vs_e2e_experiment.sh): frozen F0-F2 do not train
VERIFIER_STEPS = {"frozen": {"F0": 0, "F1": 0, "F2": 0, "F3": 375, "F4": 1500},
                  "e2e": {"F0": 825, "F1": 825, "F2": 825, "F3": 412, "F4": 1125}}


def size_rules(n_params: int) -> dict:
    """The released code's learning rates and weight decays by encoder size (parameters)."""
    millions = n_params / 1e6
    lr = 5e-5 * math.sqrt(100.0 / millions)
    wd = 0.001 if millions < 30 else 0.005 if millions < 50 else 0.01
    e2e_lr = 2e-5 if millions < 30 else 1.5e-5 if millions < 50 else 1e-5 if millions < 120 else 5e-6
    return {"lr": lr, "weight_decay": wd, "e2e_encoder_lr": e2e_lr, "e2e_encoder_weight_decay": wd}


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


def samples_per_second(model, rows, cfg, repeats: int = 2) -> float:
    """Training throughput (rows / s) of MNRL on a copy of the model: forward + backward of one batch, timed."""
    probe = copy.deepcopy(model)
    loss = _loss(probe, cfg)
    batch = rows[:cfg.batch_size]
    features = [probe.preprocess([r[c] for r in batch]) for c in range(3)]
    loss(features, None).backward()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        loss(features, None).backward()
    return repeats * len(batch) / (time.perf_counter() - start)


def encoder_steps(model, rows, cfg, record: Path) -> tuple[int, float | None]:
    """Optimizer steps of Model A and Model B on one backbone: cfg.steps when set, else the paper's wall-clock rule

        steps = max(min_steps, floor(time_budget_s * throughput / batch_size))

    with the throughput (rows / s) measured once per backbone and kept in `record` (JSON, keyed by the settings that
    change it), so that A, B and every seed train the same number of steps, also across resumed runs.
    Returns (steps, throughput); throughput is None for fixed steps."""
    from ..card import cached_json

    if cfg.steps:
        return cfg.steps, None
    key = f"batch_size={cfg.batch_size} max_seq_length={cfg.max_seq_length} scale={cfg.scale}"
    sps = cached_json(record, key, lambda: samples_per_second(model, rows, cfg))
    return max(cfg.min_steps, int(cfg.time_budget_s * sps / cfg.batch_size)), sps


def train_encoder(model, rows, steps: int, cfg, seed: int, out_dir, progress: bool = True) -> dict:
    from datasets import Dataset

    from ..training import TrainConfig, clear_checkpoints, loss_curve, train

    rules = size_rules(n_params(model))
    tc = TrainConfig(steps=steps, batch_size=cfg.batch_size, lr=rules["lr"], warmup_steps=int(cfg.warmup_ratio * steps),
                     weight_decay=rules["weight_decay"], seed=seed, precision="auto", save_steps=0,
                     logging_steps=cfg.logging_steps)
    columns = {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}
    result = train(model, Dataset.from_dict(columns), _loss(model, cfg), tc, Path(out_dir), progress=progress)
    clear_checkpoints(out_dir)
    return {"steps": result.steps, "lr": rules["lr"], "weight_decay": rules["weight_decay"],
            "train_seconds": round(result.seconds, 2), "curve": loss_curve(result.log_history)}


def build(name: str, cfg, width: int):
    from ...nn import build_verifier

    kwargs = {"F2": dict(lam=cfg.f2_lam, tau=cfg.f2_tau),
              "F3": dict(channels=cfg.f3_channels, num_layers=2, kernel_size=3, mlp_hidden=128, map_size=cfg.map_size),
              "F4": dict(patch=cfg.f4_patch, width=width, num_layers=1, num_heads=1, ff_dim=cfg.f4_ff,
                         map_size=cfg.map_size)}.get(name, {})
    return build_verifier(name, **kwargs)


def _frozen_tokens(encoder, backbone: str, rows, cfg):
    from ..verifier_training import TokenTriplets

    key = (backbone, len(rows), rows[0][0], cfg.max_seq_length)
    if key not in _TOKEN_CACHE:
        _TOKEN_CACHE.clear()
        _TOKEN_CACHE[key] = TokenTriplets.from_texts(encoder, [r[0] for r in rows], [r[1] for r in rows],
                                                     [[r[2]] for r in rows], batch_size=cfg.eval_batch_size)
    return _TOKEN_CACHE[key]


def verifier_steps(cfg, regime: str, name: str) -> int:
    if regime == "frozen" and name in ("F0", "F1", "F2"):
        return 0  # no parameters: evaluated untrained, as in the released code
    return cfg.verifier_steps or VERIFIER_STEPS[regime][name]


def train_verifier_run(encoder, backbone: str, verifier, regime: str, name: str, rows, cfg, seed: int) -> dict:
    from ..verifier_training import train_verifier

    steps = verifier_steps(cfg, regime, name)
    if steps == 0:
        return {"steps": 0, "train_seconds": 0.0}
    batch = cfg.verifier_batch(name)
    epochs = max(1, math.ceil(steps * batch / len(rows)))
    rules = size_rules(n_params(encoder))
    start = time.perf_counter()
    if regime == "frozen":
        data = _frozen_tokens(encoder, backbone, rows, cfg)
        result = train_verifier(verifier, data, batch_size=batch, epochs=epochs, max_steps=steps, lr=cfg.verifier_lr,
                                weight_decay=cfg.verifier_weight_decay, scale=cfg.verifier_scale, seed=seed)
    else:
        result = train_verifier(verifier, [tuple(r) for r in rows], encoder=encoder, freeze_encoder=False,
                                batch_size=batch, epochs=epochs, max_steps=steps, lr=cfg.verifier_lr,
                                weight_decay=cfg.verifier_weight_decay, encoder_lr=rules["e2e_encoder_lr"],
                                encoder_weight_decay=rules["e2e_encoder_weight_decay"], scale=cfg.verifier_scale,
                                seed=seed)
    hist = result.history
    return {"steps": result.steps, "train_seconds": round(time.perf_counter() - start, 2),
            "final_loss": hist[-1]["loss"] if hist else None, "final_accuracy": hist[-1]["accuracy"] if hist else None}
