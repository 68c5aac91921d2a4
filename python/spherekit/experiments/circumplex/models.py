"""The encoder and objective of one condition of "Mapping the Circumplex of Affect" (sections 3.3-3.4, Table 3).

Encoder (build_model), e = Norm(Pool(Block(Dropout(h_{1:T})))) on the unit sphere S^{d-1}:

    [backbone Transformer | CachedTokenStates]   h_{1:T}: last hidden states (B, T, d)
    TokenDropout(p)                              dropout on h_{1:T}; the authors' code uses p = 0.1 before the
                                                 block, the paper is silent (omitted when p = 0)
    HypersphereHead(kind, pooling)               one GPT (eq. 1) or nGPT (eq. 2) block with the backbone's
                                                 width d and head count, d_MLP = 4d; pooling cls / mean /
                                                 last; L2 normalisation
head="none" is the pretrained baseline: Pooling + Normalize on the backbone's states, no trainable head.
Pooling per backbone (resolve_pooling "auto"): the paper's Table 3 ([CLS] for BERT-like encoders, the last token
for decoder-only LLMs and Qwen3-Embedding, mean for llama-embed-nemotron); the head's attention is unidirectional
for a decoder-only backbone (resolve_causal "auto", the paper's appendix B; the authors' code: bidirectional).

Frozen backbones (the paper's LLM rows): requires_grad False on every backbone parameter AND the backbone kept
in eval mode while the trainer puts the model in train mode (FrozenBackboneModel.train), so its dropout is
off and its states are a fixed function of the text; that is what makes the token-state cache (cache.py)
exact. Departure: the authors' HF Trainer leaves a frozen backbone in train mode (dropout active). The head's
weights are initialised under torch.manual_seed(seed) in a forked RNG (the global RNG is untouched).

Objective (build_loss), tau = 0.05 and m = 0 in the paper:
    sincere      SINCERE, eq. 5-6         softcse      SoftCSE with cos(dtheta) weights, eq. 7-8
    circularcse  CircularCSE, eq. 9: (e_i . e_j - cos(theta_{y_i} - theta_{y_j}))^2 (margin m on same labels)
nGPT heads need their weights renormalised after every optimiser step: callbacks("ngpt").

Saving: a model on a real backbone saves as usual and reloads with SentenceTransformer(path,
trust_remote_code=True) (TokenDropout and HypersphereHead are spherekit classes). A model trained on a cache
saves only a pointer to the cache folder; to_uncached(model, backbone) puts the real backbone back in front of
the trained head (checked against the cache's weight fingerprint) and that model is the one to save.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.module import Module
from torch import Tensor, nn

from ...losses import CircularCSELoss, SincereLoss, SoftCSELoss
from ...nn.head import HypersphereHead
from ...nn.pooling import POOLING_MODES
from .cache import CachedTokenStates, backbone_spec

HEADS = ("gpt", "ngpt", "none")
# the paper's pooling per backbone (Table 3, section 4.1: "[CLS] for BERT-like encoders, the last token for
# decoder-only LLMs and Qwen3-Embedding. For Llama-Embed-Nemotron, we utilize mean pooling, consistent with its
# original training methodology"), by a lower-case fragment of the backbone's name or path
PAPER_POOLING = (("llama-embed-nemotron", "mean"), ("qwen3-embedding", "last"), ("multilingual-e5", "cls"),
                 ("mxbai-embed", "cls"), ("llama-3.2", "last"), ("olmo-3", "last"), ("qwen3-14b", "last"))
LOSSES = ("sincere", "softcse", "circularcse")
_ST_POOLING = {"cls": "cls", "mean": "mean", "last": "lasttoken"}


class TokenDropout(Module):
    """Dropout with probability p on features["token_embeddings"] (the head's input; authors' code: 0.1)."""

    config_keys = ["p"]

    def __init__(self, p: float = 0.1):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be a float in [0, 1), got {p!r}")
        self.p = float(p)
        self.dropout = nn.Dropout(self.p)

    def forward(self, features: dict[str, Tensor | Any], **kwargs) -> dict[str, Tensor | Any]:
        features["token_embeddings"] = self.dropout(features["token_embeddings"])
        return features

    def save(self, output_path: str, *args, **kwargs) -> None:
        self.save_config(output_path)


class FrozenBackboneModel(SentenceTransformer):
    """A SentenceTransformer whose first module (the frozen backbone) stays in eval mode: train(mode) puts the
    other modules in `mode` and module 0 in eval. The Trainer calls model.train() every step, so a callback
    could not keep the backbone's dropout off. Saved as a plain SentenceTransformer."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self[0].eval()

    def train(self, mode: bool = True):
        super().train(mode)
        self[0].eval()
        return self


