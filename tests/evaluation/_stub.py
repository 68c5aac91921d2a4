"""A stand-in encoder with hand-chosen embeddings, so evaluator outputs can be computed by hand."""

from __future__ import annotations

import torch


class StubModel:
    """encode(texts) returns the vector table[text] (unknown texts raise KeyError)."""

    def __init__(self, table: dict[str, list[float]]):
        self.table = {k: torch.tensor(v, dtype=torch.float32) for k, v in table.items()}

    def encode(self, texts, batch_size=32, convert_to_tensor=False, show_progress_bar=None, normalize_embeddings=False, **kw):
        out = torch.stack([self.table[t] for t in texts])
        if normalize_embeddings:
            out = torch.nn.functional.normalize(out, dim=1)
        return out if convert_to_tensor else out.numpy()
