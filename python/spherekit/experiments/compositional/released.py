"""The released code's fixed tables by encoder size: learning rates, weight decays and step counts.

"Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" sets its training length from "a
fixed wall-clock time per backbone and measured throughput" (appendix D.3). Its released scripts froze that
measurement into tables (radoslavralev/limitations-text-retrieval; read, not copied):

- run_experiments.sh (Model A / B): throughput on an L4 at batch 128 and length 128 by encoder size, 1,800 / 1,200
  / 400 / 250 / 120 samples/s for < 30M / < 50M / < 120M / < 200M / larger; steps = 4 min x 60 x throughput /
  batch, at least 500. At batch 128: 3,375 steps for all-MiniLM-L6-v2 (22M), 2,250 for all-MiniLM-L12-v2 and
  gte-small (33M), 750 for a 100M encoder, 500 for gte-modernbert-base (149M: 468, raised to the minimum).
  Learning rate 1e-4 / 8e-5 / 5e-5 / 4e-5 / 3e-5 and weight decay 0.001 / 0.005 / 0.01 in the same brackets.
- run_frozen_vs_e2e_experiment.sh (verifiers): throughput in samples/s by regime, verifier and encoder size
  (< 50M / < 120M / larger), steps = 4 min x 60 x throughput / batch (no minimum); end-to-end encoder learning
  rate 2e-5 / 1.5e-5 / 1e-5 / 5e-6 and weight decay 0.001 / 0.005 / 0.01 for < 30M / < 50M / < 120M / larger.

The scripts look the size up by model name; here it is the loaded encoder's parameter count, which puts the
paper's four backbones in the same brackets (22.7M, 33.4M, 33.4M, 149M).
"""

from __future__ import annotations

import math

# (upper bound in millions of parameters, value); the last bound is open
ENCODER_SAMPLES_PER_S = ((30, 1800), (50, 1200), (120, 400), (200, 250), (math.inf, 120))
ENCODER_LR = ((30, 1e-4), (50, 8e-5), (120, 5e-5), (200, 4e-5), (math.inf, 3e-5))
ENCODER_WEIGHT_DECAY = ((30, 0.001), (50, 0.005), (math.inf, 0.01))
E2E_ENCODER_LR = ((30, 2e-5), (50, 1.5e-5), (120, 1e-5), (math.inf, 5e-6))
# verifier throughput (samples/s) per regime and verifier, for encoders < 50M / < 120M / larger
VERIFIER_SAMPLES_PER_S = {
    "frozen": {"F0": (600, 300, 150), "F1": (600, 300, 150), "F2": (600, 300, 150), "F3": (50, 30, 20),
               "F4": (200, 120, 60)},
    "e2e": {"F0": (440, 165, 90), "F1": (440, 165, 90), "F2": (440, 165, 90), "F3": (55, 35, 25), "F4": (150, 80, 40)},
}
VERIFIER_BRACKETS = (50, 120)
# the parameter counts (millions) of the paper's backbones and the offline substitute, by the cards' backbone names
PARAMETERS_M = {"all-MiniLM-L6-v2": 22.7, "all-MiniLM-L12-v2": 33.4, "gte-small": 33.4, "gte-modernbert-base": 149.0,
                "all-mpnet-base-v2": 109.5}


def _bracket(table, millions: float):
    return next(value for bound, value in table if millions < bound)


def encoder_rules(n_params: int) -> dict:
    """The scripts' learning rates and weight decays for an encoder of n_params parameters."""
    millions = n_params / 1e6
    wd = _bracket(ENCODER_WEIGHT_DECAY, millions)
    return {"lr": _bracket(ENCODER_LR, millions), "weight_decay": wd,
            "e2e_encoder_lr": _bracket(E2E_ENCODER_LR, millions), "e2e_encoder_weight_decay": wd}


def encoder_steps(n_params: int, batch_size: int, budget_s: float, min_steps: int) -> int:
    """Model A / B steps: max(min_steps, floor(budget_s x samples/s of the size bracket / batch_size))."""
    return max(min_steps, int(budget_s * _bracket(ENCODER_SAMPLES_PER_S, n_params / 1e6) // batch_size))


def verifier_steps(n_params: int, regime: str, name: str, batch_size: int, budget_s: float) -> int:
    """Verifier steps: floor(budget_s x samples/s of (regime, verifier, size bracket) / batch_size)."""
    column = sum(n_params / 1e6 >= b for b in VERIFIER_BRACKETS)
    return int(budget_s * VERIFIER_SAMPLES_PER_S[regime][name][column] // batch_size)


__all__ = ["PARAMETERS_M", "encoder_rules", "encoder_steps", "verifier_steps"]
