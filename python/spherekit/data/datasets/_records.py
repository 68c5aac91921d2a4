"""The record every emotion loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EmotionExample:
    """text with its emotion labels in the dataset's own vocabulary.

    labels: every label the example carries (multi-label datasets may give several).
    label:  the single label when the dataset defines one (Emolit: the highest-scoring emotion;
            Empathetic Dialogues: the conversation's emotion), else the only label, else None.
    scores: per-label scores when the dataset publishes them (Emolit), else None.
    """

    text: str
    labels: tuple[str, ...]
    id: str | None = None
    source: str | None = None
    label: str | None = None
    scores: dict[str, float] | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.label is None and len(self.labels) == 1:
            object.__setattr__(self, "label", self.labels[0])
