"""The spec of the DefSent+ reproduction: its conditions, configuration, presets, metric keys and main metric.

Source: Liu, "DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a
quasi-isotropic or isotropic vector space of unlimited dictionary entries", arXiv:2405.16153 (2024).

A condition is one step of progressive separate training (PST) on one dictionary:

    base                 the starting encoder, untrained (the baseline row; not seeded: one run)
    1st-<d>              1st Training on dictionary d (a, b or c) with the config's (pooling, bank) combination
    2nd-<d>, 3rd-<d>     the next steps: bank built by the best run of the previous step (dev proxy), weights restarted
    2nd-<d>-ica, 3rd-<d>-ica   the same step with the ICA-transformed bank (appendix A)
    1st-<d>-<pool>-<bank>      Table 8's grid: 1st Training with another (training pooling, bank) combination
    2nd-<d>-<pool>-<bank>, 3rd-<d>-<pool>-<bank>   the PST chain continued from that grid cell (the paper continues
                         from the 1st step's grid winner; the plain 2nd-<d>, 3rd-<d> continue the config's cell)
    1st-<d>-printed      1st Training with the training path as printed for a BERT backbone (its own pooler, dense +
                         tanh, as it is), beside a run whose config puts the MLM head's dense layer in the pooler
                         (the paper's rule for RoBERTa; a departure for a BERT-type backbone: DefSentConfig.pooler)
    1st-c-<pool>-word    DefSent's setting, the baseline of Table 2: dictionary c, the sentence vector through
                         DefSent's MLM head, a softmax over the whole vocabulary (mlm_head; bank.word_bank for the
                         older pooler regime)
    1st-<d>-lr<rate>     1st Training with the config's cell at another learning rate (SWEEP_LRS): Table 3's LR
                         tuned per start (Table 5: 1e-6 to 3e-5 for the sentence-trained starts), chosen on the dev
                         proxy (paper.CLAIMS' T3-LR); the bank is the 1st step's, from the original backbone

A run is one seed of a condition; the runner runs a step's previous step first (Condition.requires).
Every value the paper states is a `paper(...)` field (the doc says where); every other value is a `choice(...)`.

A backbone's start (BACKBONE_STARTS, by its slug) says how it was trained before DefSent+: a raw MLM checkpoint
(Table 2's, Table 8's and Figures 1-2's premise: BERT / RoBERTa as pre-trained) or a sentence-trained encoder (Table
3's premise: SimCSE, SNCSE, SynCSE), and whether its weights went through MLM pre-training (the [MASK] state Prompt
pooling reads). Each claim that presumes a start runs only on a backbone of that start (paper.CLAIM_STARTS); a
backbone not declared here runs every claim, and the card says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..api.config import choice, paper, runtime, selection
from ..api.plugin import Condition, Experiment, conditions_of, slug

CITATION = """
@article{liu2024defsentplus,
  title={DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a
         quasi-isotropic or isotropic vector space of unlimited dictionary entries},
  author={Liu, Xiaodong},
  journal={arXiv preprint arXiv:2405.16153},
  year={2024}
}
"""

STEPS = ("1st", "2nd", "3rd")
DICTIONARIES = {"a": "GCIDE and WordNet merged (the paper's Oxford + WordNet)",
                "b": "GCIDE alone (the paper's full Oxford)",
                "c": "GCIDE entries that are single tokens of the backbone's vocabulary (the paper's DefSent setting)"}
TRAIN_POOLINGS = ("cls", "mean")
BANKS = ("amp", "ac")
WORD_BANK = "word"  # DefSent's bank (dictionary c only): the backbone's input embeddings of the entries' tokens
WHITENINGS = ("arbitrary-variance", "unit-variance")
DEFSENT_HEADS = ("mlm", "pooler")
POOLERS = ("backbone", "mlm-dense")

# metric keys (spherekit.experiments.api.metrics): "<key> (<pooling>)" per evaluation pooling, and "(best)" for the
# pooling with the highest dev proxy
POOLINGS = ("cls", "mean", "prompt")
SIM = "wordnet-sim/avg/Spearman"          # the STS analogue on WordNet glosses (test anchors), x 100
DEV_SIM = "dev/wordnet-sim/avg/Spearman"  # the same on the dev anchors: chooses the pooling and the best seed
CROSS_MRR = "cross-dictionary/MRR"        # WordNet gloss -> GCIDE definitions of the same term, x 100
PROBE = "probe/avg/Acc"                   # transfer probes (the SentEval analogue), %
STS = "sts/avg/Spearman"                  # SentEval's STS (with --data-dir), x 100


RAW_MLM, SENTENCE_TRAINED = "raw-mlm", "sentence-trained"
START_KINDS = (RAW_MLM, SENTENCE_TRAINED)


@dataclass(frozen=True)
class Start:
    """How a backbone was trained before DefSent+. kind: RAW_MLM (a pre-trained MLM checkpoint, nothing after) or
    SENTENCE_TRAINED (trained on sentence pairs after its pre-training); mlm: its weights went through MLM
    pre-training (they hold a learned [MASK] state); source: where that is stated."""

    kind: str
    mlm: bool
    source: str

    def __post_init__(self):
        if self.kind not in START_KINDS:
            raise ValueError(f"a start's kind must be one of {START_KINDS}, got {self.kind!r}")


_SIMCSE = "Table 3's starts: unsupervised SimCSE (Gao et al. 2021), contrastive training of the MLM checkpoint"
_SYNCSE = "Table 3's starts: SynCSE-partial (Zhang et al. 2023), contrastive training of the MLM checkpoint"
_ST = ("its sentence-transformers model card: {base} fine-tuned with a contrastive objective on 1B sentence pairs")
# by the backbone's slug (plugin.slug: the last part of a hub name or a path)
BACKBONE_STARTS = {
    "bert-base-uncased": Start(RAW_MLM, True, "sec. 4.1 (raw pre-trained models); Devlin et al. 2019: MLM + NSP"),
    "bert-large-uncased": Start(RAW_MLM, True, "sec. 4.1 (raw pre-trained models); Devlin et al. 2019: MLM + NSP"),
    "roberta-base": Start(RAW_MLM, True, "sec. 4.1 (raw pre-trained models); Liu et al. 2019: MLM"),
    "roberta-large": Start(RAW_MLM, True, "sec. 4.1 (raw pre-trained models); Liu et al. 2019: MLM"),
    "unsup-simcse-bert-base-uncased": Start(SENTENCE_TRAINED, True, _SIMCSE),
    "unsup-simcse-bert-large-uncased": Start(SENTENCE_TRAINED, True, _SIMCSE),
    "unsup-simcse-roberta-base": Start(SENTENCE_TRAINED, True, _SIMCSE),
    "unsup-simcse-roberta-large": Start(SENTENCE_TRAINED, True, _SIMCSE),
    "SynCSE-partial-RoBERTa-base": Start(SENTENCE_TRAINED, True, _SYNCSE),
    "SynCSE-partial-RoBERTa-large": Start(SENTENCE_TRAINED, True, _SYNCSE),
    "all-MiniLM-L6-v2": Start(SENTENCE_TRAINED, False, _ST.format(
        base="nreimers/MiniLM-L6-H384-uncased (MiniLM, Wang et al. 2020: distilled from a teacher's self-attention, "
             "no MLM objective, no MLM head)")),
    "all-mpnet-base-v2": Start(SENTENCE_TRAINED, True, _ST.format(
        base="microsoft/mpnet-base (MPNet, Song et al. 2020: masked and permuted pre-training)")),
}


def start_of(backbone: str) -> Start | None:
    """The declared start of a backbone (a hub name, a path or its slug); None when it is not declared."""
    return BACKBONE_STARTS.get(slug(backbone))


# Table 3's LR tuned per start: the 1st step's rates swept (conditions 1st-<d>-lr<rate>), inside Table 5's range for
# the sentence-trained starts (1e-6 .. 3e-5); the rate with the best dev proxy is the one judged (paper: T3-LR)
SWEEP_LRS = (1e-6, 3e-6, 1e-5, 2e-5)


def lr_label(lr: float) -> str:
    """1e-06 -> "1e-6", 2e-05 -> "2e-5" (the suffix of a sweep condition)."""
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def sweep_condition(dictionary: str, lr: float) -> str:
    return f"1st-{dictionary}-lr{lr_label(lr)}"


def pooled(key: str, pooling: str = "best") -> str:
    return f"{key} ({pooling})"


def reverse_dictionary_key(k: int) -> str:
    """Reverse dictionary (trained steps only): held-out definitions ranked over the bank, accuracy@k in %."""
    return f"reverse-dictionary/Acc@{k}"


def best_run(runs: list[dict]) -> dict:
    """The best run of a unit (records with "seed" and "metrics"): the highest dev proxy (NaN lowest), ties to the
    lowest seed. Its encoder builds the next PST step's bank, and it alone keeps its checkpoint."""
    def rank(run):
        dev = run["metrics"].get(pooled(DEV_SIM))
        return (-math.inf if dev is None or math.isnan(dev) else dev, -(run["seed"] or 0))

    return max(runs, key=rank)