def is_decoder(backbone: SentenceTransformer) -> bool:
    """True for a decoder-only (causal) backbone: its Hugging Face config says is_decoder or names a *ForCausalLM /
    *LMHeadModel architecture (Llama-3.2, OLMo, Qwen3, Qwen3-Embedding and GPT-2 do; BERT-like encoders and the
    bidirectional llama-embed-nemotron do not)."""
    config = backbone[0].auto_model.config
    return bool(getattr(config, "is_decoder", False)) or any(
        str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in (getattr(config, "architectures", None) or ()))


def _backbone_name(backbone: SentenceTransformer) -> str:
    return str(getattr(backbone[0].auto_model.config, "_name_or_path", "") or "").lower()


def resolve_pooling(setting: str, backbone: SentenceTransformer) -> str:
    """The head's pooling: `setting` itself (cls / mean / last), or for "auto" the paper's per backbone
    (PAPER_POOLING by name; otherwise its rule: the last token for a decoder-only backbone, [CLS] else)."""
    if setting != "auto":
        return setting
    name = _backbone_name(backbone)
    for fragment, mode in PAPER_POOLING:
        if fragment in name:
            return mode
    return "last" if is_decoder(backbone) else "cls"


def resolve_causal(setting: str, backbone: SentenceTransformer) -> bool:
    """Whether the head's attention is unidirectional: "causal" / "bidirectional", or for "auto" the paper's rule
    (appendix B: unidirectional for unidirectional backbones, i.e. decoder-only ones)."""
    if setting == "auto":
        return is_decoder(backbone)
    return setting == "causal"


def pooling_of(model: SentenceTransformer) -> dict:
    """{"pooling", "causal"} a model embeds with: its HypersphereHead's, or its sentence-transformers Pooling's
    mode (no head: causal None)."""
    for module in model:
        if isinstance(module, HypersphereHead):
            return {"pooling": module.pooling, "causal": module.causal}
        mode = getattr(module, "pooling_mode", None)
        if mode is not None:
            return {"pooling": mode if isinstance(mode, str) else "+".join(mode), "causal": None}
    return {"pooling": None, "causal": None}


def _backbone_dims(first) -> tuple[int, int, torch.dtype]:
    """(hidden size d, attention heads, dtype) of a Transformer module or a CachedTokenStates."""
    if isinstance(first, CachedTokenStates):
        spec = first.cache.spec
        return spec["hidden_size"], spec["num_attention_heads"], getattr(torch, spec["backbone_dtype"])
    config = first.auto_model.config
    return first.get_embedding_dimension(), config.num_attention_heads, next(first.parameters()).dtype


