"""The spec of the "Mapping the Circumplex of Affect" reproduction: its conditions, configuration, presets, metric
names and the groups its claims are checked on.

Source: Yamauchi and Aizawa, "Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via
Hyperspherical Contrastive Learning" (ACL 2026): sections 3.3-3.4 (head, objectives), 4.1-4.2 (data, metrics),
Table 1 (the runs), Table 3 (hyperparameters), Fig. 5b (label-count study).

Runs (the rows of Table 1): "Pretrained" (the backbone as it is, no head) and <loss>-<head> for loss in SINCERE,
SoftCSE, CircularCSE and head in GPT, nGPT. A condition (a unit of the card) is a run in a regime:

    Pretrained                         the frozen backbone's own sentence embedding (not seeded: runs once)
    SINCERE-nGPT@frozen                only the head trains (the paper's LLM-based rows)
    SINCERE-nGPT@unfrozen              backbone and head train (the paper's BERT-like rows)
    CircularCSE-nGPT@frozen+4labels    the label-count study (Fig. 5b): trained and tested on 4 labels

`--conditions` takes these names and, as an alias, a bare run name ("SINCERE-nGPT": every regime of the preset).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.claims import Scope
from ..api.config import choice, paper, runtime, selection
from ..api.metrics import MetricName
from ..api.plugin import Condition, Experiment, conditions_of, slug
from ...training.trainer import TrainConfig

CITATION = """@inproceedings{yamauchi2026circumplex,
  title     = {Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via
               Hyperspherical Contrastive Learning},
  author    = {Yamauchi, Yusuke and Aizawa, Akiko},
  booktitle = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics},
  year      = {2026}
}"""

HEADS = {"GPT": "gpt", "nGPT": "ngpt"}
LOSSES = {"SINCERE": "sincere", "SoftCSE": "softcse", "CircularCSE": "circularcse"}
PRETRAINED = "Pretrained"
TRAINED_RUNS = tuple(f"{loss}-{head}" for loss in LOSSES for head in HEADS)
RUNS = (PRETRAINED, *TRAINED_RUNS)
REGIMES = ("frozen", "unfrozen")
LABEL_COUNTS = (2, 3, 4, 6)  # the label-count study's subsets (12 = the main grid); see evaluate.label_count_subsets
DATASETS = ("offline", "table", "emolit", "goemotions", "empathetic_dialogues", "superemotion")
# the paper's backbones (Table 3): its BERT-like encoders (fine-tuned) and its LLM-based ones (frozen)
FINETUNED_BACKBONES = ("intfloat/multilingual-e5-large", "mixedbread-ai/mxbai-embed-large-v1")
FROZEN_BACKBONES = ("Qwen/Qwen3-Embedding-4B", "nvidia/llama-embed-nemotron-8b", "meta-llama/Llama-3.2-3B",
                    "allenai/Olmo-3-1025-7B")
PAPER_BACKBONES = FINETUNED_BACKBONES + FROZEN_BACKBONES
POOLINGS = ("auto", "cls", "mean", "last")
HEAD_MASKS = ("auto", "causal", "bidirectional")
PRETRAINED_POOLINGS = ("head", "backbone")

# metric keys of a unit (measure.evaluate_unit)
V = "V-measure"
CD_R = "CD-r"
RING_MAE = "ring MAE"
OFFDIAG = "cosine (off-diagonal label pairs)"
PC12 = "explained variance (PC1+PC2)"
ALPHA_MEAN = "nGPT alpha (mean)"
ALPHA_MAX = "nGPT alpha (max)"


@dataclass(frozen=True)
class Run:
    """One condition, parsed: run name, regime (None for Pretrained), label count (None: all labels)."""

    run: str
    regime: str | None = None
    labels: int | None = None

    @property
    def head(self) -> str | None:
        return None if self.run == PRETRAINED else HEADS[self.run.split("-")[1]]

    @property
    def loss(self) -> str | None:
        return None if self.run == PRETRAINED else LOSSES[self.run.split("-")[0]]

    @property
    def name(self) -> str:
        if self.run == PRETRAINED:
            return PRETRAINED
        return f"{self.run}@{self.regime}" + (f"+{self.labels}labels" if self.labels else "")


def parse_condition(name: str) -> Run:
    """"SoftCSE-GPT@frozen+4labels" -> Run("SoftCSE-GPT", "frozen", 4); an unknown name lists the valid forms."""
    if name == PRETRAINED:
        return Run(PRETRAINED)
    run, _, rest = name.partition("@")
    regime, _, count = rest.partition("+")
    labels = None
    if count:
        labels = int(count.removesuffix("labels")) if count.removesuffix("labels").isdigit() else -1
    if run not in TRAINED_RUNS or regime not in REGIMES or (labels is not None and labels not in LABEL_COUNTS):
        raise ValueError(f"unknown condition {name!r}; valid: {PRETRAINED}, <run>@<regime>[+<k>labels] with run in "
                         f"{', '.join(TRAINED_RUNS)}, regime in {', '.join(REGIMES)}, k in {LABEL_COUNTS}")
    return Run(run, regime, labels)


def _description(run: Run) -> str:
    if run.run == PRETRAINED:
        return "the backbone's own sentence embedding, no head (the paper's 'Pretrained' row)"
    loss, head = run.run.split("-")
    if run.labels:
        return f"{run.run} ({run.regime}) trained and tested on {run.labels} labels"
    return f"{loss} loss, {head} head, {'head only' if run.regime == 'frozen' else 'backbone and head'} trained"


def _condition(run: Run) -> Condition:
    trained = run.run != PRETRAINED
    return Condition(run.name, _description(run), distributed=trained, seeded=trained, params=run)


CONDITIONS = conditions_of(
    _condition(Run(PRETRAINED)),
    *(_condition(Run(r, g)) for g in REGIMES for r in TRAINED_RUNS),
    *(_condition(Run(r, g, k)) for g in REGIMES for k in LABEL_COUNTS for r in TRAINED_RUNS))


DEFAULT_ALPHA = 0.05  # nGPT's (and the authors' code's) initial step alpha


@dataclass(frozen=True)
class CircumplexConfig:
    """Every setting of the reproduction; `source` of each field says whether the paper fixes it."""

    # what runs
    backbones: tuple = selection(("all-MiniLM-L6-v2",), "the paper's backbones are not available offline; "
                                 "--backbone takes any of them by name or path", paper=PAPER_BACKBONES)
    runs: tuple = selection(TRAINED_RUNS, "Table 1: {SINCERE, SoftCSE, CircularCSE} x {GPT, nGPT} heads",
                            paper=TRAINED_RUNS)
    pretrained: bool = selection(True, "Table 1's 'Pretrained' row", paper=True)
    regimes: tuple = selection(REGIMES, "Table 3: BERT-like encoders fine-tuned (unfrozen), LLM-based backbones "
                               "frozen (head only)", paper=REGIMES)
    label_count_runs: tuple = selection((), "runs retrained on fewer labels for the label-count study (Fig. 5b; the "
                                        "cpu preset uses the GPT heads, which move further in few steps than nGPT's)")
    label_counts: tuple = selection(LABEL_COUNTS, "Fig. 5b's label counts below 12 (the authors' scripts: 2, 3, 4, "
                                    "6, 12, 24); which labels is ours (evenly spread angles) since Fig. 10 is lost")
    label_count_regime: str = selection("frozen", "regime of the label-count study's runs")
    only: tuple = selection((), "--conditions: run exactly these conditions (a bare run name: in every regime)")
    seeds: tuple = selection((42,), "training seeds: the head's initialisation and the trainer's (Table 3: 42)",
                             paper=(42,))
    data_seed: int = paper(42, "Table 3's seed, kept for the data split and the evaluation (k-means, projections), "
                               "so that they do not depend on the training seed")
    # data (section 4.1, appendix C)
    dataset: str = choice("offline", "offline: WordNet + GCIDE + NRC emotion texts (the paper's four datasets are "
                          "not available offline); with --data-dir: table (the default there) | emolit | "
                          "goemotions | empathetic_dialogues | superemotion (--set dataset=...)")
    text_column: str = choice("text", "text column of a --data-dir table")
    label_column: str | None = choice(None, "label column of a --data-dir table (None: 'label', or 'sentiment' as "
                                      "in the authors' released Emolit split)")
    angles_file: str | None = choice(None, "CSV/TSV (label, angle) for labels outside the 12-label circumplex "
                                     "(--set angles_file=FILE)")
    data_dir: str | None = choice(None, "the paper's data in its published format (--data-dir)")
    n_train_per_label: int | None = paper(500, "section 4.1: 500 train texts per label, balanced by undersampling "
                                               "(None: as many as the smallest label has)")
    n_test_per_label: int = paper(100, "section 4.1: 100 test texts per label")
    max_seq_length: int = choice(64, "tokens per text (the authors' code: 512); dictionary texts are short")
    # head (section 3.3, appendix B)
    pooling: str = paper("auto", "Table 3 / section 4.1 per backbone: [CLS] for BERT-like encoders (all-MiniLM-L6-v2 "
                         "too), the last token for decoder-only LLMs and Qwen3-Embedding, mean for "
                         "llama-embed-nemotron ('auto'; or cls / mean / last for every backbone)",
                         means="the paper's pooling per backbone")
    head_mask: str = paper("auto", "appendix B: the head's attention is unidirectional for unidirectional "
                           "(decoder-only) backbones, bidirectional otherwise ('auto'; the authors' code: "
                           "bidirectional for all)")
    pretrained_pooling: str = choice("head", "the Pretrained row: 'head' = Norm(Pooling(h)) with the heads' pooling "
                                     "(eq. 3 without a head; the paper gives no other), so Pretrained vs a head "
                                     "measures the head; 'backbone' = the backbone's own sentence embedding "
                                     "(measured as 'backbone pooling/...' in the Pretrained run either way)")
    dropout: float = choice(0.1, "dropout on the head's input (the authors' code; the paper is silent)")
    d_mlp: int | None = choice(None, "head MLP width (None: 4d, as in the authors' code)")
    alpha_init: float = choice(DEFAULT_ALPHA, "initial nGPT step alpha (nGPT's default; the paper is silent)")
    # objective (section 3.4, Table 3)
    temperature: float = paper(0.05, "Table 3: tau = 0.05 for SINCERE and SoftCSE")
    margin: float = paper(0.0, "Table 3: CircularCSE margin m = 0")
    # training (Table 3)
    epochs: int = paper(15, "Table 3")
    batch_size: int = paper(128, "Table 3")
    lr: float = paper(5e-5, "Table 3 (backbone and head alike when unfrozen, as in the authors' code)")
    schedule: str = paper("constant", "Table 3: constant learning rate, no warmup")
    weight_decay: float = choice(0.0, "AdamW weight decay (the HF Trainer default the authors' code keeps)")
    max_grad_norm: float = choice(1.0, "gradient clipping (HF Trainer default)")
    precision: str = choice("auto", "bf16 on a GPU (Table 3), fp32 on a CPU")
    cache_dtype: str = choice("float32", "frozen runs train on cached backbone token states; float32 storage "
                              "gives the same numbers as running the backbone every step ('auto': bf16/fp16)")
    # evaluation (section 4.2)
    n_init: int = paper(10, "section 4.2: spherical k-means, 10 initialisations, lowest inertia")
    cd_pairs: str = choice("upper+diagonal", "label pairs of CD-r: i <= j (fits the paper's printed values best; "
                           "'upper': i < j, 'ordered': all)")
    pca_dims: tuple = choice((2, 3, 4, 8, 16, 32, 64, 128, 256), "Fig. 5a's PCA dimensions (grid not printed)")
    mds_points: int = choice(600, "texts in the MDS plots (subsampled per label)")
    # runtime
    cache_states: bool = runtime(True, "frozen runs: encode each text through the backbone once")
    eval_batch_size: int = runtime(128, "encoding batch size")
    save_steps: int = runtime(100, "training checkpoint interval (resume)")
    logging_steps: int = runtime(5, "loss logging interval")

    def __post_init__(self):
        def check(name, values, valid):
            bad = [v for v in values if v not in valid]
            if bad:
                raise ValueError(f"{name}: unknown {bad}; valid: {', '.join(map(str, valid))}")

        check("runs", self.runs, TRAINED_RUNS)
        check("label_count_runs", self.label_count_runs, TRAINED_RUNS)
        check("regimes", self.regimes, REGIMES)
        check("label_count_regime", (self.label_count_regime,), REGIMES)
        check("label_counts", self.label_counts, LABEL_COUNTS)
        check("dataset", (self.dataset,), DATASETS)
        check("pooling", (self.pooling,), POOLINGS)
        check("head_mask", (self.head_mask,), HEAD_MASKS)
        check("pretrained_pooling", (self.pretrained_pooling,), PRETRAINED_POOLINGS)
        if self.dataset != "offline" and self.data_dir is None:
            raise ValueError(f"dataset {self.dataset!r} needs --data-dir (with --data-dir alone, the folder's "
                             "train / test files are read as labelled tables)")
        if self.epochs < 1 or self.batch_size < 2:
            raise ValueError("epochs must be >= 1 and batch_size >= 2")

    def train_config(self, n_train: int, seed: int) -> TrainConfig:
        """The trainer's settings for `n_train` training texts: epochs x ceil(n_train / batch) steps."""
        steps = self.epochs * -(-n_train // self.batch_size)
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=self.lr, warmup_steps=0,
                           schedule=self.schedule, weight_decay=self.weight_decay,
                           max_grad_norm=self.max_grad_norm, seed=seed, precision=self.precision,
                           save_steps=self.save_steps, logging_steps=self.logging_steps)