@dataclass(frozen=True)
class Step:
    """The params of a condition: its PST step (0 = base), dictionary, ICA bank, (pooling, bank) of Table 8's
    grid (None: the config's) and learning rate (None: the config's; a 1st step of the LR sweep otherwise)."""

    step: int
    dictionary: str | None
    ica: bool = False
    combination: tuple | None = None
    printed: bool = False
    lr: float | None = None  # a sweep condition's learning rate (None: the config's lrs)

    @property
    def word_bank(self) -> bool:
        """DefSent's setting: trained against the backbone's word-embedding bank (the baseline of Table 2)."""
        return bool(self.combination) and self.combination[1] == WORD_BANK

    @property
    def previous(self) -> str | None:
        """The condition whose best run builds this one's bank (None: the original backbone): the previous step of
        the same chain (the config's cell, or a grid cell's)."""
        if self.step <= 1:
            return None
        return f"{STEPS[self.step - 2]}-{self.dictionary}{self.chain_suffix}"

    @property
    def chain_suffix(self) -> str:
        """"-<pool>-<bank>" for the chain of a grid cell, "" for the config's."""
        return f"-{self.combination[0]}-{self.combination[1]}" if self.combination else ""


def _steps() -> dict[str, Step]:
    """Every condition in report order: base, DefSent's word banks, then dictionaries c, b, a (Table 2's order)."""
    out = {"base": Step(0, None)}
    for pool in TRAIN_POOLINGS:
        out[f"1st-c-{pool}-{WORD_BANK}"] = Step(1, "c", combination=(pool, WORD_BANK))
    for d in ("c", "b", "a"):
        for k, step in enumerate(STEPS, 1):
            out[f"{step}-{d}"] = Step(k, d)
            if k > 1:
                out[f"{step}-{d}-ica"] = Step(k, d, ica=True)
        out[f"1st-{d}-printed"] = Step(1, d, printed=True)
        for lr in SWEEP_LRS:
            out[sweep_condition(d, lr)] = Step(1, d, lr=lr)
        for pool in TRAIN_POOLINGS:
            for bank in BANKS:
                for k, step in enumerate(STEPS, 1):
                    out[f"{step}-{d}-{pool}-{bank}"] = Step(k, d, combination=(pool, bank))
    return out


