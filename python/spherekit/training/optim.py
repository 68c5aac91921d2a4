"""Parameter groups with layerwise learning-rate decay and a head multiplier (one AdamW for everything).

For a SentenceTransformer whose first module is a Transformer with L layers, a parameter gets

    lr(p) = base_lr * decay ** (L - depth(p))      inside the Transformer
    lr(p) = base_lr * head_multiplier               in every later module (pooling heads, readouts)
    lr(p) = base_lr * module.lr_multiplier          in a later module that sets `lr_multiplier` (its own rate)

depth = 0 for the embeddings (the lowest rate), l + 1 for the l-th layer (0-based, as numbered in the
parameter name: `encoder.layer.3.`, `layers.3.`, `h.3.`, `blocks.3.`), and L for the rest of the
Transformer (pooler, final norm, MPNet's shared relative-attention bias): the top rate. This is the
discriminative fine-tuning of "Universal Language Model Fine-tuning for Text Classification" (Howard
and Ruder, 2018), as used with decay 0.9 and heads at 5x by "Principles of Concept Representation in
Sentence Encoders" (section 4.4). Weight decay follows transformers' Trainer: none on biases and
normalisation weights.
"""

from __future__ import annotations

import re

from torch import nn

_LAYER = re.compile(r"(?:^|\.)(?:layer|layers|h|block|blocks)\.(\d+)\.")


def transformer_depth(name: str, num_layers: int) -> int:
    """Depth of a Transformer parameter (see the module docstring)."""
    if "embeddings" in name or "embed_tokens" in name or "wte" in name or "wpe" in name:
        return 0
    match = _LAYER.search(name)
    if match:
        index = int(match.group(1))
        if not 0 <= index < num_layers:
            raise ValueError(f"parameter {name!r}: layer index {index} outside [0, {num_layers})")
        return index + 1
    return num_layers


def num_transformer_layers(module: nn.Module) -> int:
    """L of a sentence-transformers Transformer module (its HF config's num_hidden_layers)."""
    hf = getattr(module, "auto_model", None) or getattr(module, "model", None)
    config = getattr(hf, "config", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(getattr(config, "text_config", None),
                                                                   "num_hidden_layers", None)
    if not isinstance(layers, int) or layers < 1:
        raise ValueError(f"cannot find num_hidden_layers in the config of {type(module).__name__}")
    return layers


def parameter_lrs(model: nn.Module, lr: float, layer_decay: float = 1.0,
                  head_multiplier: float = 1.0) -> dict[str, float]:
    """{parameter name: learning rate} for every trainable parameter of a SentenceTransformer."""
    if not 0 < layer_decay <= 1:
        raise ValueError(f"layer_decay must be in (0, 1], got {layer_decay!r}")
    if head_multiplier <= 0:
        raise ValueError(f"head_multiplier must be > 0, got {head_multiplier!r}")
    first = model[0]
    n_layers = num_transformer_layers(first)
    inner = {id(p): n for n, p in first.named_parameters()}
    own = _own_multipliers(model, inner)
    out = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if id(p) in inner:
            out[name] = lr * layer_decay ** (n_layers - transformer_depth(inner[id(p)], n_layers))
        else:
            out[name] = lr * own.get(id(p), head_multiplier)
    return out


def _own_multipliers(model: nn.Module, inner: dict) -> dict[int, float]:
    """{id(parameter): multiplier} for the parameters of modules after the Transformer that set `lr_multiplier`."""
    out = {}
    for name, module in model.named_modules():
        multiplier = getattr(module, "lr_multiplier", None)
        if multiplier is None:
            continue
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or not multiplier > 0:
            raise ValueError(f"module {name!r}: lr_multiplier must be a number > 0, got {multiplier!r}")
        params = list(module.parameters())
        if any(id(p) in inner for p in params):
            raise ValueError(f"module {name!r}: lr_multiplier is for modules after the Transformer (its layers "
                             "follow layer_decay)")
        out.update({id(p): float(multiplier) for p in params})
    return out


def param_groups(model: nn.Module, lr: float, *, layer_decay: float = 1.0, head_multiplier: float = 1.0,
                 weight_decay: float = 0.0, no_decay: set[str] | None = None) -> list[dict]:
    """Optimizer groups, one per distinct (lr, weight decay). `no_decay`: parameter names without weight
    decay (default: biases and names containing 'norm', case-insensitive)."""
    lrs = parameter_lrs(model, lr, layer_decay, head_multiplier)
    groups: dict[tuple[float, float], dict] = {}
    for name, p in model.named_parameters():
        if name not in lrs:
            continue
        skip = name in no_decay if no_decay is not None else (name.endswith("bias") or "norm" in name.lower())
        wd = 0.0 if skip else weight_decay
        group = groups.setdefault((lrs[name], wd), {"params": [], "names": [], "lr": lrs[name], "weight_decay": wd})
        group["params"].append(p)
        group["names"].append(name)
    return list(groups.values())
