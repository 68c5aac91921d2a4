"""Reproduced: a textbook chapter on sentence embeddings (Section 31.1a: bi-encoders, pooling, contrastive
training with MNRL, hard-negative mining), its listings and statements measured offline.

    spherekit reproduce textbook --preset cpu-small     # every section on all-MiniLM-L6-v2, minutes on a CPU
    spherekit reproduce textbook --preset cpu           # MiniLM and all-mpnet-base-v2, larger sets

Modules: spec (sections, settings, presets, metric names), paper (the chapter's statements as claims, its one
printed number, departures), run (what the runner calls), chapter (the listings' inputs), data (the offline WordNet
retrieval set, training pairs, ANN corpus), evaluate (retrieval metrics), mining (BM25 / model / random negatives,
mining rounds), calibrate (thresholds), models (pooling, losses, training), sections/ (one module per section),
figures (the card's tables and plots).
"""
