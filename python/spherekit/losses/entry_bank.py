"""EntryBankLoss: DefSent+ (arXiv:2405.16153), softmax of a definition's embedding over a frozen bank of entries."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..ops import info_nce
from ._common import LabelledTextLoss, check_positive, normalize


def frozen_bank_cross_entropy(h: Tensor, bank: Tensor, labels: Tensor, temperature: float = 1.0,
                              backend: str = "auto") -> Tensor:
    """mean_i [ logsumexp_e (h_i . X_e / tau) - h_i . X_{y_i} / tau ] over a frozen bank X (E, d), no B x E logits:
    one spherekit.ops.info_nce call with the bank as candidates and candidate_grad=False (its CPU path reads a
    bank too wide for whole-row tiles in column blocks, once per pass)."""
    return info_nce(h, bank, labels, temperature=temperature, candidate_grad=False, backend=backend)


class EntryBankLoss(LabelledTextLoss):
    def __init__(
        self,
        model,
        bank: Tensor,
        temperature: float | None = None,
        normalize: bool = False,
        backend: str = "auto",
    ) -> None:
        """DefSent+: classify each definition sentence as its dictionary entry, over ALL entries.

        DefSent+ (eq. 1 and 5) projects a definition s into a frozen space of entry embeddings
        X (E, d), one row per dictionary entry (the average pooled embedding of the entry's
        definitions, from an earlier encoder: AC / AMP), and minimises

            -log( exp(X[e] . h(s) / tau) / sum_{e'} exp(X[e'] . h(s) / tau) )

        with a softmax over every entry of the dictionary, not just the batch. The paper uses raw
        dot products with no temperature: that is the default here (``normalize=False``,
        ``temperature=1.0``). ``normalize=True`` scores cosines instead (h and the bank rows
        L2-normalised) and then defaults to ``temperature=0.05``, the usual scale for cosines.

        Computed by :func:`spherekit.ops.info_nce` with the bank as candidates and
        ``candidate_grad=False`` (:func:`frozen_bank_cross_entropy`): the B x E logits are never
        materialised (on the CPU a wide bank is read in column blocks) and no gradient (or memory for
        one) is made for the bank.

        The bank is a non-persistent buffer: it moves with ``loss.to(device)`` (the trainer moves
        losses to the model's device) but is not saved in ``state_dict()``. It is data rebuilt from
        an encoder at every round of progressive separate training, it can be large (E x d), and it
        is given to the constructor anyway; replace it between rounds with :meth:`set_bank`.

        Args:
            model: SentenceTransformer model.
            bank: (E, d) float entry embeddings (E >= 2, d = the model's embedding size), frozen.
            temperature: tau; None means 1.0 (paper, raw dot products) or 0.05 with ``normalize=True``.
            normalize: score cosines (normalise sentence embeddings and bank rows) instead of raw dot
                products.
            backend: spherekit backend for info_nce: "auto" | "triton" | "cpu" | "reference".

        References:
            - Liu 2024, DefSent+: Improving sentence embeddings of language models by projecting
              definition sentences into a quasi-isotropic or isotropic vector space of unlimited
              dictionary entries: https://arxiv.org/abs/2405.16153
            - Tsukagoshi, Sasano, Takeda 2021, DefSent: Sentence Embeddings using Definition Sentences,
              ACL 2021: https://aclanthology.org/2021.acl-short.52

        Inputs:
            +------------+------------------------------+
            | Texts      | Labels                       |
            +============+==============================+
            | definition | entry id (int, row of bank)  |
            +------------+------------------------------+

        Example:
            ::

                import torch
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from spherekit.losses import EntryBankLoss

                model = SentenceTransformer("bert-base-uncased")
                entries = {"revitalize": ["give new life or vigor to", "imbue something with new life"],
                           "cup": ["a small open container usually used for drinking"]}
                # AMP entry embeddings (DefSent+, eq. 2): mean of each entry's definition embeddings
                bank = torch.stack([model.encode(defs, convert_to_tensor=True).mean(0) for defs in entries.values()])
                train = Dataset.from_dict({
                    "definition": [d for defs in entries.values() for d in defs],
                    "label": [i for i, defs in enumerate(entries.values()) for _ in defs],
                })
                loss = EntryBankLoss(model, bank)
                trainer = SentenceTransformerTrainer(model=model, train_dataset=train, loss=loss)
                trainer.train()  # one epoch, as in DefSent+; then rebuild the bank and loss.set_bank(...)
        """
        super().__init__()
        self.model = model
        self.normalize = bool(normalize)
        if temperature is None:
            temperature = 0.05 if self.normalize else 1.0
        self.temperature = check_positive("temperature", temperature)
        self.backend = backend
        self.register_buffer("bank", self._check_bank(bank), persistent=False)

    @staticmethod
    def _check_bank(bank: Tensor) -> Tensor:
        if not isinstance(bank, Tensor):
            raise TypeError(f"bank must be a (E, d) torch.Tensor, got {type(bank).__name__}")
        if bank.dim() != 2 or bank.shape[0] < 2 or bank.shape[1] < 1:
            raise ValueError(f"bank must have shape (E, d) with E >= 2 entries, got {tuple(bank.shape)}")
        if not bank.is_floating_point():
            raise TypeError(f"bank must be a floating tensor, got dtype {bank.dtype}")
        if not bool(torch.isfinite(bank).all()):
            raise ValueError("bank contains NaN or Inf")
        return bank.detach().contiguous()

    def set_bank(self, bank: Tensor) -> None:
        """Replace the entry embeddings (e.g. between rounds of progressive separate training)."""
        self.bank = self._check_bank(bank).to(self.bank.device)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        h, labels = self.checked_inputs(embeddings, labels, self.bank.shape[0])
        bank = self.bank.to(device=h.device, dtype=h.dtype)
        if self.normalize:
            h, bank = normalize(h), normalize(bank)
        return frozen_bank_cross_entropy(h, bank, labels, self.temperature, self.backend)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "bank_shape": tuple(self.bank.shape),
            "temperature": self.temperature,
            "normalize": self.normalize,
            "backend": self.backend,
        }

    @property
    def citation(self) -> str:
        return """
@misc{liu2024defsentplus,
      title={DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a quasi-isotropic or isotropic vector space of unlimited dictionary entries},
      author={Xiaodong Liu},
      year={2024},
      eprint={2405.16153},
      archivePrefix={arXiv},
      primaryClass={cs.CL},
      url={https://arxiv.org/abs/2405.16153},
}
"""

