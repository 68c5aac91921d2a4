"""The spec of the "Compositional Sensitivity" reproduction: its conditions, configuration, presets and main metric.

Source: Ralev, Baral, Zhechev, Agarwal, Rajamohan. "Training for Compositional Sensitivity Reduces Dense Retrieval
Generalization". arXiv:2604.16351 (2026). Every value the paper (or, where the text is silent, its released code
radoslavralev/limitations-text-retrieval) fixes is a `paper(...)` field whose doc says where; every other value is
a `choice(...)` whose doc says why. The verifier conditions are selected by two fields: `conditions` and
`verifiers` (a <regime>_<F> condition runs when both name it). The `paper` preset is the released code's run: the
four backbones, batch 128 and its step table (released.py), three seeds; its data are the released files
(`--data-dir`, data.py), which this machine does not have.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.config import choice, paper, runtime, selection
from ..api.plugin import Condition, Experiment, conditions_of
from . import released

VERIFIER_NAMES = ("F0", "F1", "F2", "F3", "F4")
REGIMES = ("frozen", "e2e")
REGIME_TEXT = {"frozen": "frozen encoder (only the verifier trains)", "e2e": "end to end"}
METRICS = ("nDCG@10", "MRR@10", "Acc@1", "Acc@10")
ITEM_METRICS = ("nDCG@10", "MRR@10", "Acc@1")  # kept per query for the claims' two-level bootstrap
PAPER_BACKBONES = ("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L12-v2",
                   "thenlper/gte-small", "Alibaba-NLP/gte-modernbert-base")
MINILM = ("all-MiniLM-L6-v2",)
CONDITIONS = conditions_of(
    Condition("base", "the untuned backbone (Table 1's base row; stage 1 of the frozen regime)"),
    Condition("model_a", "Model A: MNRL on the (query, passage, negative) retrieval triplets only (Table 1, Figure 1)"),
    Condition("model_b", "Model B: the same steps on the mixture with 19.2% structural near-miss triplets (s, s, s~)"),
    *(Condition(f"{r}_{v}", f"verifier {v}, {REGIME_TEXT[r]} (Figures 2 and 3)", params={"regime": r, "verifier": v})
      for r in REGIMES for v in VERIFIER_NAMES))


def check_verifiers(names) -> tuple[str, ...]:
    bad = [v for v in names if v not in VERIFIER_NAMES]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; valid verifiers: {', '.join(VERIFIER_NAMES)}")
    return tuple(names)


@dataclass(frozen=True)
class CompositionalConfig:
    # what runs
    backbones: tuple = selection(PAPER_BACKBONES, "sec. 3.1: MiniLM-L6/L12, gte-small, gte-modernbert-base; offline "
                                 "only all-MiniLM-L6-v2 (exact) and all-mpnet-base-v2 (the larger substitute) exist",
                                 paper=PAPER_BACKBONES)
    conditions: tuple = selection(tuple(CONDITIONS), "which conditions run (base, model_a, model_b, <regime>_<F>)")
    verifiers: tuple = selection(VERIFIER_NAMES, "which verifiers' conditions run (sec. 3.2: F0-F4)",
                                 paper=VERIFIER_NAMES)
    seeds: tuple = selection((42, 43, 44), "training seeds (D.3: 'Primary seed is 42. Multi-seed results use seeds "
                             "{42,43,44}')", paper=(42, 43, 44))
    data_seed: int = choice(0, "data sampling seed (the paper's splits are fixed files)")
    data_dir: str | None = choice(None, "None: the offline WordNet/GCIDE analogue; a folder with the released files "
                                        "(nq_triplets_100k.csv, unified_negatives_{train,test,full}.csv, "
                                        "unified_negatives_with_nq_train.csv) and nanobeir/ (BEIR layout), see data.py")
    # data
    n_train_triplets: int = paper(100_000, "D.1: 100,000 NQ triplets")
    structural_fraction: float = paper(0.192, "D.1: 23,857 of 123,856 triplets (19.2%) are structural")
    nearmiss_per_family: int = paper(9940, "D.1: 9,940 pairs per category")
    test_fraction: float = paper(0.2, "D.1: pairs split 80/20, the 20% held out for the synthetic test")
    queries_per_set: int = paper(50, "NanoBEIR sets have 50 queries each")
    corpus_per_set: int = choice(3000, "NanoBEIR corpora hold 2k-10k documents; the offline sets hold this many")
    suite_sets: tuple = choice(("wn-examples", "wn-reverse", "wn-hypernym", "gcide-defs"),
                               "the offline NanoBEIR analogue (data.py): usage question -> sense entry, definition -> "
                               "lemma names, entry -> hypernym entry, GCIDE definition -> WordNet senses")
    n_reference_pairs: int = paper(10_000, "Figure 1: 10k held-out positives and 10k negatives")
    hist_bins: int = paper(40, "released code: 40-bin histograms on [0, 1]")
    # Model A / B (Table 1)
    scale: float = paper(10.0, "D.3: MNRL temperature 0.1 (code: scale=10.0)")
    batch_size: int = paper(128, "D.3: 'batch size 64 (and 128 in selected runs)'; the released run_experiments.sh "
                                 "ran every Model A/B at 128, the batch its step table assumes")
    steps: int = paper(0, "optimizer steps of Model A/B; 0: the released code's table, budget x its L4 throughput for "
                          "the encoder's size / batch, at least min_steps (3,375 MiniLM-L6, 2,250 MiniLM-L12 and "
                          "gte-small, 500 gte-modernbert-base at batch 128; released.py)",
                   means="the released code's step table")
    time_budget_s: float = paper(240.0, "code: TIME_MINUTES=4 per configuration (the step tables' budget)")
    min_steps: int = paper(500, "code: at least 500 iterations")
    warmup_ratio: float = paper(0.1, "D.3: warmup ratio 0.1, linear decay")
    max_seq_length: int = paper(128, "D.2: max length 128")
    # verifiers (Figures 2-3)
    top_k: int = paper(100, "D.4: stage 1 retrieves the top-100")
    verifier_lr: float = paper(1e-4, "D.3: verifier LR 1e-4")
    verifier_weight_decay: float = paper(0.01, "code: 0.01 for F3/F4")
    verifier_batch_light: int = paper(128, "D.3: batch 128 for F0-F2")
    verifier_batch_heavy: int = paper(32, "D.3: batch 32 for F3-F4")
    verifier_steps: int = paper(0, "verifier steps; 0: the released code's table, budget x its throughput for the "
                                   "regime, verifier and encoder size / batch (released.py)",
                            means="the released code's step table")
    released_steps: tuple = choice((), "verifier conditions (<regime>_<F>) that train for the released code's step "
                                   "count whatever verifier_steps and this config's verifier batches: its table for "
                                   "the encoder's size at its own batches (128 for F0-F2, 32 for F3-F4; for < 50M "
                                   "frozen F3 375 / F4 1,500, end to end F0-F2 825 / F3 412 / F4 1,125; released.py), "
                                   "trained at this config's batch: the runs that decide the claims a card's "
                                   "undertrained verifiers leave open (undertrained.py; the card's departures name "
                                   "them)")
    verifier_scale: float = paper(10.0, "code: MNRL over verifier scores with MNRL_TEMPERATURE=0.1")
    map_size: int = paper(128, "code: maps padded / cut to 128 x 128 (the max length)")
    f2_lam: float = paper(0.1, "code: lam = 0.1")
    f2_tau: float = paper(0.1, "code: tau = 0.1")
    f3_channels: int = paper(128, "code: Conv 3->128->256, k 3, MLP 128")
    f4_patch: int = paper(8, "code: 8 x 8 patches")
    f4_ff: int = paper(32, "code: 1 pre-norm layer, 1 head, feed-forward 32, width = the encoder's")
    # runtime
    eval_batch_size: int = runtime(32, "D.4: evaluation batch size 32")
    logging_steps: int = runtime(10, "loss logging interval")

    def __post_init__(self):
        check_verifiers(self.verifiers)
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad:
            raise ValueError(f"unknown condition(s) {bad}; valid conditions: {', '.join(CONDITIONS)}")
        bad = [c for c in self.released_steps if c not in CONDITIONS or not verifier_of(c)]
        if bad:
            raise ValueError(f"released_steps: {bad} are not verifier conditions (<regime>_<F>: "
                             f"{', '.join(c for c in CONDITIONS if verifier_of(c))})")
        if not 0 < self.structural_fraction < 1 or not 0 < self.test_fraction < 1:
            raise ValueError("structural_fraction and test_fraction must lie in (0, 1)")
        if self.map_size % self.f4_patch or self.map_size < self.max_seq_length:
            raise ValueError(f"map_size ({self.map_size}) must be a multiple of f4_patch ({self.f4_patch}) and at "
                             f"least max_seq_length ({self.max_seq_length})")

    def verifier_batch(self, name: str) -> int:
        return self.verifier_batch_heavy if name in ("F3", "F4") else self.verifier_batch_light


PRESETS: dict[str, dict] = {
    # the released code's run (GPU; the released data with --data-dir): every default
    "paper": dict(),
    # hours on 2 cores: both offline backbones, 3 seeds, every verifier in both regimes, 64-token maps; enough
    # near-miss pairs for the 19.2% share of 8,000 triplets (1,901 structural triplets)
    "cpu": dict(backbones=("all-MiniLM-L6-v2", "all-mpnet-base-v2"), n_train_triplets=8000, nearmiss_per_family=1100,
                corpus_per_set=2000, n_reference_pairs=2000, batch_size=32, steps=150, max_seq_length=64,
                map_size=64, verifier_batch_light=64, verifier_batch_heavy=16, verifier_steps=60, f3_channels=32),
    # minutes on 2 cores: MiniLM, the paper's 3 seeds, small sets, F1 and F4 only
    "cpu-small": dict(backbones=MINILM, verifiers=("F1", "F4"), n_train_triplets=1200, nearmiss_per_family=150,
                      corpus_per_set=400, suite_sets=("wn-examples", "wn-reverse", "wn-hypernym"),
                      n_reference_pairs=300, batch_size=16, steps=25, max_seq_length=32, map_size=32,
                      verifier_batch_light=16, verifier_batch_heavy=16, verifier_steps=20),
    # seconds: the tests' preset (pass --backbone with a small local model)
    "tiny": dict(backbones=MINILM, seeds=(42,), verifiers=("F1", "F4"), n_train_triplets=40, nearmiss_per_family=6,
                 queries_per_set=6, corpus_per_set=30, suite_sets=("wn-examples", "wn-reverse"), n_reference_pairs=20,
                 batch_size=4, steps=2, max_seq_length=16, map_size=16, verifier_batch_light=4, verifier_batch_heavy=4,
                 verifier_steps=2, f4_patch=4, logging_steps=1),
}

CITATION = """@misc{ralev2026compositional,
    title = {Training for Compositional Sensitivity Reduces Dense Retrieval Generalization},
    author = {Radoslav Ralev and Aditeya Baral and Iliya Zhechev and Jen Agarwal and Srijith Rajamohan},
    year = {2026},
    eprint = {2604.16351},
    archivePrefix = {arXiv},
}"""


def verifier_of(condition: str) -> str | None:
    """"frozen_F4" -> "F4"; None for base, model_a, model_b."""
    params = CONDITIONS[condition].params
    return params["verifier"] if params else None


def released_verifier_steps(n_params: int, regime: str, name: str) -> int:
    """The released code's step count for a verifier: its table at its own batches (128 for F0-F2, 32 for F3-F4) and
    its 4-minute budget, whatever a config's batches and time_budget_s (released.verifier_steps)."""
    code = CompositionalConfig()
    return released.verifier_steps(n_params, regime, name, code.verifier_batch(name), code.time_budget_s)