NGPT_RUNS = tuple(r for r in TRAINED_RUNS if r.endswith("-nGPT"))
CPU_SMALL = dict(regimes=("frozen",), n_train_per_label=150, n_test_per_label=50, epochs=5, batch_size=64,
                 pca_dims=(2, 4, 8, 16, 32, 64, 128), seeds=(42, 43, 44))

PRESETS: dict[str, dict] = {
    # minutes on a 2-core CPU: MiniLM frozen, the six trained runs + Pretrained, three seeds (42 is Table 3's; 43
    # and 44 follow it, as in the authors' commented-out seed sweep)
    "cpu-small": CPU_SMALL,
    # what decides the frozen nGPT heads' verdicts (cpu-small's nGPT runs with one setting changed): mean pooling
    # instead of [CLS] (all-MiniLM-L6-v2 was trained with mean pooling: the paper's reason for Nemotron's), a larger
    # initial nGPT step alpha, and the paper's 15 epochs (3x the steps)
    "cpu-small-mean-pooling": {**CPU_SMALL, "pooling": "mean", "runs": NGPT_RUNS},
    "cpu-small-alpha0.25": {**CPU_SMALL, "alpha_init": 0.25, "runs": NGPT_RUNS},
    "cpu-small-15epochs": {**CPU_SMALL, "epochs": 15, "runs": NGPT_RUNS},
    # MiniLM and mpnet, both regimes, the label-count study, the paper's schedule (hours on 2 cores)
    "cpu": dict(backbones=("all-MiniLM-L6-v2", "all-mpnet-base-v2"), n_train_per_label=None, n_test_per_label=60,
                label_count_runs=("SINCERE-GPT", "SoftCSE-GPT", "CircularCSE-GPT")),
    # the paper's run (GPU, Hugging Face hub access), one --data-dir dataset per card: its LLM-based backbones
    # frozen (Table 1's Qwen3-Embedding-4B and Llama-3.2-3B rows), pooled and masked per backbone as in Table 3 /
    # appendix B, with the label-count study; "paper-finetuned": its BERT-like encoders fine-tuned
    "paper": dict(backbones=FROZEN_BACKBONES, regimes=("frozen",), cache_dtype="auto", max_seq_length=512,
                  label_count_runs=NGPT_RUNS),
    "paper-finetuned": dict(backbones=FINETUNED_BACKBONES, regimes=("unfrozen",), max_seq_length=512,
                            label_count_runs=NGPT_RUNS, label_count_regime="unfrozen"),
    # seconds: the tests' preset (pass --backbone with a small local model)
    "tiny": dict(regimes=("frozen",), runs=("SINCERE-nGPT", "CircularCSE-GPT"), n_train_per_label=6,
                 n_test_per_label=4, epochs=2, batch_size=16, n_init=2, pca_dims=(2, 4), mds_points=48,
                 max_seq_length=24, save_steps=2, logging_steps=1, eval_batch_size=32),
}


