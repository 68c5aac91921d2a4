"""Encode each distinct text once per model and reuse the embeddings across evaluation suites.

    cached = EmbeddingCache(model, batch_size=64)
    for suite in ("concept", "stress", "geometry", "layerwise"):
        evaluator(cached)              # evaluators call cached.encode(...) / encode_layers(cached, ...)

One forward pass per distinct text gives both what the suites ask for: the model's sentence embedding
(its own readout, exactly what `model.encode` returns) and, for a model whose first module is a
sentence-transformers Transformer, the attention-masked mean pool of every hidden state (the per-layer
embeddings of spherekit.evaluation.encode.encode_layers). Texts are encoded longest first in batches
(little padding); results are float32 on the CPU. Everything but `encode` / `encode_layers` is delegated to
the wrapped model (attributes, indexing, iteration), so an EmbeddingCache can stand in for the
SentenceTransformer in any evaluator; `spherekit eval` and `spherekit reproduce` evaluate through one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


class EmbeddingCache:
    """A SentenceTransformer stand-in that remembers every text it has encoded (see the module docstring).

    Args:
        model: a sentence-transformers model (kept in eval mode while encoding).
        batch_size: encoding batch size.
        layers: also keep the per-layer mean pools (needs a Transformer first module; silently off otherwise).
        show_progress: a progress bar per encoding call.
    """

    def __init__(self, model, *, batch_size: int = 64, layers: bool = True, show_progress: bool = False):
        self.model = model
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._hf = _hf_model(model) if layers else None
        self._sentence: dict[str, Tensor] = {}
        self._layers: dict[str, Tensor] = {}
        self.encoded = 0  # texts run through the model (a measure of the reuse)

    def __getattr__(self, name):
        if name == "model":  # not set yet (during unpickling): avoid recursion
            raise AttributeError(name)
        return getattr(self.model, name)

    def __getitem__(self, index):  # model[0] and friends reach the model's modules
        return self.model[index]

    def __iter__(self):
        return iter(self.model)

    @property
    def size(self) -> int:
        """How many distinct texts are cached."""
        return len(self._sentence)

    def _missing(self, texts: Sequence[str]) -> list[str]:
        return [t for t in dict.fromkeys(texts) if t not in self._sentence]

    def _run(self, texts: list[str]) -> None:
        if not texts:
            return
        model = self.model
        order = sorted(texts, key=len, reverse=True)
        if not hasattr(model, "preprocess"):  # any other encoder: its own encode, sentence embeddings only
            emb = torch.as_tensor(model.encode(order, batch_size=self.batch_size, convert_to_tensor=True))
            self._sentence.update(zip(order, emb.float().cpu()))
            self.encoded += len(texts)
            return
        was_training = model.training
        model.eval()
        config = getattr(self._hf, "config", None)
        previous = getattr(config, "output_hidden_states", None)
        if config is not None:
            config.output_hidden_states = True
        starts = range(0, len(order), self.batch_size)
        if self.show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="encode", unit="batch", leave=False)
        try:
            with torch.inference_mode():
                for s in starts:
                    batch = order[s:s + self.batch_size]
                    feats = model.preprocess(batch)
                    feats = {k: v.to(model.device) if isinstance(v, Tensor) else v for k, v in feats.items()}
                    out = model(feats)
                    emb = out["sentence_embedding"].float().cpu()
                    hidden = out.get("all_layer_embeddings") if config is not None else None
                    pooled = _mean_pools(hidden, out["attention_mask"]) if hidden is not None else None
                    for i, text in enumerate(batch):
                        self._sentence[text] = emb[i]
                        if pooled is not None:
                            self._layers[text] = pooled[:, i]
        finally:
            if config is not None:
                config.output_hidden_states = previous
            model.train(was_training)
        self.encoded += len(texts)

    def encode(self, sentences, batch_size: int | None = None, convert_to_tensor: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool | None = None, **_ignored) -> Tensor:
        """(n, d) float32 sentence embeddings of `sentences` (the model's own readout), from the cache."""
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        self._run(self._missing(texts))
        out = torch.stack([self._sentence[t] for t in texts]) if texts else torch.empty(0)
        if normalize_embeddings:
            out = torch.nn.functional.normalize(out, dim=-1)
        if isinstance(sentences, str):
            out = out[0]
        return out if convert_to_tensor else out.numpy()

    def encode_layers(self, texts, *, batch_size: int | None = None, normalize: bool = True,
                      show_progress: bool = False) -> Tensor:
        """(L + 1, n, d) mean pools of every hidden state (as spherekit.evaluation.encode.encode_layers)."""
        if self._hf is None:
            raise TypeError("per-layer embeddings need a model whose first module is a Transformer "
                            "(and EmbeddingCache(..., layers=True))")
        texts = list(texts)
        self._run(self._missing(texts))
        missing = [t for t in texts if t not in self._layers]
        if missing:  # cached by an earlier call without layers: encode those again
            for t in missing:
                del self._sentence[t]
            self._run(list(dict.fromkeys(missing)))
        out = torch.stack([self._layers[t] for t in texts], dim=1)
        return torch.nn.functional.normalize(out, dim=-1) if normalize else out


def _hf_model(model):
    try:
        return model[0].auto_model
    except (TypeError, IndexError, AttributeError, KeyError):
        return None


def _mean_pools(hidden, attention_mask) -> Tensor:
    """(L + 1, B, d) attention-masked mean over tokens of every hidden state."""
    mask = attention_mask.unsqueeze(-1).to(torch.float32)
    denom = mask.sum(1).clamp_min(1.0)
    return torch.stack([(h.float() * mask).sum(1) / denom for h in hidden]).cpu()
