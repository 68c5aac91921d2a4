"""nn.Modules built on spherekit.ops: the nGPT block and its GPT baseline, the sentence-transformers
hypersphere head of "Mapping the Circumplex of Affect" (arXiv:2601.06575), and the weight renormalisation that nGPT
training needs after each step.

The blocks, ScaledParameter and renormalize_all_ need torch only; HypersphereHead / freeze_backbone
(sentence-transformers), the cross-layer readouts LayerMixPooling / enable_hidden_states / layer_mix_model
(``readouts``, sentence-transformers) and RenormalizeCallback (transformers) are imported on first use (the
``st`` extra).

"Training for Compositional Sensitivity Reduces Dense Retrieval Generalization" (arXiv:2604.16351)'s stage-2
verifiers F0..F4 over token similarity maps (``verifiers``), and ``encode_tokens`` for the token embeddings of a
sentence-transformers model, need torch only as well.
"""

from .gpt import GPTBlock
from .ngpt import NGPTBlock
from .pooling import pool
from .renorm import renormalize_all_, unit_norm_weights
from .scaling import ScaledParameter
from .token_encoder import TokenBatch, encode_tokens
from .verifiers import (VERIFIERS, CNNVerifier, GlobalAverageVerifier, MaxSimVerifier, PatchTransformerVerifier,
                        SoftAlignVerifier, build_verifier)
from ._verifier_base import Verifier
from ._cnn_crop import running_stats_frozen

_LAZY = {"HypersphereHead": "head", "freeze_backbone": "head", "RenormalizeCallback": "callbacks",
         "LayerMixPooling": "readouts", "enable_hidden_states": "readouts", "layer_mix_model": "readouts"}

__all__ = ["GPTBlock", "NGPTBlock", "ScaledParameter", "pool", "renormalize_all_", "unit_norm_weights", *_LAZY]
__all__ += ["Verifier", "GlobalAverageVerifier", "MaxSimVerifier", "SoftAlignVerifier", "CNNVerifier",
            "PatchTransformerVerifier", "VERIFIERS", "build_verifier", "TokenBatch", "encode_tokens",
            "running_stats_frozen"]


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
