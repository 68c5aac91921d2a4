"""The spec of "Pooling Matters for Frozen Encoders": its conditions, configuration, presets and main metric.

Conditions (the paper's Tables 1 and 2): the frozen encoder read out by mean, CLS or max pooling ("frozen-mean",
"frozen-cls", "frozen-max"; they do not depend on the training seed), and the encoder fine-tuned with MNRL for
20 steps with mean or CLS pooling ("tuned-mean", "tuned-cls").
"""

from __future__ import annotations

from dataclasses import dataclass

from spherekit.experiments.api.config import choice, paper, runtime, selection
from spherekit.experiments.api.plugin import Condition, Experiment, conditions_of
from spherekit.training.trainer import TrainConfig

CITATION = """@misc{toy2026pooling,
  title  = {Pooling Matters for Frozen Encoders},
  year   = {2026},
  note   = {a toy paper, used to test spherekit's guide for adding a reproduction}
}"""

CONDITIONS = conditions_of(
    Condition("frozen-mean", "the frozen encoder, mean pooling", seeded=False,
              params={"pooling": "mean", "tuned": False}),
    Condition("frozen-cls", "the frozen encoder, CLS pooling", seeded=False,
              params={"pooling": "cls", "tuned": False}),
    Condition("frozen-max", "the frozen encoder, max pooling", seeded=False,
              params={"pooling": "max", "tuned": False}),
    Condition("tuned-mean", "fine-tuned with MNRL for 20 steps, mean pooling", distributed=True,
              params={"pooling": "mean", "tuned": True}),
    Condition("tuned-cls", "fine-tuned with MNRL for 20 steps, CLS pooling", distributed=True,
              params={"pooling": "cls", "tuned": True}),
)


@dataclass(frozen=True)
class PoolingConfig:
    # what runs
    backbones: tuple = selection(("all-MiniLM-L6-v2",), "backbones (units); the paper does not name its encoder")
    conditions: tuple = selection(tuple(CONDITIONS), "which conditions run")
    seeds: tuple = selection((0, 1), "training seeds of the tuned conditions (the paper does not say how many)")
    # data
    data_seed: int = choice(0, "seed of the train / test split of the embedded pairs")
    n_test: int = choice(12, "test pairs (the paper does not say)")
    # training (the paper: MNRL, 20 steps)
    steps: int = paper(20, "Table 2: fine-tuning with MNRL for 20 steps")
    batch_size: int = choice(8, "the paper does not say; 8 leaves several batches in the training pairs")
    lr: float = choice(5e-5, "the paper does not say; a common rate for MNRL")
    scale: float = choice(20.0, "MNRL scale 1 / temperature (sentence-transformers' default)")
    max_seq_length: int = choice(32, "tokens per text; terms and glosses are short")
    # runtime
    eval_batch_size: int = runtime(32, "encoding batch size")
    logging_steps: int = runtime(5, "loss logging interval")

    def __post_init__(self):
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad:
            raise ValueError(f"conditions: unknown {bad}; valid conditions: {', '.join(CONDITIONS)}")
        if self.n_test < 2:
            raise ValueError(f"n_test must be at least 2; got {self.n_test}")
        if self.steps < 1:
            raise ValueError(f"steps must be at least 1; got {self.steps}")
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be at least 2 (MNRL needs in-batch negatives); got {self.batch_size}")
        if self.max_seq_length < 4:
            raise ValueError(f"max_seq_length must be at least 4; got {self.max_seq_length}")

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr, warmup_steps=0, seed=seed,
                           logging_steps=self.logging_steps)


PRESETS: dict[str, dict] = {
    "tiny": dict(steps=2, batch_size=4, max_seq_length=16),       # seconds: the tests (pass --backbone)
    "cpu-small": dict(),                                            # the toy is small already
    "cpu": dict(seeds=(0, 1, 2)),
    "paper": dict(seeds=(0, 1, 2)),
}

MRR, R1 = "MRR", "R@1"


class PoolingExperiment(Experiment):
    name = "pooling"
    title = "Pooling Matters for Frozen Encoders"
    citation = CITATION
    config_class = PoolingConfig
    presets = PRESETS
    noise_preset = "cpu"  # 3 seeds
    conditions = CONDITIONS
    main_metric = MRR
    summary_metrics = ((R1, "R@1"), (MRR, "MRR"))


EXPERIMENT = PoolingExperiment()
