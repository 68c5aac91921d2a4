"""Reproduced: "Principles of Concept Representation in Sentence Encoders" (Mohr, Dujany, Souquet, Freitas,
arXiv:2606.06994, 2026): concept-equivalence fine-tuning of a sentence encoder under ten conditions (Table 1 +
appendix F), evaluated on decontaminated WordNet splits, with appendix G's hard negatives (random swaps, every
generated negative used once, empty slots masked), plus our own conditions: M1-last (a layer mix started on the last
layer) and the forms of B1 that test what decides its claims (B1-biased / B1-negonly: the BCE form; B1-bce5 /
B1-bce1: its strength; B1-nearest: nearest-swap negatives, which the stress tests also report as a harder split).

    spherekit reproduce concept --preset cpu-small      # B0, B1, B3 x 3 seeds on all-MiniLM-L6-v2, minutes on a CPU
    spherekit reproduce concept --preset paper          # every condition on all-mpnet-base-v2, 8k steps (GPU)

Modules: spec (conditions, settings, presets), paper (the paper's printed numbers, claims, departures), noise (the
claims' two-level bootstraps of ROC-AUCs, geometry and per-layer gaps), run (what the runner calls), data (training
rows, evaluation sets), models (readouts, objective), evaluate (all suites on shared embeddings, per-item values),
figures (the card's tables and plots), bench (`spherekit bench reproduce concept`).
"""
