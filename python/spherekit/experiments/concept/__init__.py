"""Seed 000 reproduced: "Principles of Concept Representation in Sentence Encoders" (Mohr, Dujany, Souquet,
Freitas, arXiv:2606.06994, 2026): concept-equivalence fine-tuning of a sentence encoder under ten
conditions (Table 1 + appendix F), evaluated on decontaminated WordNet splits.

    spherekit reproduce concept --preset cpu-small      # B0, B1, B3 on all-MiniLM-L6-v2, minutes on a CPU
    spherekit reproduce concept --preset paper          # every condition on all-mpnet-base-v2, 8k steps (GPU)

Modules: config (conditions, settings, presets), data (training rows, evaluation sets), models (readouts,
objective), evaluate (all suites on shared embeddings), paper (the paper's printed numbers and claims),
report (the card's tables and plots), experiment (what the runner calls).
"""

from .config import CONDITIONS, PRESETS, Condition, ConceptConfig
from .experiment import ConceptExperiment

EXPERIMENT = ConceptExperiment()

__all__ = ["CONDITIONS", "PRESETS", "Condition", "ConceptConfig", "ConceptExperiment", "EXPERIMENT"]
