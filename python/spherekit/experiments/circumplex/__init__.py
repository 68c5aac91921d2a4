"""Seed 003, "Mapping the Circumplex of Affect" (Yamauchi and Aizawa): a hypersphere head (one GPT or nGPT
block) over a backbone's last hidden states, trained with SINCERE / SoftCSE / CircularCSE on emotion-labelled
texts.

    models    build_model / build_loss / callbacks / to_uncached: the encoder and objective of one condition
    cache     TokenStateCache / CachedTokenStates: a frozen backbone's token states computed once, reused by
              every head trained on top of it (same trainer, same batches)
    evaluate  V-measure, CD-r, label-pair cosines, PCA / MDS projections and the robustness sweeps
    plots     the paper's figures as PNGs
    config, data, measure, paper, report, experiment: `spherekit reproduce circumplex` (EXPERIMENT)
"""

from .experiment import EXPERIMENT

__all__ = ["EXPERIMENT"]