def build_model(backbone: SentenceTransformer | CachedTokenStates, *, head: str, pooling: str, frozen: bool,
                dropout: float = 0.1, d_mlp: int | None = None, alpha_init: float = 0.05, causal: bool = False,
                seed: int, device: str | None = None) -> SentenceTransformer:
    """The condition's SentenceTransformer (see the module docstring). The backbone's first module is reused
    (not copied): fine-tuning trains it in place. A CachedTokenStates backbone needs frozen=True. causal: the
    head's attention is unidirectional (a decoder-only backbone, the paper's appendix B). device: default the
    backbone's (a cache: sentence-transformers' default)."""
    from sentence_transformers.base.modules import Normalize
    from sentence_transformers.sentence_transformer.modules import Pooling

    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    if pooling not in POOLING_MODES:
        raise ValueError(f"pooling must be one of {POOLING_MODES}, got {pooling!r}")
    if not isinstance(frozen, bool):
        raise ValueError(f"frozen must be a bool, got {frozen!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    cached = isinstance(backbone, CachedTokenStates)
    if cached and not frozen:
        raise ValueError("frozen must be True with a CachedTokenStates backbone (the cache holds a frozen "
                         "backbone's states)")
    if not cached and not isinstance(backbone, SentenceTransformer):
        raise ValueError("backbone must be a SentenceTransformer or a CachedTokenStates, "
                         f"got {type(backbone).__name__}")
    first = backbone if cached else backbone[0]
    d, n_heads, dtype = _backbone_dims(first)
    if frozen:
        for p in first.parameters():
            p.requires_grad_(False)
    if head == "none":
        modules = [first, Pooling(d, _ST_POOLING[pooling]), Normalize()]
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            block = HypersphereHead(d, head, pooling, n_heads=n_heads, d_mlp=d_mlp, alpha_init=alpha_init,
                                    causal=causal)
        modules = [first, *([TokenDropout(dropout)] if dropout else []), block]
    if cached:  # a real backbone's dtype is given to the later modules by SentenceTransformer itself
        for m in modules[1:]:
            m.to(dtype)
    if device is None and not cached:
        device = str(backbone.device)
    return (FrozenBackboneModel if frozen else SentenceTransformer)(modules=modules, device=device)


def to_uncached(model: SentenceTransformer, backbone: SentenceTransformer) -> SentenceTransformer:
    """The trained head of a cache-trained `model` behind the real frozen `backbone` (the one the cache was
    built from: its key spec must match); save that model. A model without a cache is returned unchanged."""
    first = model[0]
    if not isinstance(first, CachedTokenStates):
        return model
    spec, want = backbone_spec(backbone), first.cache.spec
    diff = sorted(k for k in spec if spec[k] != want.get(k))
    if diff:
        raise ValueError(f"backbone is not the one the cache was built from (differs in {diff})")
    transformer = backbone[0]
    for p in transformer.parameters():
        p.requires_grad_(False)
    return FrozenBackboneModel(modules=[transformer, *list(model)[1:]], device=str(backbone.device))


def build_loss(model, loss: str, label_angles_deg: Sequence[float], temperature: float = 0.05,
               margin: float = 0.0) -> nn.Module:
    """SincereLoss (tau) | SoftCSELoss (angles, tau) | CircularCSELoss (angles, margin m) on `model`.
    label_angles_deg[y]: the circumplex angle of label id y in degrees (e.g. love 0, joy 30, ..., trust 330)."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    try:
        angles = [float(a) for a in label_angles_deg]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"label_angles_deg must be a sequence of numbers, got {label_angles_deg!r}") from exc
    if not angles or not all(math.isfinite(a) for a in angles):
        raise ValueError(f"label_angles_deg must be a non-empty sequence of finite angles, got {label_angles_deg!r}")
    radians = [math.radians(a) for a in angles]
    if loss == "sincere":
        return SincereLoss(model, temperature=temperature)
    if loss == "softcse":
        return SoftCSELoss(model, label_angles=radians, temperature=temperature)
    return CircularCSELoss(model, label_angles=radians, margin=margin)


def callbacks(head: str) -> list:
    """Trainer callbacks of a head: nGPT renormalises its weights after every optimiser step."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    if head != "ngpt":
        return []
    from ...nn.callbacks import RenormalizeCallback

    return [RenormalizeCallback()]
