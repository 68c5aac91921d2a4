"""Reproduced: "DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a
quasi-isotropic or isotropic vector space of unlimited dictionary entries" (Liu 2024, arXiv:2405.16153): definition
sentences projected into a frozen space of dictionary-entry embeddings, progressive separate training (PST), ICA of
the entry space.

    spherekit reproduce defsent --preset cpu-small      # base, the 1st step on dictionary c and DefSent, on a CPU
    spherekit reproduce defsent --preset paper          # Table 2 and Table 8's grid on BERT-base, ten seeds (GPU)

Modules: spec (conditions, settings, presets, metric keys), paper (the paper's printed numbers, claims, departures),
noise (the claims' two-level bootstrap over seeds and evaluation items; the loss a training must reach), run
(what the runner calls),
data (dictionaries a / b / c; the released TSV/CSV layout and kaikki), bank (AC / AMP entry embeddings, poolings),
mlm_head (DefSent's MLM head: the checkpoint's or fitted), ica (FastICA of a bank), train (one PST step), heldout
(the offline evaluation sets), evaluate (proxies, SentEval STS, per-item values), geometry (Figures 1-7 numbers),
figures (the card's tables and plots), bench (`spherekit bench reproduce defsent`).
"""
