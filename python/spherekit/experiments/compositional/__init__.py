"""Reproduced: "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" (Ralev, Baral,
Zhechev, Agarwal, Rajamohan, arXiv:2604.16351, 2026): Table 1 (Model A vs Model B with structural near-miss
negatives, zero-shot retrieval), Figure 1 (pooled cosines of near-misses), Figure 2 (re-ranking with the verifiers
F0-F4, frozen and end to end) and Figure 3 (verifier scores on held-out near-misses).

    spherekit reproduce compositional --preset cpu-small   # MiniLM, the paper's 3 seeds, F1 and F4, on a CPU
    spherekit reproduce compositional --preset cpu         # MiniLM and all-mpnet-base-v2, 3 seeds, F0-F4
    spherekit reproduce compositional --preset paper --data-dir DATA   # the released run (GPU, released files)

Modules: spec (conditions, settings, presets), paper (the claims and their noise rules), departures (where a run
departs from the paper), readings (the per-pair records), released (the released code's step and rate
tables), run (what the runner calls), data (offline WordNet/GCIDE analogue or the released files with --data-dir),
models (Model A/B and verifier training), evaluate (retrieval with per-query values, Figures 1 and 3), figures (the
card's tables and plots), bench (`spherekit bench reproduce compositional`: verifier training the released code's
way vs spherekit's).
"""
