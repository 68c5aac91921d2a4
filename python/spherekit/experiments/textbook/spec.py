"""The spec of the textbook-chapter reproduction: its sections (the conditions), configuration, presets and
metric names.

Source: a textbook chapter on sentence embeddings, Section 31.1a ("From Words to Sentences; Bi-Encoders, Pooling,
Contrastive Training and Hard Negatives"). Every value the chapter states is declared with `paper(...)` (the doc
quotes where); every other value is a `choice(...)` whose doc says why. The chapter trains nothing at scale and
prints no outputs, so data sizes, training steps and search settings are all ours.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.config import choice, paper, runtime, selection
from ..api.metrics import MetricName
from ..api.plugin import Condition, Experiment, conditions_of
from ...training.trainer import TrainConfig
from .chapter import CITATION

SECTIONS: dict[str, str] = {
    "listings": "the chapter's code listings on the backbone: paraphrase vs unrelated cosine, MNRL function vs "
                "spherekit's fused loss, hard-negative mining on the 5-passage corpus",
    "concentration": "concentration of measure: std of random unit-vector cosines vs 1/sqrt(d); the backbone's "
                     "own cosine distribution (anisotropy) and relevant-vs-irrelevant gaps",
    "pooling": "CLS, mean and max pooling of the same backbone on the retrieval set",
    "losses": "MNRL vs triplet loss vs cosine-similarity loss, same data and steps, retrieval curve",
    "mining": "hard-negative mining rounds: BM25 negatives (round 1), then negatives mined by the trained model "
              "(round 2, a false-negative margin), vs random negatives; multi-word queries (WordNet example "
              "sentences)",
    "thresholds": "the cosine threshold reaching a target precision on labelled pairs vs the '0.7 rule of thumb'; "
                  "a threshold calibrated on one corpus used on another",
    "ann": "faiss IVF and HNSW vs exact search: recall@10 against speed-up; the setting reaching 95% recall",
    "order": "'the patient was treated by the doctor' vs its role swap: pooled cosine vs a verifier re-rank",
}
LOSSES = ("mnrl", "triplet", "cosine")
MINING_QUERIES = ("examples", "terms")
POOLINGS = ("cls", "mean", "max")


@dataclass(frozen=True)
class TextbookConfig:
    # what runs
    backbones: tuple = selection(("all-MiniLM-L6-v2",), "backbones (units) run; the listings load SentenceTransformer("
                                 "'sentence-transformers/all-MiniLM-L6-v2'), 'a 384-dim mean-pooled model'",
                                 paper=("all-MiniLM-L6-v2",))
    sections: tuple = selection(tuple(SECTIONS), "which sections (units) run")
    seeds: tuple = selection((0,), "seeds of the sections (training, negatives, random vectors, the verifier): the "
                                   "chapter sets none (its MNRL example is nondeterministic); ours")
    data_seed: int = choice(0, "seed of the data: the WordNet split, the sampled training pairs, distractors, ANN "
                               "set, near-miss set and the thresholds' labelled pairs")
    # listings (chapter code)
    listing_temperature: float = paper(0.05, "multiple_negatives_ranking_loss(..., temperature=0.05)")
    listing_batch: int = paper(4, "'batch_size, dim = 4, 384' in the MNRL example")
    listing_dim: int = paper(384, "'batch_size, dim = 4, 384' in the MNRL example")
    top_k: int = paper(30, "mine_hard_negatives(..., top_k=30, ...)")
    num_negatives: int = paper(5, "mine_hard_negatives(..., num_negatives=5)")
    # concentration of measure
    random_dims: tuple = choice((384, 768), "768 is the chapter's ('In 768-dim BERT, std dev ~ 0.036'); 384 is "
                                            "MiniLM's dimension")
    n_random_vectors: int = choice(2000, "random unit vectors per dimension (all pairs are used)")
    std_tolerance: float = choice(0.05, "relative tolerance for 'std ~ 1/sqrt(d)' to hold")
    gap_range: tuple = paper((0.1, 0.3), "'may differ ... by only 0.1-0.3 units'")
    # the offline retrieval set (WordNet: a term retrieves its definitions; headwords masked)
    n_test_synsets: int = choice(500, "held-out WordNet synsets: their terms are the queries, their glosses "
                                      "the relevant passages (decontaminated split, spherekit.data.splits)")
    n_distractors: int = choice(2000, "extra glosses of training synsets added to the retrieval corpus")
    n_train_pairs: int = choice(4000, "(query, gloss) training pairs sampled from the training split (terms; "
                                      "example sentences: one per synset)")
    n_example_synsets: int = choice(600, "held-out WordNet synsets with an example sentence: the first example of "
                                         "each is a multi-word query retrieving its synset's gloss (mining, "
                                         "thresholds); synsets sharing a lemma or gloss with them leave training")
    max_seq_length: int = choice(32, "tokens per text; terms and WordNet glosses are short")
    eval_k: int = choice(10, "R@k / MRR@k / nDCG@k of the retrieval set")
    # training (losses, mining rounds, pooling fine-tuning)
    steps: int = choice(60, "optimizer steps per training (one loss, one mining round); the chapter gives none")
    batch_size: int = choice(32, "rows per step (MNRL: 31 in-batch negatives per query)")
    lr: float = choice(5e-5, "AdamW learning rate; short runs")
    warmup_steps: int = choice(6, "linear warmup, then linear decay to 0")
    temperature: float = paper(0.05, "MNRL temperature: the listing's default (scale 20)")
    triplet_margin: float = choice(0.5, "TripletLoss margin, euclidean distance (sentence-transformers' default "
                                        "metric); the chapter names neither. Unit vectors are at most 2 apart, so "
                                        "the library's default margin 5 could never be met")
    curve_points: int = choice(4, "retrieval evaluated this many times along each loss's training")
    pooling_steps: int = choice(0, "MNRL steps per pooling after the frozen comparison (0: frozen only)")
    train_negatives: int = paper(5, "negatives per query in the mining rounds: num_negatives=5 of the listing")
    rounds: int = paper(2, "'starting with BM25 negatives ... then mining harder negatives with the trained model "
                           "for further fine-tuning rounds': BM25 round + one model-mined round")
    mining_queries: str = choice("examples", "queries of the mining section: 'examples' (a WordNet example sentence "
                                             "retrieves its synset's gloss: multi-word queries, so BM25 finds "
                                             "candidates) or 'terms' (a masked term retrieves its glosses: most "
                                             "BM25 negatives are then random top-ups)")
    mining_margin: float = choice(0.05, "relative_margin of sentence-transformers' mine_hard_negatives in the "
                                        "model-mined rounds: a candidate is kept only when cos(query, it) <= (1 - "
                                        "margin) cos(query, positive), against false negatives (NV-Retriever's "
                                        "TopK-PercPos 95%); 0: no margin, the listing's rule", at_least=0.0,
                                  at_most=1.0)
    reshuffle_rounds: bool = choice(True, "each mining round draws its own batch order (training seed + 1000 x "
                                          "round); False replays round 1's batches in every round (same rows, "
                                          "new negatives)")
    # thresholds
    rule_of_thumb: float = paper(0.7, "'use cosine similarity above 0.7' advice")
    target_precision: float = choice(0.9, "precision the calibrated threshold must reach")
    calibration_share: float = choice(0.5, "share of a corpus's queries whose labelled pairs calibrate its best-F1 "
                                           "threshold; the others measure it (the corpus-transfer check)",
                                      at_least=0.1, at_most=0.9)
    # approximate search
    ann_corpus: int = choice(20000, "WordNet glosses indexed")
    ann_queries: int = choice(500, "WordNet terms searched")
    ann_k: int = paper(10, "issue 13: recall@10 (the chapter only says '95%+ recall')")
    target_recall: float = paper(0.95, "'still achieve 95%+ recall'")
    ivf_nlist: int = choice(0, "IVF cells (0: 4 * sqrt(corpus size), faiss' rule of thumb)")
    ivf_nprobe: tuple = choice((1, 2, 4, 8, 16, 32, 64), "cells visited per query, swept")
    hnsw_m: int = choice(32, "HNSW links per node")
    hnsw_ef: tuple = choice((4, 8, 16, 32, 64, 128), "HNSW efSearch, swept")
    # order sensitivity
    verifier: str = choice("F3", "stage-2 verifier (spherekit.nn.verifiers): the CNN over the token similarity "
                                 "map, which sees token order; trained on near-misses (spherekit.data.nearmiss)")
    nearmiss_per_family: int = choice(200, "near-miss triplets per family (negation, binding, spatial)")
    verifier_epochs: int = choice(3, "verifier training epochs over the near-miss training part")
    # runtime
    eval_batch_size: int = runtime(64, "encoding batch size")
    logging_steps: int = runtime(5, "loss logging interval")

    def __post_init__(self):
        bad = [s for s in self.sections if s not in SECTIONS]
        if bad:
            raise ValueError(f"unknown section(s) {bad}; valid sections: {', '.join(SECTIONS)}")
        if self.num_negatives < 1 or self.top_k < self.num_negatives:
            raise ValueError(f"need 1 <= num_negatives <= top_k, got {self.num_negatives} and {self.top_k}")
        if not 0 < self.target_precision <= 1 or not 0 < self.target_recall <= 1:
            raise ValueError("target_precision and target_recall must lie in (0, 1]")
        if self.curve_points < 1 or self.rounds < 1:
            raise ValueError("curve_points and rounds must be >= 1")
        if self.mining_queries not in MINING_QUERIES:
            raise ValueError(f"mining_queries must be one of {MINING_QUERIES}, got {self.mining_queries!r}")

    def train_config(self, seed: int, steps: int | None = None) -> TrainConfig:
        steps = steps or self.steps
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=self.lr,
                           warmup_steps=min(self.warmup_steps, steps - 1), seed=seed, precision="auto",
                           save_steps=0, logging_steps=self.logging_steps)


PRESETS: dict[str, dict] = {
    # minutes on a 2-core CPU: MiniLM, every section, 3 seeds; 2 of the 5 mined negatives per training row (the
    # cpu preset trains on all 5, as the listing mines them); smaller corpora and 2 curve points keep 3 seeds
    # within about a quarter of an hour; losses logged every 2 steps for the "learned" rule
    "cpu-small": dict(seeds=(0, 1, 2), n_distractors=1000, n_train_pairs=2000, steps=30, batch_size=16,
                      warmup_steps=3, train_negatives=2, curve_points=2, logging_steps=2),
    # both offline backbones, larger sets, longer training, the listing's 5 negatives per row (hours on 2 cores;
    # all-mpnet-base-v2 is about 5x slower than MiniLM)
    "cpu": dict(backbones=("all-MiniLM-L6-v2", "all-mpnet-base-v2"), n_test_synsets=1000, n_distractors=5000,
                n_train_pairs=8000, steps=100, warmup_steps=10, curve_points=5, pooling_steps=40,
                ann_corpus=30000, ann_queries=1000, ivf_nprobe=(1, 2, 4, 8, 16, 32, 64, 128, 256),
                hnsw_ef=(4, 8, 16, 32, 64, 128, 256), nearmiss_per_family=400, n_example_synsets=1000),
    # the chapter's values (every `paper` field at its default: all-MiniLM-L6-v2 as in the listings, 5 mined
    # negatives per training row); the sizes and steps it leaves open are ours
    "paper": dict(),
    # seconds: the tests' preset (pass --backbone with a small local model)
    "tiny": dict(n_test_synsets=20, n_distractors=30, n_train_pairs=48, n_example_synsets=20, max_seq_length=24,
                 steps=2, batch_size=4, warmup_steps=1, lr=1e-3, curve_points=2, pooling_steps=2,
                 n_random_vectors=300, ann_corpus=400, ann_queries=20, ivf_nprobe=(1, 4), hnsw_ef=(4, 16), hnsw_m=8,
                 nearmiss_per_family=8, verifier_epochs=1, eval_batch_size=32, logging_steps=1),
}

# the chapter's own quantities (the retrieval metrics, cosine, anisotropy, F1, precision, recall, loss and Acc are
# the shared vocabulary's)
METRIC_NAMES = {name: MetricName(name, higher, doc) for name, higher, doc in (
    ("dimension", None, "embedding dimension of the backbone"),
    ("max abs diff", False, "largest |a - b| between two computations of the same value"),
    ("positives returned", False, "labelled positives among the mined negatives (0 when the miner is right)"),
    ("agrees", True, "whether two implementations return the same output (true / false)"),
    ("cosine std", None, "standard deviation of pairwise cosines"),
    ("relative error", False, "|std * sqrt(d) - 1| of random unit-vector cosines, the largest over the dimensions"),
    ("cosine gap", None, "cos(query, its best relevant passage) - cos(query, an irrelevant passage)"),
    ("share in gap range", None, "share of queries whose cosine gap lies in the chapter's range (gap_range)"),
    ("threshold", None, "a cosine threshold: a pair is a match when cos >= t"),
    ("count", None, "how many items were measured"),
    ("share", None, "a share of the items measured"),
    ("nprobe", None, "IVF cells visited per query"),
    ("efSearch", None, "HNSW candidate list size per query"),
    ("speed-up", True, "query time of exact search / query time of the approximate index (best of 3)"),
    ("share scanned", False, "share of the corpus whose distance to the query was computed (faiss' counters)"),
    ("correct", True, "how many examples rank the right passage first"),
)}


class TextbookExperiment(Experiment):
    """A unit is (backbone, section): each of the chapter's eight sections is resumable on its own. A section loads
    the backbone itself (several train fresh copies of it); trained models are not kept (the chapter's statements
    are about the measurements, and the copies would cost gigabytes)."""

    name = "textbook"
    title = "Sentence embeddings: bi-encoders, pooling, contrastive training, hard negatives (textbook 31.1a)"
    citation = CITATION
    config_class = TextbookConfig
    presets = PRESETS
    # ann reads no seed (exact and approximate search of fixed embeddings): it runs once, whatever the seeds
    conditions = conditions_of(*(Condition(name, what, seeded=name != "ann") for name, what in SECTIONS.items()))
    main_metric = "mnrl/R@10"
    summary_metrics = (("listing1/cosine (paraphrase)", "paraphrase cos"), ("frozen/mean/R@10", "mean-pooled R@10"),
                       ("mnrl/R@10", "MNRL R@10"), ("triplet/R@10", "triplet R@10"),
                       ("hard/round2/R@10", "hard-negative R@10"), ("random/round2/R@10", "random-negative R@10"),
                       ("best F1/F1", "best F1"), ("rule of thumb/F1", "F1 at 0.7"))
    metric_names = METRIC_NAMES
    noise_preset = "cpu-small"  # 3 seeds: the training noise a 1-seed card (cpu, paper) borrows

    def selected(self, cfg) -> list[str]:
        return list(cfg.sections)

    def select(self, names) -> dict:
        return {"sections": tuple(names)}


EXPERIMENT = TextbookExperiment()
