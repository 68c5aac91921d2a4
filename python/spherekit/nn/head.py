"""HypersphereHead: "Mapping the Circumplex of Affect" (arXiv:2601.06575)'s projection head as a
sentence-transformers module (after the Transformer).

    h_0 = Norm(token_embeddings)  (kind="ngpt": the head works on the sphere)  |  token_embeddings  (kind="gpt")
    h_l = Block_l(h_{l-1}, attention_mask),  l = 1..n_layers   (NGPTBlock or GPTBlock)
    e   = Norm(P(Pool(h_L)))     (eq. 3 / 13; P the optional projection to output_dim; Norm unless normalize=False)

It reads features["token_embeddings"] and features["attention_mask"], writes features["sentence_embedding"]
(e) and replaces features["token_embeddings"] with h_L. It saves a config.json and model.safetensors like
sentence-transformers' own modules. sentence-transformers 6 imports module classes outside its namespace only
with trust_remote_code=True, so reload with ``SentenceTransformer(path, trust_remote_code=True)`` (spherekit
must be importable; no file is fetched).

    transformer = Transformer("intfloat/multilingual-e5-large")
    head = HypersphereHead.from_transformer(transformer, kind="ngpt", pooling="cls")
    model = SentenceTransformer(modules=[transformer, head])
    # freeze_backbone(model)  for the frozen-LLM setting; train with callbacks=[RenormalizeCallback()]

"Mapping the Circumplex of Affect"'s setup (its Table 3): one block with the backbone's hidden size and head count;
pooling cls for BERT-like encoders, last for decoder-only LLMs and Qwen3-Embedding, mean for Llama-Embed-Nemotron;
BERT-like backbones fine-tuned, LLM backbones frozen; bf16, lr 5e-5 constant, batch 128, 15 epochs, seed 42, tau
0.05 (SINCERE / SoftCSE). Those training settings belong to the trainer, not to this module.
"""

from __future__ import annotations

from typing import Any

from sentence_transformers.base.modules.module import Module
from torch import Tensor, nn

from .. import ops
from .gpt import GPTBlock
from .ngpt import NGPTBlock
from .pooling import POOLING_MODES, pool
from .renorm import renormalize_all_

KINDS = ("ngpt", "gpt")


