"""Reproduced: "Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via Hyperspherical
Contrastive Learning" (Yamauchi and Aizawa, ACL 2026): a hypersphere head (one GPT or nGPT block) over a
backbone's last hidden states, trained with SINCERE / SoftCSE / CircularCSE on emotion-labelled texts.

    spherekit reproduce circumplex --preset cpu-small     # the frozen grid on all-MiniLM-L6-v2, minutes on a CPU
    spherekit reproduce circumplex --preset cpu           # both regimes and the label-count study (hours)

Modules: spec (conditions, settings, presets, claim groups), paper (Table 1, the claims, departures), run (what the
runner calls), data (the balanced emotion split), models (encoder and objective of a condition), cache (a frozen
backbone's token states computed once, reused by every head trained on top of it), measure and evaluate
(V-measure, CD-r, label-pair cosines, PCA / MDS projections, the robustness sweeps), figures and plots (the card's
tables and figures), bench (`spherekit bench reproduce circumplex`).
"""
