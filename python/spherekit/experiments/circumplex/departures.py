"""Where a circumplex card departs from "Mapping the Circumplex of Affect": every choice the run makes that the paper
does not and that can decide a verdict (paper.departures, rendered by the core at the top of the card), and for the
paper's own presets what a full reproduction still lacks and a predicted GPU time.

The prediction (predicted_gpu_hours) is a FLOP count, never a measurement: per run, training costs
6 x (trainable parameters) per token seen (forward and backward; a frozen backbone's states are computed once per
backbone and text, 2 x P per token), and each run's test embedding runs the whole model once (2 x (P + head) per
token); TOKENS_PER_TEXT = 48 (Emolit's sentences: about 30 words), 100-300 TFLOP/s sustained in bf16 on one H100
(10-30 % of its dense peak: single-block heads and batches of 128 texts do not fill it) and 0.1-0.02 s of fixed cost
per optimiser step (data, optimiser, nGPT renormalisation; the slow end with the slow throughput). Downloads,
loading and the k-means / PCA / MDS evaluation are not counted.
"""

from __future__ import annotations

import math

from ..api.learning import ENCODER, RULE, trainings
from ..api.units import unit_runs
from .spec import (
    ALPHA_MEAN,
    DEFAULT_ALPHA,
    Run,
    parse_condition,
)

TOKENS_PER_TEXT = 48
TFLOPS = (100.0, 300.0)
STEP_SECONDS = (0.1, 0.02)  # fixed cost per optimiser step, paired with TFLOPS (slow, fast)
# parameters and width of the paper's backbones (their model cards; Table 3 gives the widths)
SIZES = {"intfloat/multilingual-e5-large": (560e6, 1024), "mixedbread-ai/mxbai-embed-large-v1": (335e6, 1024),
         "Qwen/Qwen3-Embedding-4B": (4.0e9, 2560), "nvidia/llama-embed-nemotron-8b": (7.5e9, 4096),
         "meta-llama/Llama-3.2-3B": (3.2e9, 3072), "allenai/Olmo-3-1025-7B": (7.3e9, 4096)}
PAPER_PRESETS = ("paper", "paper-finetuned")
PAPER_STEPS = 15 * math.ceil(12 * 500 / 128)  # Table 3: 15 epochs, batch 128, 500 train texts x 12 labels = 705


def _run_cost(params: float, d: int, frozen: bool, n_train: int, n_test: int, cfg: dict) -> tuple[float, int]:
    """(FLOPs, optimiser steps) of one run."""
    head = 16.0 * d * d  # one block: attention 4 d^2 + MLP 12 d^2 (d_MLP = 4d, u and v fused)
    steps = cfg["epochs"] * math.ceil(n_train / cfg["batch_size"])
    train = 6.0 * (head if frozen else params + head) * steps * cfg["batch_size"] * TOKENS_PER_TEXT
    return train + 2.0 * (params + head) * n_test * TOKENS_PER_TEXT, steps


