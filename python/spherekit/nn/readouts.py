"""LayerMixPooling: cross-layer readouts of a sentence encoder as a sentence-transformers module.

From "Principles of Concept Representation in Sentence Encoders" (Mohr, Dujany, Souquet, Freitas,
arXiv:2606.06994, 2026), section 4.2. With H^(l)(x) in R^{T x d} the token states of layer l (l = 1..L; entry 0
of HF's hidden_states is the embedding output and is never mixed) and P the attention-masked mean over tokens:

    B0-WM  (mode="uniform"):  z = P( (1/K) sum_{l=L-K+1..L} H^(l) )                  frozen, no parameters
    M1     (mode="learned"):  z = P( sum_l alpha_l H^(l) ),  alpha = softmax(w), w in R^K   shared by all inputs
    M2     (mode="gated"):    alpha(x) = softmax( MLP( P(H^(L)(x)) ) )                  one mixture per input
    M3     (mode="learned", deep_supervision=True): M1 plus, in training only, a linear head phi_l per mixed
           layer; features["layer_embeddings"][k] = phi_l(P(H^(l))) feeds a per-layer InfoNCE loss. The heads
           are discarded at inference (eval mode does not run them, ``save`` does not write them).

The last K = num_layers layers are mixed (the paper: K = 4, and a K = 6 variant). The module reads
features["all_layer_embeddings"], which sentence-transformers' Transformer writes only when its HF config has
output_hidden_states=True: call ``enable_hidden_states(model[0])`` or build with ``layer_mix_model``. It writes
features["token_embeddings"] (the mixed tokens), features["sentence_embedding"] (z, NOT L2-normalised: the
losses and evaluators normalise) and features["layer_weights"] (alpha as (B, K), also for the shared modes).

Choices (the paper does not fix them):
- w is initialised to zeros, so M1/M3 start from the uniform mixture = B0-WM.
- The gate MLP is Linear(d, gate_hidden) -> GELU -> Linear(gate_hidden, K), gate_hidden = d // 2 by default
  (384 for all-mpnet-base-v2). Its output layer (weight and bias) is zero-initialised, so M2 also starts from
  the uniform mixture; the output layer gets gradients from the first step, the hidden layer once it is non-zero.
  The gate reads P(H^(L)) without detaching, so its gradient also reaches the backbone.
- The M3 heads phi_l are nn.Linear(d, d) initialised to the identity with bias 0: training starts from the plain
  per-layer mean pools, so the per-layer losses first act on the backbone's own layer representations.
- The readout's parameters stay in their own dtype (float32 by default): alpha is computed there and cast to the
  hidden states' dtype for the mixture; the gate and heads read their input cast to their own dtype.
- gate_hidden with a mode other than "gated", and deep_supervision with a mode other than "learned", raise
  ValueError rather than being ignored.

A saved model reloads with ``SentenceTransformer(path, trust_remote_code=True)`` (sentence-transformers imports
module classes outside its namespace only with trust_remote_code; spherekit must be importable). The Transformer
saves its HF config with output_hidden_states=True, so the reloaded model feeds the readout again.
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch
from sentence_transformers.base.modules.module import Module
from torch import Tensor, nn

from .pooling import pool

MODES = ("uniform", "learned", "gated")


class LayerMixPooling(Module):
    """Mean pooling of a mixture of the last ``num_layers`` hidden layers (see the module docstring).

    Args:
        embedding_dimension: hidden size d of the backbone.
        num_layers: K, how many of the last layers are mixed (>= 1, at most the model's layer count).
        mode: "uniform" (B0-WM), "learned" (M1 / M3) or "gated" (M2).
        gate_hidden: hidden width of the M2 gate MLP (mode "gated" only; default d // 2).
        deep_supervision: M3's training-only per-layer projection heads (mode "learned" only).
    """

    config_keys = ["embedding_dimension", "num_layers", "mode", "gate_hidden", "deep_supervision"]

    def __init__(self, embedding_dimension: int, num_layers: int = 4, mode: str = "learned",
                 gate_hidden: int | None = None, deep_supervision: bool = False):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        for name, value in (("embedding_dimension", embedding_dimension), ("num_layers", num_layers)):
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if gate_hidden is not None and mode != "gated":
            raise ValueError(f"gate_hidden is only used with mode='gated', got gate_hidden={gate_hidden!r} "
                             f"with mode={mode!r}")
        if deep_supervision and mode != "learned":
            raise ValueError(f"deep_supervision=True needs mode='learned' (M3 uses the learned mixture), "
                             f"got mode={mode!r}")
        if mode == "gated":
            gate_hidden = max(1, embedding_dimension // 2) if gate_hidden is None else gate_hidden
            if not (isinstance(gate_hidden, int) and gate_hidden >= 1):
                raise ValueError(f"gate_hidden must be None or an int >= 1, got {gate_hidden!r}")
        self.embedding_dimension, self.num_layers, self.mode = embedding_dimension, num_layers, mode
        self.gate_hidden, self.deep_supervision = gate_hidden, bool(deep_supervision)
        d, k = embedding_dimension, num_layers
        self.w = nn.Parameter(torch.zeros(k)) if mode == "learned" else None
        self.gate = None
        if mode == "gated":
            self.gate = nn.Sequential(nn.Linear(d, gate_hidden), nn.GELU(), nn.Linear(gate_hidden, k))
            nn.init.zeros_(self.gate[2].weight)
            nn.init.zeros_(self.gate[2].bias)
        self.heads = None
        if self.deep_supervision:
            self.heads = nn.ModuleList(nn.Linear(d, d) for _ in range(k))
            with torch.no_grad():
                for head in self.heads:
                    head.weight.copy_(torch.eye(d))
                    head.bias.zero_()

    @property
    def trainable_readout(self) -> bool:
        """True when the readout has parameters to train (learned, gated, deep supervision)."""
        return self.mode != "uniform"

    def drop_deep_supervision(self) -> None:
        """Remove the M3 projection heads in place: the module becomes the plain learned (M1-style) readout."""
        self.heads = None
        self.deep_supervision = False

    def _layers(self, features: dict[str, Any]) -> list[Tensor]:
        hidden = features.get("all_layer_embeddings")
        if hidden is None:
            raise ValueError("LayerMixPooling needs features['all_layer_embeddings'], which the Transformer writes "
                           "only with output_hidden_states=True: call enable_hidden_states(model[0]) or build "
                           "the model with layer_mix_model(...)")
        n_model = len(hidden) - 1  # entry 0 is the embedding output
        if self.num_layers > n_model:
            raise ValueError(f"num_layers={self.num_layers} exceeds the model's {n_model} layers "
                             f"(all_layer_embeddings has {len(hidden)} entries: embeddings + {n_model} layers)")
        return list(hidden[-self.num_layers:])

    def _weights(self, layers: list[Tensor], mask: Tensor | None) -> Tensor:
        """alpha as (B, K) in the readout's dtype (float32 for the uniform mode)."""
        b, k = layers[-1].shape[0], self.num_layers
        if self.mode == "uniform":
            return torch.full((b, k), 1.0 / k, device=layers[-1].device)
        if self.mode == "learned":
            return torch.softmax(self.w, dim=0).expand(b, k)
        top = pool(layers[-1], mask, "mean").to(self.gate[0].weight.dtype)
        return torch.softmax(self.gate(top), dim=-1)

    def forward(self, features: dict[str, Tensor | Any], **kwargs) -> dict[str, Tensor | Any]:
        layers = self._layers(features)
        mask = features.get("attention_mask")
        alpha = self._weights(layers, mask)
        a = alpha.to(layers[0].dtype)
        mixed = sum(a[:, i, None, None] * h for i, h in enumerate(layers))
        features["token_embeddings"] = mixed
        features["sentence_embedding"] = pool(mixed, mask, "mean")
        features["layer_weights"] = alpha
        if self.heads is not None and self.training:
            dtype = self.heads[0].weight.dtype
            features["layer_embeddings"] = torch.stack(
                [head(pool(h, mask, "mean").to(dtype)) for head, h in zip(self.heads, layers)])
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        """Write the inference readout: config with deep_supervision=False and the weights without the heads."""
        config = {**self.get_config_dict(), "deep_supervision": False}
        with open(os.path.join(output_path, self.config_file_name), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=4)
        weights = {k: v.detach().contiguous() for k, v in self.state_dict().items() if not k.startswith("heads.")}
        if safe_serialization:
            from safetensors.torch import save_file

            save_file(weights, os.path.join(output_path, "model.safetensors"))
        else:
            torch.save(weights, os.path.join(output_path, "pytorch_model.bin"))

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> LayerMixPooling:
        hub = dict(subfolder=subfolder, token=token, cache_folder=cache_folder, revision=revision,
                   local_files_only=local_files_only)
        module = cls(**cls.load_config(model_name_or_path, **hub))
        return cls.load_torch_weights(model_name_or_path, model=module, **hub)


def enable_hidden_states(transformer) -> None:
    """Make a sentence-transformers Transformer module write features['all_layer_embeddings']: it does so when
    its HF model's config (``transformer.model.config``) has output_hidden_states=True."""
    config = getattr(getattr(transformer, "model", None), "config", None)
    if config is None:
        raise TypeError(f"transformer must be a sentence-transformers Transformer module with an HF model "
                        f"(.model.config), got {type(transformer).__name__}")
    config.output_hidden_states = True


def layer_mix_model(backbone, mode: str, num_layers: int = 4, deep_supervision: bool = False,
                    gate_hidden: int | None = None):
    """SentenceTransformer([backbone[0], LayerMixPooling(...)]) on the backbone's device: the backbone's
    Transformer with hidden states enabled; its Pooling / Normalize modules are dropped. The Transformer module
    is shared with ``backbone``, not copied."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.transformer import Transformer

    transformer = backbone[0]
    if not isinstance(transformer, Transformer):
        raise TypeError(f"backbone[0] must be a sentence-transformers Transformer, got {type(transformer).__name__}")
    n_model = getattr(transformer.model.config, "num_hidden_layers", None)
    if isinstance(n_model, int) and num_layers > n_model:
        raise ValueError(f"num_layers={num_layers} exceeds the model's {n_model} layers")
    enable_hidden_states(transformer)
    readout = LayerMixPooling(transformer.get_embedding_dimension(), num_layers, mode,
                              gate_hidden=gate_hidden, deep_supervision=deep_supervision)
    return SentenceTransformer(modules=[transformer, readout], device=str(backbone.device))