STEP_OF = _steps()


def _describe(s: Step) -> str:
    if s.step == 0:
        return "the starting encoder, untrained: the baseline of every proxy"
    if s.word_bank:
        return (f"DefSent (the baseline of Table 2): 1st Training on dictionary c with {s.combination[0]} pooling "
                "through DefSent's MLM head over the whole vocabulary")
    what = f"{STEPS[s.step - 1]} Training of PST on dictionary {s.dictionary}"
    if s.combination:
        what += f" with (pooling, bank) = ({s.combination[0]}, {s.combination[1]}) (Table 8 grid" + \
            (")" if s.step == 1 else "'s chain)")
    if s.printed:
        what += ", the backbone's own pooler as printed for BERT"
    if s.lr is not None:
        what += f" at learning rate {lr_label(s.lr)} (the LR sweep of Table 3's starts)"
    if s.previous:
        what += f", bank built by the best run of {s.previous}"
    return what + (", ICA-transformed bank" if s.ica else "")


@dataclass(frozen=True)
class DefSentConfig:
    # what runs
    backbones: tuple = selection(("bert-base-uncased",), "backbones (units) run; sec. 4.1: BERT-base-uncased (also "
                                 "BERT-large, RoBERTa-base/large; pass --backbone)", paper=("bert-base-uncased",))
    conditions: tuple = selection(("base", "1st-c", "1st-c-cls-word", "1st-b", "1st-a", "2nd-a", "3rd-a", "3rd-a-ica",
                                   "1st-a-mean-amp", "1st-a-cls-ac", "1st-a-mean-ac"),
                                  "which conditions run (a step's previous step runs first). Default: Table 2 "
                                  "(DefSent's word bank re-run on c beside it) and the rest of Table 8's grid on a")
    seeds: tuple = selection(tuple(range(10)), "training seeds, one run each; the best run of a step on the dev "
                             "proxy builds the next step's bank (the paper gives no seed values)",
                             paper=tuple(range(10)))  # sec. 4: 'training for each encoder with 10 runs'
    data_dir: str | None = choice(None, "the paper's own data: <dir>/{a,b,c}.tsv (entry<TAB>def1<|list_more_def|>"
                                        "def2) or {a,b,c}.jsonl[.gz] (kaikki), SentEval's STS under <dir>")
    # method
    training_pooling: str = paper("cls", "Table 8: (CLS, AMP) is BERT-base's optimum on dictionary a")
    bank_kind: str = paper("amp", "Table 8: (CLS, AMP) is BERT-base's optimum; eq. 2 (AC: [CLS] state, AMP: masked "
                                  "mean with special tokens)")
    lrs: tuple = paper((5e-5, 4e-5, 3e-5), "Table 5, BERT-base: 1st 5e-5, 2nd 4e-5, 3rd 3e-5 (a step's LR is never "
                                           "larger than the previous step's)")
    batch_size_a: int = paper(32, "appendix A: batch 32 for dictionary a")
    batch_size_bc: int = paper(16, "appendix A: batch 16 for dictionaries b and c")
    max_seq_length: int = paper(150, "released code: max_seq_length=150 (Table 1's longest definition is 141)")
    adam_eps: float = paper(1e-6, "released code: AdamW(eps=1e-6), weight decay 0, no warmup, linear decay, clip 1")
    max_grad_norm: float = paper(1.0, "released code: clip_grad_norm_(..., 1.0)")
    pooler: str = paper("backbone", "sec. 3.2: BERT's pretrained pooler (dense + tanh) as it is ('backbone'; a "
                                    "RoBERTa-type backbone always gets its LM head's dense layer + GELU). 'mlm-dense': "
                                    "the MLM head's dense layer + GELU in the pooler, the paper's rule for a pooler "
                                    "without NSP training, applied to a BERT-type backbone whose pooler was never "
                                    "trained (a departure)")
    defsent_head: str = paper("mlm", "DefSent's code (Tsukagoshi et al. 2021): the frozen MLM head (dense + GELU + "
                                     "LayerNorm, decoder tied to the word embeddings, with its bias) over the whole "
                                     "vocabulary; 'pooler': the pooler over the dictionary's word rows (the older "
                                     "regime of this reproduction)")
    mlm_head_texts: int = choice(4000, "definitions whose masked tokens fit the MLM head (DefSent's head; the "
                                       "'mlm-dense' pooler) when the checkpoint has none (mlm_head.fit_head)")
    mlm_head_steps: int = choice(200, "AdamW steps (lr 1e-3, 256 masked tokens) of that fit")
    seed_selection: str = choice("dev", "the best run of a step (whose encoder builds the next bank) is chosen on "
                                        "the dev half of the WordNet-similarity proxy; the paper chose on the STS "
                                        "test sets")
    # ICA (appendix A)
    ica_whiten: str = paper("arbitrary-variance", "appendix A: output 'about 1% of the original scale', times 100: "
                                                  "FastICA's old default whitening (the released script uses "
                                                  "'unit-variance', about 400x larger)")
    ica_prescale: bool = paper(False, "appendix A names only FastICA (the released script adds a StandardScaler)")
    ica_max_iter: int = paper(1000, "appendix A: max_iter 1000 ('10000 or 200 is not effective')")
    ica_tol: float = paper(1e-4, "scikit-learn's default tol (appendix A: 'almost every setting is default')")
    ica_random_state: int = paper(42, "appendix A: random_state 42")
    ica_scale: float = paper(100.0, "appendix A: 'multiply the matrix by 100'")
    ica_fit_rows: int = choice(0, "rows FastICA is fitted on (0: every entry, as the paper); then applied to "
                                  "all, at the scale of a fit on every entry")
    prompt: str = paper('This sentence : "{sentence}" means {mask} .',
                        "sec. 3.2 Prompt pooling; exact string of the released code (mask = the model's mask token)")
    # data (offline analogues of the paper's dictionaries; Table 1)
    max_entries: int = choice(0, "entries kept per dictionary (0: all, as the paper); a random subset otherwise")
    max_definitions_per_entry: int = choice(0, "definitions kept per entry (0: all)")
    train_definitions: int = choice(0, "(entry, definition) pairs per epoch, the same count for every dictionary "
                                       "(0: train_fraction decides; else a random subsample per seed, every entry "
                                       "stays in the bank)")
    train_fraction: float = choice(1.0, "share of each dictionary's pairs per epoch, the same for every dictionary "
                                        "(1: a full epoch, as the paper; else a random subsample per seed)")
    mask_headword: bool = choice(False, "definitions as printed (the paper masks nothing)")
    # offline evaluation proxies (none in the paper)
    n_heldout_terms: int = choice(400, "WordNet-and-GCIDE terms held out of every dictionary for cross-dictionary "
                                       "definition retrieval (WordNet gloss -> GCIDE definitions)")
    n_sim_anchors: int = choice(200, "WordNet noun/verb synsets whose neighbourhoods (hypernym, siblings, hyponyms) "
                                     "form the graded-similarity set; their glosses are held out of training")
    n_sim_pairs: int = choice(2000, "synset pairs per part of speech, half dev (seed selection), half test")
    n_reverse: int = choice(500, "held-out definitions (one per entry with several) for reverse-dictionary Acc@k")
    n_probe: int = choice(1000, "sentences per transfer probe (WordNet example sentences)")
    probe_folds: int = paper(10, "sec. 5: SentEval's default configuration, 10-fold cross-validation")
    data_seed: int = choice(0, "seed of the held-out splits, the dictionaries' subsamples and the proxies' sampling")
    # runtime
    encode_batch_size: int = runtime(64, "batch size of bank building and evaluation encoding")
    logging_steps: int = runtime(10, "loss logging interval")

    def __post_init__(self):
        bad = [c for c in self.conditions if c not in STEP_OF]
        if bad:
            raise ValueError(f"unknown condition(s) {bad}; valid conditions: {', '.join(STEP_OF)}")
        checks = [("training_pooling", self.training_pooling, TRAIN_POOLINGS), ("bank_kind", self.bank_kind, BANKS),
                  ("ica_whiten", self.ica_whiten, WHITENINGS), ("seed_selection", self.seed_selection, ("dev",)),
                  ("defsent_head", self.defsent_head, DEFSENT_HEADS), ("pooler", self.pooler, POOLERS)]
        for field, value, valid in checks:
            if value not in valid:
                raise ValueError(f"{field} must be one of {valid}, got {value!r}")
        if not self.seeds or len(self.lrs) != len(STEPS) or any(lr <= 0 for lr in self.lrs):
            raise ValueError(f"need at least one seed and three positive lrs (one per PST step), got {self.seeds}, "
                             f"{self.lrs}")
        if any(b > a for a, b in zip(self.lrs, self.lrs[1:])):
            raise ValueError(f"lrs {self.lrs}: a step's LR may not exceed the previous step's (paper, Table 5)")
        if not 0 < self.train_fraction <= 1 or (self.train_definitions and self.train_fraction != 1):
            raise ValueError(f"train_fraction must be in (0, 1], and 1 when train_definitions is set; got "
                             f"{self.train_fraction} with train_definitions {self.train_definitions}")
        if "{sentence}" not in self.prompt or "{mask}" not in self.prompt:
            raise ValueError(f"prompt must contain {{sentence}} and {{mask}}, got {self.prompt!r}")

    def batch_size(self, dictionary: str) -> int:
        return self.batch_size_a if dictionary == "a" else self.batch_size_bc

    def combination(self, step: Step) -> tuple[str, str]:
        return step.combination or (self.training_pooling, self.bank_kind)

    def lr_of(self, step: Step) -> float:
        """The learning rate a step trains at: a sweep condition's own, else the config's for its PST step."""
        return step.lr if step.lr is not None else self.lrs[step.step - 1]

    def pooler_of(self, step: Step) -> str:
        """The pooler a step trains: the backbone's own for a `printed` condition, else the config's."""
        return "backbone" if step.printed else self.pooler

    def pairs_per_epoch(self, n_pairs: int) -> int:
        """The training pairs of a dictionary that holds n_pairs (0: all of them)."""
        if self.train_definitions:
            return self.train_definitions
        return 0 if self.train_fraction == 1 else max(1, round(self.train_fraction * n_pairs))


