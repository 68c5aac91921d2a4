"""The spec of the toy paper: its conditions, configuration, presets and main metric.

Conditions (the toy paper's Table 1): "frozen" (the backbone as it is), "tuned" (fine-tuned with MNRL on the
training pairs), "tuned-more" (a second round of fine-tuning, starting from the best "tuned" seed: a condition that
requires another).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.config import choice, paper, runtime, selection
from ..api.plugin import Condition, Experiment, conditions_of
from ...training.trainer import TrainConfig

CITATION = """@misc{toy2026template,
  title  = {A Toy Paper: Fine-Tuning Helps Term Retrieval},
  author = {Nobody, A.},
  year   = {2026},
  note   = {the template of spherekit's reproductions, not a real paper}
}"""

CONDITIONS = conditions_of(
    Condition("frozen", "the backbone as it is (mean pooling)", seeded=False),
    Condition("tuned", "fine-tuned with MNRL on the training pairs", distributed=True),
    Condition("tuned-more", "a second round of MNRL from the best 'tuned' seed (by MRR)", requires=("tuned",)),
)


@dataclass(frozen=True)
class TemplateConfig:
    # what runs
    backbones: tuple = selection(("all-MiniLM-L6-v2",), "backbones (units)", paper=("all-MiniLM-L6-v2",))
    conditions: tuple = selection(tuple(CONDITIONS), "which conditions run")
    seeds: tuple = selection((0, 1), "training seeds", paper=(0, 1, 2))
    # data
    data_seed: int = choice(0, "seed of the train / test split")
    n_test: int = choice(12, "test pairs (the toy paper does not say)", at_least=2)
    # training (the toy paper's section 3)
    steps: int = paper(20, "section 3: 20 steps", at_least=1)
    batch_size: int = paper(8, "section 3: batch 8", at_least=2)
    lr: float = paper(5e-5, "section 3", at_least=0)
    scale: float = choice(20.0, "MNRL scale 1 / temperature (sentence-transformers' default)")
    max_seq_length: int = choice(32, "tokens per text; terms and glosses are short")
    # runtime
    eval_batch_size: int = runtime(32, "encoding batch size")
    logging_steps: int = runtime(5, "loss logging interval")

    def __post_init__(self):
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad:
            raise ValueError(f"unknown condition(s) {bad}; valid conditions: {', '.join(CONDITIONS)}")
        if self.n_test < 2 or self.steps < 1 or self.batch_size < 2:
            raise ValueError(f"need n_test >= 2, steps >= 1, batch_size >= 2; got {self.n_test}, {self.steps}, "
                             f"{self.batch_size}")

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr, warmup_steps=0, seed=seed,
                           logging_steps=self.logging_steps)


PRESETS: dict[str, dict] = {
    "tiny": dict(steps=2, batch_size=4, max_seq_length=16, logging_steps=1),  # seconds: the tests (--backbone)
    "cpu-small": dict(),                                            # the toy is small already
    "cpu": dict(seeds=(0, 1, 2)),
    "paper": dict(seeds=(0, 1, 2)),
}

MRR, R1 = "MRR", "R@1"


class TemplateExperiment(Experiment):
    name = "template"
    title = "A Toy Paper: Fine-Tuning Helps Term Retrieval"
    citation = CITATION
    config_class = TemplateConfig
    presets = PRESETS
    noise_preset = "cpu"  # 3 seeds: a 1-seed card borrows its claims' training noise
    conditions = CONDITIONS
    main_metric = MRR
    summary_metrics = ((R1, "R@1"), (MRR, "MRR"))


EXPERIMENT = TemplateExperiment()