def predicted_gpu_hours(cfg: dict, n_labels: int = 12) -> tuple[float, float] | None:
    """(low, high) predicted H100-hours of a config's grid on one dataset (see the module docstring); None when a
    backbone's size is unknown."""
    if any(b not in SIZES for b in cfg["backbones"]):
        return None
    n_train = (cfg["n_train_per_label"] or 500) * n_labels
    n_test = cfg["n_test_per_label"] * n_labels
    total, steps = 0.0, 0

    def add(n_runs: int, cost: tuple[float, int]):
        nonlocal total, steps
        total, steps = total + n_runs * cost[0], steps + n_runs * cost[1]

    for backbone in cfg["backbones"]:
        params, d = SIZES[backbone]
        frozen_any = "frozen" in cfg["regimes"] or cfg["label_count_runs"] and cfg["label_count_regime"] == "frozen"
        if frozen_any:  # the cache: every text once through the backbone
            total += 2.0 * params * (n_train + n_test) * TOKENS_PER_TEXT
        total += 2.0 * params * n_test * TOKENS_PER_TEXT  # Pretrained
        for regime in cfg["regimes"]:
            add(len(cfg["runs"]), _run_cost(params, d, regime == "frozen", n_train, n_test, cfg))
        for k in cfg["label_counts"]:
            add(len(cfg["label_count_runs"]), _run_cost(params, d, cfg["label_count_regime"] == "frozen",
                                                        n_train * k // n_labels, n_test * k // n_labels, cfg))
    fast = total / (TFLOPS[1] * 1e12) + steps * STEP_SECONDS[1]
    slow = total / (TFLOPS[0] * 1e12) + steps * STEP_SECONDS[0]
    return fast / 3600, slow / 3600


def _paper_preset(results: dict) -> list[str]:
    cfg = results["config"]
    hours = predicted_gpu_hours(cfg)
    other = "paper-finetuned" if results.get("preset") == "paper" else "paper"
    out = [("missing for a full reproduction: Table 1 averages four datasets and a card holds one (--data-dir): "
            "Emolit (the authors' released 12-label split, dataset/emolit_12labels_{train,test}.csv of their "
           "repository, read as downloaded), Empathetic Dialogues and SuperEmotion (their published files, "
           "--set dataset=...); PersonaGen is not released (texts generated with seven LLMs, appendix C.2) and "
           "cannot be rebuilt offline; the multilingual Emolit splits (Table 5) and Qwen3-14B (Table 6) are not in "
           f"this preset; the paper's other regime is the `{other}` preset (the runner runs every condition on "
           "every backbone, so the fine-tuned BERT-like and the frozen LLM backbones are two presets)")]
    if hours is not None:
        out.append(f"predicted GPU time (a prediction from FLOP counts, not a measurement): {hours[0]:.1f}-"
                   f"{hours[1]:.1f} H100-hours for this preset on one 12-label dataset of 500 / 100 texts per label "
                   f"({TOKENS_PER_TEXT} tokens per text, {TFLOPS[0]:.0f}-{TFLOPS[1]:.0f} TFLOP/s sustained in bf16 "
                   f"and {STEP_SECONDS[1]}-{STEP_SECONDS[0]} s per optimiser step; downloads and model loading not "
                   "counted); Empathetic Dialogues (8 labels) and SuperEmotion (9) take about 2/3 of it")
    return out


def _trained_runs(results: dict) -> list[tuple[Run, dict]]:
    out = []
    for unit in results["units"].values():
        run = parse_condition(unit["condition"])
        if run.run != "Pretrained":
            out.append((run, unit))
    return out


def _poolings(results: dict) -> str:
    seen = {}
    for unit in results["units"].values():
        for run in unit_runs(unit):
            got = (run.get("details") or {}).get("pooling")
            if got and parse_condition(unit["condition"]).run != "Pretrained":
                seen.setdefault(unit["backbone"], set()).add(got["pooling"])
    if not seen:
        return f"config pooling={results['config']['pooling']}"
    return "; ".join(f"{b}: {', '.join(sorted(p))}" for b, p in seen.items())


def _alpha(results: dict) -> str | None:
    ngpt = [(run, unit) for run, unit in _trained_runs(results) if run.head == "ngpt" and run.regime == "frozen"]
    alphas = [unit["metrics"].get(ALPHA_MEAN) for _, unit in ngpt if unit["metrics"].get(ALPHA_MEAN) is not None]
    steps = sorted({trainings(r).get(ENCODER, {}).get("steps") for _, unit in ngpt for r in unit_runs(unit)} - {None})
    if not alphas:
        return None
    alpha = results["config"]["alpha_init"]
    default = "nGPT's and the authors' code's default" if alpha == DEFAULT_ALPHA else \
        f"our probe; nGPT's and the authors' code's default is {DEFAULT_ALPHA}"
    return (f"nGPT step alpha initialised at {alpha} ({default}; the paper gives none): after "
            + "/".join(map(str, steps)) + " steps the frozen nGPT heads' "
            f"alphas average {min(alphas):.3f}-{max(alphas):.3f}; a residual turns a token state by at most about "
            "2 alpha, so a head whose alpha and loss hardly move stays near its input (the gate grades such a training "
            f"'barely moved' or 'did not learn', and the claims resting on it inconclusive); the paper's schedule is "
            f"{PAPER_STEPS} steps")


def departures(results: dict) -> list[str]:
    """Where the run departs from the paper (beyond the configuration table's marked values)."""
    cfg, data = results["config"], results.get("data", {})
    out = []
    if data.get("source") == "offline":
        per = data.get("train_per_label", {})
        out.append(f"data: the offline 12-label set (WordNet, GCIDE, NRC lexicon texts; "
                   f"{min(per.values()) if per else '?'} train and {cfg['n_test_per_label']} test texts per label) "
                   "instead of Emolit, Empathetic Dialogue, SuperEmotion and PersonaGen (500 / 100 per label); "
                   "one dataset, so no average over four")
    if results.get("preset") in PAPER_PRESETS:
        out += _paper_preset(results)
    if results.get("device") != "cuda":
        out.append("precision: fp32 on a CPU (the paper: bf16)")
    out.append(f"pooling of the heads: {_poolings(results)}; the paper pools [CLS] for BERT-like encoders, the last "
               "token for decoder-only LLMs and mean for llama-embed-nemotron 'consistent with its original training' "
               "(all-MiniLM-L6-v2 was trained with mean pooling, so both rules apply to it: the "
               "cpu-small-mean-pooling card runs the other one)")
    if cfg.get("pretrained_pooling", "backbone") == "head":
        out.append("Pretrained row: the backbone's states pooled as the heads pool them, no head (eq. 3 without a "
                   "head; the paper does not say how its Pretrained row pools), so C5 compares a head with its own "
                   "input; the backbone's own sentence embedding is measured beside it ('backbone pooling/...')")
    else:
        out.append("Pretrained row: the backbone's own sentence embedding (mean pooling for all-MiniLM-L6-v2) while "
                   "the heads pool [CLS]: C5 compares two poolings as well as the head (these runs predate "
                   "pretrained_pooling)")
    alpha = _alpha(results)
    if alpha:
        out.append(alpha)
    out.append("initial head weights (the paper gives none): nGPT Gaussian rows renormalised to unit norm, GPT "
               "N(0, 0.02^2) (nanoGPT's); head attention bidirectional for bidirectional backbones, unidirectional "
               "for decoder-only ones (appendix B; the authors' code: bidirectional for all)")
    out.append("verdict rules (ours; the paper runs one seed and reports no uncertainty): a unit is the mean over "
               f"seeds {', '.join(map(str, cfg['seeds']))}; intervals are a two-level bootstrap over the seeds and "
               f"the test texts; {RULE}")
    out.append("frozen backbones stay in eval mode (no dropout inside them) so their states can be cached; the "
               "authors' trainer leaves them in train mode")
    out.append(f"CD-r over label pairs {cfg['cd_pairs']} and polarity classes by valence (surprise and calmness "
               "neutral): the paper's Fig. 3 and pair set are not in its text; spherical k-means starts from "
               "k-means++ seeded with data_seed (the paper: 10 initialisations, the lowest inertia kept)")
    if cfg.get("max_seq_length", 512) < 512:
        out.append(f"texts cut at {cfg['max_seq_length']} tokens (the authors' code: 512)")
    if any(run.labels for run, _ in _trained_runs(results)):
        out.append("label-count study: label subsets with evenly spread angles (ours: the paper's Fig. 10 is lost)")
    return out


__all__ = ["PAPER_STEPS", "SIZES", "TFLOPS", "TOKENS_PER_TEXT", "departures", "predicted_gpu_hours"]