class GroupScope(Scope):
    """The claims' group: one backbone's main grid (all labels) in one regime, with its Pretrained unit (a column of
    the paper's Table 1). condition(run) names the run's condition in this group."""

    def __init__(self, backbone: str, regime: str, units: dict[str, dict], config: dict | None = None):
        super().__init__(f"{backbone}, {regime}", units, config)
        self.backbone, self.regime = backbone, regime

    def condition(self, run: str) -> str:
        return Run(run, None if run == PRETRAINED else self.regime).name


class CircumplexExperiment(Experiment):
    name = "circumplex"
    title = "Mapping the Circumplex of Affect"
    citation = CITATION
    config_class = CircumplexConfig
    presets = PRESETS
    conditions = CONDITIONS
    main_metric = CD_R
    noise_preset = "cpu-small"  # its three seeds measure the training noise a 1-seed card (cpu) borrows
    probe_presets = {"cpu-small-mean-pooling": "mean pooling instead of the paper's last token",
                     "cpu-small-alpha0.25": f"nGPT alpha 0.25 instead of the default {DEFAULT_ALPHA}",
                     "cpu-small-15epochs": "15 epochs instead of cpu-small's schedule"}
    summary_metrics = ((V, "V-measure"), (CD_R, "CD-r"), (RING_MAE, "ring MAE"),
                       (OFFDIAG, "mean off-diagonal cosine"), (PC12, "PC1+PC2 variance"))
    metric_names = {
        "ring MAE": MetricName("ring MAE", False, "mean |label-pair mean cosine - cos(angle gap)| over label pairs "
                                                  "i != j (0 for a perfect circle)"),
        "explained variance": MetricName("explained variance", None, "share of the variance of the unit "
                                         "embeddings in the named principal components (PC1+PC2: near 1 for a ring)"),
        "nGPT alpha": MetricName("nGPT alpha", None, "the trained geodesic step sizes |alpha_A|, |alpha_M| of an "
                                 "nGPT head (init alpha_init): each residual turns a token state by at most about "
                                 "2 alpha"),
    }
    condition_help = ("Pretrained; <run>@<regime>[+<k>labels] with run in " + ", ".join(TRAINED_RUNS)
                      + ", regime in frozen (head only), unfrozen (backbone too), k in 2, 3, 4, 6 (label-count "
                      "study); a bare run name selects it in every regime of the preset")

    def selectable(self) -> list[str]:
        return [*self.conditions, *TRAINED_RUNS]

    def selected(self, cfg) -> list[str]:
        """The config's conditions in run order (`only`, from --conditions, names them; else the cheap frozen grid
        and the label-count runs come first)."""
        if cfg.only:
            names = [Run(n, g).name for n in cfg.only if n in TRAINED_RUNS for g in cfg.regimes]
            names += [n for n in cfg.only if n not in TRAINED_RUNS]
            return list(dict.fromkeys(n for n in names if parse_condition(n)))
        out = [PRETRAINED] if cfg.pretrained else []
        first, *rest = cfg.regimes
        out += [Run(r, first).name for r in cfg.runs]
        out += [Run(r, cfg.label_count_regime, k).name for k in cfg.label_counts for r in cfg.label_count_runs]
        out += [Run(r, g).name for g in rest for r in cfg.runs]
        return out

    def select(self, names) -> dict:
        """Config overrides that run exactly the named conditions (a bare run name: in every regime of the preset)."""
        for name in names:
            if name not in TRAINED_RUNS:
                parse_condition(name)
        return {"only": tuple(names)}

    def printed_setting(self, scope) -> str:
        """The paper's backbone of the scope's regime (multilingual-e5-large fine-tuned, Qwen3-Embedding-4B frozen)."""
        from .paper import NEXT_TO

        return NEXT_TO[scope.regime]

    def scopes(self, results: dict) -> list[GroupScope]:
        """One group per (backbone, regime) of the main grid, Pretrained joined to each of its backbone's groups (a
        backbone with Pretrained alone: one "frozen" group)."""
        groups: dict[tuple[str, str], dict[str, dict]] = {}
        pretrained = {}
        for unit in results["units"].values():
            run, backbone = parse_condition(unit["condition"]), slug(unit["backbone"])
            if run.run == PRETRAINED:
                pretrained[backbone] = unit
            elif run.labels is None:
                groups.setdefault((backbone, run.regime), {})[unit["condition"]] = unit
        for (backbone, _), units in groups.items():
            if backbone in pretrained:
                units[PRETRAINED] = pretrained[backbone]
        for backbone, unit in pretrained.items():
            if not any(b == backbone for b, _ in groups):
                groups[(backbone, "frozen")] = {PRETRAINED: unit}
        return [GroupScope(b, regime, units, results.get("config")) for (b, regime), units in groups.items()]


EXPERIMENT = CircumplexExperiment()