MINILM = ("all-MiniLM-L6-v2",)
PRESETS: dict[str, dict] = {
    # tens of minutes on 2 cores: the sentence-trained MiniLM (like the paper's SimCSE/SNCSE starts, Table 3, whose
    # LRs in Table 5 are 1e-6 .. 3e-5: 1e-5 here), dictionary c subsampled (1,500 entries), 45% of its pairs (60
    # batches), three seeds, small proxies. MiniLM's pooler was never trained, so the pooler is the MLM head's dense
    # layer + GELU (the paper's rule for RoBERTa, departure 'mlm-dense'; the head is fitted: mlm_head), with the
    # backbone's own pooler beside it (1st-c-printed), DefSent's MLM head on the same data (1st-c-mean-word), and one
    # PST step (2nd-c: the bank 1st-c's best run builds, so T2-PST and F1-2 run); the 1st step's LR sweep on c
    # (1e-5 is 1st-c: T3-LR chooses the rate on the dev proxy)
    "cpu-small": dict(backbones=MINILM, conditions=("base", "1st-c", "2nd-c", "1st-c-printed", "1st-c-mean-word",
                                                    *(sweep_condition("c", lr) for lr in SWEEP_LRS if lr != 1e-5)),
                      seeds=(0, 1, 2), training_pooling="mean", pooler="mlm-dense", lrs=(1e-5, 1e-5, 1e-5),
                      max_entries=1500, max_definitions_per_entry=2, train_fraction=0.45, n_heldout_terms=100,
                      n_sim_anchors=40, n_sim_pairs=400, n_reverse=200, n_probe=200),
    # hours on 2 cores (LRs within Table 5's data-augmented range, one rate for every PST step): dictionary a with
    # every entry in the bank (at most 2 definitions each), the same 5% of every dictionary's pairs per epoch;
    # Table 2's dictionary sizes, Table 8's grid, three PST steps with the ICA variant (FastICA fitted on 20k
    # entries: O(n d^2) per iteration), three seeds; DefSent's MLM head on dictionary c as the baseline. The chain
    # 2nd-a, 3rd-a trains BERT-base's (CLS, AMP) (Table 8); the grid's winner on MiniLM (dev proxy, measured: (CLS,
    # AC)) gets its own chain, 2nd-a-cls-ac, 3rd-a-cls-ac: T2-PST judges the winner's chain, as the paper does. The
    # 1st step's LR sweep on a, Table 3's dictionary (2e-5 is 1st-a: T3-LR chooses the rate on the dev proxy)
    "cpu": dict(backbones=MINILM, conditions=("base", "1st-c", "1st-c-cls-word", "1st-b", "1st-a", "1st-a-printed",
                                              "2nd-a", "3rd-a", "3rd-a-ica", "1st-a-mean-amp", "1st-a-cls-ac",
                                              "1st-a-mean-ac", "2nd-a-cls-ac", "3rd-a-cls-ac",
                                              *(sweep_condition("a", lr) for lr in SWEEP_LRS if lr != 2e-5)),
                seeds=(0, 1, 2), pooler="mlm-dense", lrs=(2e-5, 2e-5, 2e-5),
                max_definitions_per_entry=2, train_fraction=0.05, ica_fit_rows=20000, n_heldout_terms=400,
                n_sim_anchors=150, n_sim_pairs=1500, n_reverse=500, n_probe=1000),
    # the paper's sizes (GPU, the paper's data through --data-dir): BERT-base, full dictionaries, ten seeds
    "paper": dict(),
    # seconds: the tests' preset (pass --backbone with a small local model)
    "tiny": dict(conditions=("base", "1st-c", "1st-c-printed", "2nd-c", "2nd-c-ica", "1st-c-cls-word"), seeds=(0, 1),
                 pooler="mlm-dense", lrs=(1e-3, 1e-3, 1e-3), max_entries=60, max_definitions_per_entry=2,
                 train_definitions=24, batch_size_bc=8, max_seq_length=32, n_heldout_terms=10, n_sim_anchors=16,
                 n_sim_pairs=60, n_reverse=10, n_probe=40, probe_folds=2, ica_max_iter=200, mlm_head_texts=40,
                 mlm_head_steps=20, encode_batch_size=16, logging_steps=1),
}


