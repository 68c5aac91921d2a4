"""RenormalizeCallback: nGPT's "normalise every weight matrix after each training step" for HF Trainers."""

from __future__ import annotations

from transformers import TrainerCallback

from .renorm import renormalize_all_


class RenormalizeCallback(TrainerCallback):
    """After every optimiser step (``on_step_end``; with gradient accumulation once per real step) and at the
    start of training, renormalise the unit-norm weights of every module of the trained model (NGPTBlock,
    HypersphereHead) with one spherekit.ops.renormalize_ call.

    Works with ``transformers.Trainer`` and ``SentenceTransformerTrainer``::

        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=ds, loss=loss,
                                             callbacks=[RenormalizeCallback()])

    Args:
        eps: the norm clamp.
        backend: backend of spherekit.ops.renormalize_.
    """

    def __init__(self, eps: float = 1e-6, backend: str = "auto"):
        self.eps, self.backend = eps, backend
        self.calls = 0

    def _renormalize(self, model) -> None:
        if model is not None:
            renormalize_all_(model, eps=self.eps, backend=self.backend)
            self.calls += 1

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._renormalize(model)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self._renormalize(model)