class HypersphereHead(Module):
    """n_layers nGPT (or GPT) blocks + pooling on top of a backbone ("Mapping the Circumplex of Affect", section
    3.3 / appendix B).

    Args:
        backbone_dim: hidden size of the backbone = the head's d_model.
        kind: "ngpt" (normalised blocks, unit-norm weights; call RenormalizeCallback / renormalize_all_ after
            each optimiser step) or "gpt" (pre-RMSNorm baseline).
        pooling: "cls" (BERT-like), "mean", or "last" (decoder-only LLMs); padding aware.
        n_heads: attention heads ("Mapping the Circumplex of Affect": the backbone's; see ``from_transformer``).
        n_layers: blocks ("Mapping the Circumplex of Affect": 1).
        d_mlp: MLP width (default 4 * backbone_dim, as in nGPT's code; "Mapping the Circumplex of Affect" does
            not state it).
        output_dim: optional bias-free linear projection after pooling (ngpt: unit rows, renormalised too).
        causal: unidirectional attention (match a decoder-only backbone).
        alpha_init: initial geodesic step of the nGPT blocks.
        normalize: L2-normalise the sentence embedding (eq. 3); default True.
        eps: norm clamp (ngpt) / RMSNorm epsilon (gpt).
        backend: backend of the spherekit ops (not saved in the config).
    """

    config_keys = ["backbone_dim", "kind", "pooling", "n_heads", "n_layers", "d_mlp", "output_dim", "causal",
                   "alpha_init", "normalize", "eps"]

    def __init__(self, backbone_dim: int, kind: str = "ngpt", pooling: str = "cls", *, n_heads: int,
                 n_layers: int = 1, d_mlp: int | None = None, output_dim: int | None = None, causal: bool = False,
                 alpha_init: float = 0.05, normalize: bool = True, eps: float = 1e-6, backend: str = "auto"):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, got {pooling!r}")
        if not (isinstance(n_layers, int) and n_layers >= 1):
            raise ValueError(f"n_layers must be an int >= 1, got {n_layers!r}")
        if output_dim is not None and not (isinstance(output_dim, int) and output_dim >= 1):
            raise ValueError(f"output_dim must be None or an int >= 1, got {output_dim!r}")
        self.backbone_dim, self.kind, self.pooling, self.n_heads, self.n_layers = \
            backbone_dim, kind, pooling, n_heads, n_layers
        self.d_mlp = 4 * backbone_dim if d_mlp is None else d_mlp
        self.output_dim, self.causal, self.alpha_init = output_dim, bool(causal), alpha_init
        self.normalize, self.eps, self.backend = bool(normalize), eps, backend
        extra = dict(alpha_init=alpha_init, eps=eps, backend=backend) if kind == "ngpt" else dict(eps=eps)
        block = NGPTBlock if kind == "ngpt" else GPTBlock
        self.blocks = nn.ModuleList(block(backbone_dim, n_heads, self.d_mlp, causal, **extra) for _ in range(n_layers))
        self.proj = None if output_dim is None else nn.Linear(backbone_dim, output_dim, bias=False)
        self.renormalize_weights_()

    @classmethod
    def from_transformer(cls, transformer, kind: str = "ngpt", pooling: str = "cls", **kwargs) -> HypersphereHead:
        """A head matching a sentence-transformers Transformer module: its hidden size and attention head count."""
        config = transformer.auto_model.config
        kwargs.setdefault("n_heads", getattr(config, "num_attention_heads"))
        return cls(transformer.get_embedding_dimension(), kind, pooling, **kwargs)

    def unit_norm_weights(self) -> list[tuple[nn.Parameter, int]]:
        """The projection's rows (ngpt only); the blocks declare their own weights."""
        return [(self.proj.weight, 1)] if self.kind == "ngpt" and self.proj is not None else []

    def renormalize_weights_(self) -> None:
        """Renormalise every unit-norm weight of the head (blocks and projection) in one launch."""
        renormalize_all_(self, eps=self.eps, backend=self.backend)

    def _unit(self, x: Tensor) -> Tensor:
        return ops.l2_normalize(x, -1, eps=self.eps, backend=self.backend)

    def forward(self, features: dict[str, Tensor | Any], **kwargs) -> dict[str, Tensor | Any]:
        if "cu_seq_lens_q" in features:
            raise NotImplementedError("HypersphereHead needs padded (B, T, d) token embeddings; unpadded "
                                      "flash-attention features (cu_seq_lens_q) are not supported")
        mask = features.get("attention_mask")
        h = features["token_embeddings"].to(next(self.parameters()).dtype)
        if self.kind == "ngpt":
            h = self._unit(h)
        for block in self.blocks:
            h = block(h, mask)
        e = pool(h, mask, self.pooling)
        if self.proj is not None:
            e = self.proj(e)
        features["token_embeddings"] = h
        features["sentence_embedding"] = self._unit(e) if self.normalize else e
        return features

    def get_embedding_dimension(self) -> int:
        return self.output_dim or self.backbone_dim

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> HypersphereHead:
        hub = dict(subfolder=subfolder, token=token, cache_folder=cache_folder, revision=revision,
                   local_files_only=local_files_only)
        config = cls.load_config(model_name_or_path, **hub)
        head = cls(**config)
        return cls.load_torch_weights(model_name_or_path, model=head, **hub)


def freeze_backbone(model: nn.Module, frozen: bool = True) -> int:
    """Train only the HypersphereHead(s): requires_grad = not frozen on every other parameter of ``model``
    ("Mapping the Circumplex of Affect" freezes LLM backbones). Returns how many parameter tensors were changed.
    Trainers build their optimiser from parameters with requires_grad, so call this before creating the trainer.
    The Trainer still puts the backbone in train mode (dropout active); set its dropout to 0 for a fully
    deterministic backbone."""
    head_params = {id(p) for m in model.modules() if isinstance(m, HypersphereHead) for p in m.parameters()}
    if not head_params:
        raise ValueError("model contains no HypersphereHead: freezing it would leave nothing to train")
    changed = 0
    for p in model.parameters():
        if id(p) not in head_params:
            p.requires_grad_(not frozen)
            changed += 1
    return changed