class DefSentExperiment(Experiment):
    name = "defsent"
    title = ("DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a "
             "quasi-isotropic or isotropic vector space of unlimited dictionary entries")
    citation = CITATION
    config_class = DefSentConfig
    presets = PRESETS
    conditions = conditions_of(*(Condition(name, _describe(s), requires=(s.previous,) if s.previous else (),
                                           seeded=s.step > 0, params=s) for name, s in STEP_OF.items()))
    noise_preset = "cpu"  # 3 seeds of every claim's conditions: the training noise a 1-seed card borrows
    main_metric = pooled(SIM)
    summary_metrics = ((pooled(STS), "STS avg", 2), (pooled(SIM), "WordNet-sim Spearman", 2),
                       (pooled(CROSS_MRR), "cross-dict MRR", 2), (reverse_dictionary_key(1), "RD Acc@1", 2),
                       (reverse_dictionary_key(10), "RD Acc@10", 2), (reverse_dictionary_key(100), "RD Acc@100", 2),
                       (pooled(PROBE), "probe Acc", 2))
    metric_scale = 100
    condition_help = ("base; 1st-<d>, 2nd-<d>, 3rd-<d> (PST steps on dictionary d = a, b, c); 2nd-<d>-ica, "
                      "3rd-<d>-ica (ICA bank); 1st-<d>-<cls|mean>-<amp|ac> (Table 8 grid); 1st-c-<cls|mean>-word "
                      "(DefSent's word-embedding bank); 2nd-<d>-<pool>-<bank>, 3rd-<d>-<pool>-<bank> (the PST chain "
                      "of a grid cell); 1st-<d>-lr<rate> (the 1st step at rate " + ", ".join(map(lr_label, SWEEP_LRS))
                      + ": the LR sweep)")


EXPERIMENT = DefSentExperiment()
