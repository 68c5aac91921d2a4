"""Reproduced: DefSent+ (Liu 2024, arXiv:2405.16153): definition sentences projected into a frozen space of
dictionary-entry embeddings, progressive separate training, ICA of the entry space.

Modules: config (conditions, settings, presets), data (dictionaries a / b / c; TSV and kaikki), bank (AC / AMP
entry embeddings, poolings), ica (FastICA of a bank), train (one PST step), heldout (the offline evaluation
sets), evaluate (proxies, SentEval STS), geometry (Figures 1-7 numbers), paper (printed numbers), experiment
(what the runner calls), report and plots (the card).
"""

from .config import CONDITIONS, PRESETS, DefSentConfig
from .experiment import EXPERIMENT, DefSentExperiment

__all__ = ["CONDITIONS", "EXPERIMENT", "PRESETS", "DefSentConfig", "DefSentExperiment"]
