"""Encoding helpers for the evaluators: sentence embeddings and per-layer mean-pooled embeddings.

encode(model, texts) is the model's own readout (its modules, e.g. Transformer -> mean Pooling ->
Normalize for all-mpnet-base-v2). For a frozen sentence-transformers encoder that readout is the B0
condition of "Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994) ("frozen
all-mpnet-base-v2 with mean pooling"; mean pooling of the final layer is that model's own pooling).

encode_layers(model, texts) -> (L + 1, n, d): for every hidden state h^(l) of the first (Transformer)
module, the attention-masked mean over tokens, z^(l) = sum_t m_t h^(l)_t / sum_t m_t. Index 0 is the
embedding layer output, index l the l-th transformer layer, index L the final layer (= the mean-pool
readout of the final layer, B0, for a mean-pooling model).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings; texts[{bad[0]}] is {type(texts[bad[0]]).__name__}")
    return list(texts)


def encode(model, texts, *, batch_size: int = 64, normalize: bool = True, show_progress: bool = False) -> Tensor:
    """-> float32 CPU tensor (n, d) of the model's sentence embeddings (L2-normalised if normalize)."""
    texts = _check_texts(texts)
    if not texts:
        raise ValueError("texts is empty")
    emb = model.encode(texts, batch_size=batch_size, convert_to_tensor=True, show_progress_bar=show_progress,
                       normalize_embeddings=False)
    emb = emb.detach().to("cpu", torch.float32)
    return torch.nn.functional.normalize(emb, dim=1) if normalize else emb


def _hf_model(model):
    try:
        first = model[0]
        return first, first.auto_model
    except (TypeError, IndexError, AttributeError) as exc:
        raise TypeError(
            "layerwise encoding needs a SentenceTransformer whose first module is a Transformer "
            f"(with .auto_model), got {type(model).__name__}"
        ) from exc


def _named_parameters(fn) -> set[str]:
    """Names the model's forward accepts explicitly (inspect follows decorators' __wrapped__)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def encode_layers(model, texts, *, batch_size: int = 32, normalize: bool = True, show_progress: bool = False) -> Tensor:
    """-> float32 CPU tensor (L + 1, n, d): masked mean pooling of every hidden state (see the module docstring).
    A model that provides its own encode_layers (spherekit.evaluation.cache.EmbeddingCache) answers itself."""
    texts = _check_texts(texts)
    if not texts:
        raise ValueError("texts is empty")
    if hasattr(type(model), "encode_layers"):
        return model.encode_layers(texts, batch_size=batch_size, normalize=normalize, show_progress=show_progress)
    _, hf = _hf_model(model)
    device = next(hf.parameters()).device
    chunks: list[Tensor] = []
    starts = range(0, len(texts), batch_size)
    if show_progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="layers", unit="batch", leave=False)
    accepted = _named_parameters(hf.forward)
    was_training = hf.training
    hf.eval()
    try:
        with torch.inference_mode():
            for s in starts:
                feats = model.preprocess(texts[s : s + batch_size])
                inputs = {k: v.to(device) for k, v in feats.items() if isinstance(v, Tensor)}
                inputs = {k: v for k, v in inputs.items() if k in accepted or k in ("input_ids", "attention_mask")}
                out = hf(**inputs, output_hidden_states=True, return_dict=True)
                mask = inputs["attention_mask"].unsqueeze(-1).to(torch.float32)
                denom = mask.sum(1).clamp_min(1.0)
                pooled = torch.stack([(h.float() * mask).sum(1) / denom for h in out.hidden_states])
                chunks.append(pooled.to("cpu"))
    finally:
        hf.train(was_training)
    layers = torch.cat(chunks, dim=1)
    return torch.nn.functional.normalize(layers, dim=-1) if normalize else layers