class CompositionalExperiment(Experiment):
    name = "compositional"
    title = "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization (Ralev et al. 2026)"
    citation = CITATION
    config_class = CompositionalConfig
    presets = PRESETS
    conditions = CONDITIONS
    main_metric = "nDCG@10"
    summary_metrics = tuple((m, m) for m in METRICS)
    noise_preset = "cpu"  # 3 seeds, every verifier: the training noise a 1-seed card of its claims borrows

    def undertrained(self, scope, condition: str) -> str | None:
        """A trained verifier at chance or re-ranking below its own stage 1 (undertrained.why)."""
        from .undertrained import why

        return why(scope, condition)

    def unit_config(self, cfg, condition: str):
        """released_steps concerns only the verifier conditions it names: each unit's fingerprint sees the condition
        itself or nothing, so that training chosen verifiers at the released counts redoes those alone."""
        from dataclasses import replace

        return replace(cfg, released_steps=tuple(c for c in cfg.released_steps if c == condition))

    def selected(self, cfg) -> list[str]:
        """The conditions of cfg.conditions, less the verifier conditions whose verifier is not in cfg.verifiers."""
        return [c for c in CONDITIONS if c in cfg.conditions and verifier_of(c) in (None, *cfg.verifiers)]

    def select(self, names) -> dict:
        """Config overrides running exactly `names`: those conditions, and the verifiers they name."""
        return {"conditions": tuple(names),
                "verifiers": tuple(v for v in VERIFIER_NAMES if v in {verifier_of(n) for n in names})}


EXPERIMENT = CompositionalExperiment()
