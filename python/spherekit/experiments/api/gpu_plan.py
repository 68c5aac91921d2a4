"""A paper's GPU plan: what its `paper` preset would run on a GPU, as work items that scripts/gpu_papers.py times.

A paper that wants its `paper` card and `reproduce list` to state a predicted GPU time adds experiments/<name>/gpu.py
with

    def gpu_plan(cfg) -> list[WorkItem]    # cfg: the paper's make_config("paper")

Each item is steps of one kind on one backbone: "train" (a forward, an InfoNCE loss and an AdamW step, bf16
autocast), "encode" (a no-grad bf16 forward: caches, a frozen backbone's evaluation) or "assumed" (not timed: steps x
assumed_s, said in its basis). scripts/gpu_papers.py finds the plans through the papers' plugins (like bench.py),
times each distinct item on a randomly initialised backbone of the shape ARCHS gives (the model cards' config.json
values; no weights travel) and writes the rows that spherekit.experiments.harness.gpu_hours reads. A backbone a plan
names must be in ARCHS (add it here: the table is shared, several papers train the same backbones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

KINDS = ("train", "encode", "assumed")

BERT = dict(vocab_size=30522, max_position_embeddings=512)
MINILM = dict(BERT, hidden_size=384, num_attention_heads=12, intermediate_size=1536)
ARCHS = {  # backbone -> (transformers model_type, config fields)
    "all-MiniLM-L6-v2": ("bert", dict(MINILM, num_hidden_layers=6)),
    "sentence-transformers/all-MiniLM-L6-v2": ("bert", dict(MINILM, num_hidden_layers=6)),
    "sentence-transformers/all-MiniLM-L12-v2": ("bert", dict(MINILM, num_hidden_layers=12)),
    "thenlper/gte-small": ("bert", dict(MINILM, num_hidden_layers=12)),
    "bert-base-uncased": ("bert", dict(BERT, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                       intermediate_size=3072)),
    "all-mpnet-base-v2": ("mpnet", dict(vocab_size=30527, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                        intermediate_size=3072, max_position_embeddings=514)),
    "Alibaba-NLP/gte-modernbert-base": ("modernbert", dict(vocab_size=50368, hidden_size=768, num_hidden_layers=22,
                                                           num_attention_heads=12, intermediate_size=1152,
                                                           max_position_embeddings=8192)),
    "Qwen/Qwen3-Embedding-4B": ("qwen3", dict(vocab_size=151665, hidden_size=2560, num_hidden_layers=36,
                                              num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                              intermediate_size=9728, max_position_embeddings=40960)),
    "nvidia/llama-embed-nemotron-8b": ("llama", dict(vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                                     num_attention_heads=32, num_key_value_heads=8,
                                                     intermediate_size=14336, max_position_embeddings=131072)),
    "meta-llama/Llama-3.2-3B": ("llama", dict(vocab_size=128256, hidden_size=3072, num_hidden_layers=28,
                                              num_attention_heads=24, num_key_value_heads=8, head_dim=128,
                                              intermediate_size=8192, max_position_embeddings=131072)),
    "allenai/Olmo-3-1025-7B": ("olmo3", dict(vocab_size=100278, hidden_size=4096, num_hidden_layers=32,
                                             num_attention_heads=32, num_key_value_heads=32, intermediate_size=11008,
                                             max_position_embeddings=65536)),
}


@dataclass(frozen=True)
class WorkItem:
    """Steps of one kind on one backbone, each of `sequences` sequences of `tokens` tokens.

    steps: a count, or a callable of the backbone's parameter count (a paper whose step count follows a time budget
    scaled by model size, as the released scripts of "Training for Compositional Sensitivity Reduces Dense Retrieval
    Generalization" do). basis: where the count comes
    from, in words (the CSV row carries it). assumed_s: the cost of one step of an "assumed" item."""

    backbone: str
    kind: str
    sequences: int
    tokens: int
    steps: int | Callable[[int], int]
    basis: str
    assumed_s: float = 0.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"WorkItem kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        if self.backbone not in ARCHS:
            raise ValueError(f"WorkItem backbone {self.backbone!r} has no architecture in "
                             f"spherekit.experiments.api.gpu_plan.ARCHS; add its config.json fields there")

    def steps_for(self, n_params: int) -> int:
        """The item's step count for a backbone of n_params parameters."""
        return self.steps(n_params) if callable(self.steps) else self.steps


__all__ = ["ARCHS", "KINDS", "WorkItem"]
