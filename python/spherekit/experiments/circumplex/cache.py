"""Frozen-backbone speedup: a backbone's last hidden states computed once per text, reused by every head.

"Mapping the Circumplex of Affect" freezes its LLM backbones and trains only the head (its Table 3). With a
frozen backbone in eval mode the head's input h_{1:T_i}(x_i) = Backbone(x_i) is a fixed function of the text,
so it is computed once:

    TokenStateCache.load_or_build(backbone, texts, folder)   states[i] = h_{1:T_i}(x_i), (T_i, d), stored
                                                              trimmed to the true length T_i (no padding)
    CachedTokenStates(cache)                                  the first module of a SentenceTransformer:
        preprocess(texts)  -> {"cache_index": (B,), "input_ids": the same (B,) tensor}
        forward(features)  -> "token_embeddings" (B, T_max, d), zero at padding, "attention_mask" (B, T_max)

The batch is padded on the tokenizer's padding side, so it has the layout the Transformer module would give
(T_max = longest text of the batch, as with the collator's "longest" padding); the head masks padding keys
and pools with the mask, so the zeros never reach an output. `input_ids` repeats the index only because
SentenceTransformerTrainer.collect_features finds a column's features by that suffix. The states come out in
the backbone's dtype (as the Transformer module's would); training with spherekit.training.trainer.train then sees
the same batches, and (float32 storage) the same numbers, as the uncached frozen model.

Building runs the texts longest first, `batch_size` per forward. A text's states do not depend on its batch
when the tokenizer pads on the right or positions are relative (rotary); a left-padded backbone with
absolute position embeddings is batch-dependent even uncached (build with batch_size=1 for exact states).

Storage dtype (`dtype`): "auto" = bfloat16 when the backbone runs in bfloat16 (lossless), otherwise float16
(relative error <= 2^-11, half of float32's memory; |h| > 65504 is refused, use bfloat16 there); "float32"
is exact. The cache folder is keyed by everything the states depend on: the backbone's name or path, its
commit hash, config, tokenizer, a fingerprint of its weights (strided samples of every tensor), its dtype,
max_seq_length, the storage dtype and the set of texts; a cache built for another backbone, max length or
dtype is never reused. Files are written atomically (spherekit._atomic: a temporary name, then os.replace);
meta.json, written last, holds the spec and the sha256 of the other two files. load() checks both checksums
and raises spherekit._store.CacheDamagedError naming the file that fails; load_or_build rebuilds then.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from sentence_transformers.base.modules.input_module import InputModule
from torch import Tensor

from ..._atomic import atomic_path, atomic_write_bytes, atomic_write_text
from ..._store import CacheDamagedError, sha256_file

FORMAT = 2  # 2: meta.json = {"spec", "sha256"}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
STATES_FILE, TEXTS_FILE, META_FILE = "states.safetensors", "texts.json", "meta.json"
FLOAT16_MAX = 65504.0


def _sha(data: str | bytes, n: int = 16) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()[:n]


def _distinct(texts: Iterable[str]) -> list[str]:
    texts = list(texts)
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(f"texts must be strings, got {type(bad).__name__}: {bad!r}")
    if not texts:
        raise ValueError("texts is empty")
    return sorted(set(texts))


def weights_fingerprint(module: torch.nn.Module, samples: int = 4096) -> str:
    """sha256 over every tensor's name, shape, dtype and `samples` evenly strided values (cheap for an 8B model,
    and different for any two independently initialised or fine-tuned weight sets)."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}".encode())
        if t.device.type != "meta" and t.numel():
            flat = t.detach().reshape(-1)
            h.update(flat[:: max(1, flat.numel() // samples)][:samples].float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _tokenizer_fingerprint(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # without the truncation / padding state, which every encode call resets
        state = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        body = json.dumps(state, sort_keys=True)
    else:
        body = json.dumps(sorted(tokenizer.get_vocab().items()))
    sides = f"{type(tokenizer).__name__}|{getattr(tokenizer, 'padding_side', '')}|" \
            f"{getattr(tokenizer, 'truncation_side', '')}"
    return _sha(sides + body)


def backbone_spec(model) -> dict[str, Any]:
    """What a frozen backbone's token states depend on (all but the texts and the storage dtype)."""
    transformer = model[0]
    hf = getattr(transformer, "auto_model", None)
    if hf is None or not hasattr(transformer, "tokenizer"):
        raise ValueError("model[0] must be a sentence-transformers Transformer module, "
                         f"got {type(transformer).__name__}")
    config = hf.config
    dtype = next(transformer.parameters()).dtype
    return {
        "format": FORMAT,
        "model": str(getattr(config, "_name_or_path", "") or getattr(hf, "name_or_path", "")),
        "revision": getattr(config, "_commit_hash", None),
        "config": _sha(config.to_json_string(use_diff=False)),
        "module": _sha(json.dumps(transformer.get_config_dict(), sort_keys=True, default=str)),
        "tokenizer": _tokenizer_fingerprint(transformer.tokenizer),
        "weights": weights_fingerprint(transformer),
        "backbone_dtype": str(dtype).removeprefix("torch."),
        "max_seq_length": transformer.max_seq_length,
        "padding_side": getattr(transformer.tokenizer, "padding_side", "right"),
        "hidden_size": transformer.get_embedding_dimension(),
        "num_attention_heads": getattr(config, "num_attention_heads", None),
        "num_hidden_layers": getattr(config, "num_hidden_layers", None),
    }


def resolve_dtype(dtype: str, backbone_dtype: str) -> str:
    """"auto" -> "bfloat16" for a bfloat16 backbone, else "float16"; other names are checked."""
    if dtype == "auto":
        return "bfloat16" if backbone_dtype == "bfloat16" else "float16"
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {tuple(DTYPES)}, got {dtype!r}")
    return dtype


def cache_key(spec: dict[str, Any]) -> str:
    """Folder name of a cache: readable model tail + sha256 of the full spec."""
    tail = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(spec["model"] or "model").name)[:40]
    return f"{tail}-{_sha(json.dumps(spec, sort_keys=True))}"


class TokenStateCache:
    """Per-text last hidden states of a frozen backbone: `states` (sum_i T_i, d) in the storage dtype, text i
    at rows offsets[i] : offsets[i] + lengths[i]. `texts` are the distinct texts, sorted; `spec` the key."""

    def __init__(self, texts: list[str], states: Tensor, lengths: Tensor, spec: dict[str, Any],
                 path: Path | None = None):
        if len(texts) != len(lengths) or int(lengths.sum()) != states.shape[0]:
            raise ValueError("texts, lengths and states disagree: "
                             f"{len(texts)} texts, {len(lengths)} lengths, {states.shape[0]} rows")
        self.texts, self.states, self.spec, self.path = texts, states, spec, path
        self.lengths = lengths.to(torch.long)
        self.offsets = torch.cumsum(self.lengths, 0) - self.lengths
        self.index = {t: i for i, t in enumerate(texts)}

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def dim(self) -> int:
        return self.states.shape[1]

    @classmethod
    def spec_for(cls, model, texts: Iterable[str], dtype: str = "auto") -> dict[str, Any]:
        spec = backbone_spec(model)
        distinct = _distinct(texts)
        spec["dtype"] = resolve_dtype(dtype, spec["backbone_dtype"])
        spec["texts"] = _sha(json.dumps(distinct, ensure_ascii=False))
        spec["n_texts"] = len(distinct)
        return spec

    @classmethod
    @torch.inference_mode()
    def build(cls, model, texts: Iterable[str], *, dtype: str = "auto", batch_size: int = 32,
              progress: bool = False) -> TokenStateCache:
        """Encode every distinct text once through model[0] (eval mode, longest texts first, batch_size per
        forward) and keep its states at the real tokens (attention_mask == 1)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        from sentence_transformers.util import batch_to_device

        spec = cls.spec_for(model, texts, dtype)
        distinct, store = _distinct(texts), DTYPES[spec["dtype"]]
        transformer = model[0]
        order = sorted(range(len(distinct)), key=lambda i: -len(distinct[i]))
        starts = range(0, len(order), batch_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="token states", unit="batch")
        per_text: list[Tensor | None] = [None] * len(distinct)
        was_training = transformer.training
        transformer.eval()
        try:
            for s in starts:
                chunk = order[s:s + batch_size]
                feats = batch_to_device(model.preprocess([distinct[i] for i in chunk]), model.device)
                out = transformer(feats)
                h, mask = out["token_embeddings"], out["attention_mask"].bool()
                if store == torch.float16 and bool((h.abs() > FLOAT16_MAX).any()):
                    raise ValueError("token states exceed float16's range (|h| > 65504): use dtype='bfloat16' "
                                     "or 'float32'")
                for row, i in enumerate(chunk):
                    per_text[i] = h[row][mask[row]].to(device="cpu", dtype=store)
        finally:
            transformer.train(was_training)
        lengths = torch.tensor([t.shape[0] for t in per_text], dtype=torch.long)
        return cls(distinct, torch.cat(per_text).contiguous(), lengths, spec)

    @classmethod
    def load_or_build(cls, model, texts: Iterable[str], folder, *, dtype: str = "auto", batch_size: int = 32,
                      progress: bool = False) -> TokenStateCache:
        """The cache under folder/<cache_key(spec)>/ if one was completed for exactly this spec, else build it
        and save it there."""
        texts = list(texts)
        spec = cls.spec_for(model, texts, dtype)
        path = Path(folder) / cache_key(spec)
        if (path / META_FILE).is_file():
            try:
                cache = cls.load(path)
                if cache.spec == spec:
                    return cache
            except CacheDamagedError as exc:
                warnings.warn(f"{exc}; rebuilding it", RuntimeWarning, stacklevel=2)
        cache = cls.build(model, texts, dtype=dtype, batch_size=batch_size, progress=progress)
        cache.save(path)
        return cache

    def save(self, path) -> Path:
        """states.safetensors, texts.json, then meta.json (written last: its presence marks a complete cache;
        it holds the spec and the sha256 of the other two)."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / META_FILE).unlink(missing_ok=True)
        tensors = {"states": self.states.contiguous(), "lengths": self.lengths}
        with atomic_path(path / STATES_FILE) as tmp:
            save_file(tensors, str(tmp))
        atomic_write_bytes(path / TEXTS_FILE, json.dumps(self.texts, ensure_ascii=False).encode("utf-8"))
        sha = {name: sha256_file(path / name) for name in (STATES_FILE, TEXTS_FILE)}
        atomic_write_text(path / META_FILE, json.dumps({"spec": self.spec, "sha256": sha}, indent=1, sort_keys=True))
        self.path = path
        return path

    @classmethod
    def load(cls, path) -> TokenStateCache:
        """The cache saved in folder `path`. FileNotFoundError when it has no meta.json (never completed);
        CacheDamagedError naming the file when a file fails its checksum or cannot be decoded."""
        from safetensors.torch import load_file

        path = Path(path)
        meta_file = path / META_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"no complete token-state cache in {path} (missing {META_FILE})")
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            spec, sha = meta["spec"], dict(meta["sha256"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CacheDamagedError(meta_file, f"not a token-state cache meta.json of format {FORMAT}: "
                                               f"{type(exc).__name__}: {exc}") from exc
        for name in (STATES_FILE, TEXTS_FILE):
            try:
                actual = sha256_file(path / name)
            except OSError as exc:
                raise CacheDamagedError(path / name, f"unreadable: {exc}") from exc
            if actual != sha.get(name):
                raise CacheDamagedError(path / name, f"sha256 differs from the one in {META_FILE}")
        texts = json.loads((path / TEXTS_FILE).read_text(encoding="utf-8"))
        tensors = load_file(str(path / STATES_FILE))
        return cls(texts, tensors["states"], tensors["lengths"], spec, path)

    def lookup(self, texts: Sequence[str]) -> Tensor:
        """(B,) int64 cache indices; a text the cache lacks is a KeyError naming it."""
        try:
            return torch.tensor([self.index[t] for t in texts], dtype=torch.long)
        except KeyError as exc:
            raise KeyError(f"text not in the token-state cache ({len(self)} texts, built from "
                           f"{self.spec['model']!r}): {exc.args[0]!r}") from None

    def batch(self, index: Tensor, dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
        """(token_embeddings (B, T_max, d), attention_mask (B, T_max) int64) for cache indices `index`, padded
        with zeros on the backbone tokenizer's side, on index's device, in `dtype` (default: backbone's)."""
        dtype = dtype or DTYPES[self.spec["backbone_dtype"]]
        idx = index.detach().to(device="cpu", dtype=torch.long).reshape(-1)
        lengths = self.lengths[idx]
        t_max = int(lengths.max()) if len(idx) else 0
        pos = torch.arange(t_max).expand(len(idx), t_max)
        if self.spec["padding_side"] == "left":
            pos = pos - (t_max - lengths)[:, None]
        valid = (pos >= 0) & (pos < lengths[:, None])
        rows = torch.where(valid, self.offsets[idx][:, None] + pos, 0)
        h = self.states[rows].to(dtype) if self.states.shape[0] else torch.zeros(len(idx), t_max, self.dim)
        h = torch.where(valid[..., None], h.to(dtype), torch.zeros((), dtype=dtype))
        return h.to(index.device), valid.to(device=index.device, dtype=torch.long)


class CachedTokenStates(InputModule):
    """First module of a SentenceTransformer that reads a TokenStateCache instead of running the backbone.

    preprocess(texts) -> {"cache_index", "input_ids"} (the same (B,) indices; unknown text -> KeyError);
    forward adds "token_embeddings" (B, T_max, d) and "attention_mask" (B, T_max). No parameters.
    save() writes a pointer to the cache folder (trainer checkpoints and resuming work while the folder
    exists); for a deployable model, swap the real backbone back in (models.to_uncached).
    """

    config_keys = ["cache_path"]
    config_file_name = "cached_token_states_config.json"
    save_in_root = False

    def __init__(self, cache: TokenStateCache | str | os.PathLike):
        super().__init__()
        self.cache = cache if isinstance(cache, TokenStateCache) else TokenStateCache.load(cache)
        spec = self.cache.spec
        self.max_seq_length = spec["max_seq_length"]
        # spherekit.training.optim reads num_hidden_layers through `.model.config` (the cached backbone's depth)
        self.model = SimpleNamespace(config=SimpleNamespace(
            num_hidden_layers=spec["num_hidden_layers"], num_attention_heads=spec["num_attention_heads"],
            hidden_size=spec["hidden_size"]))

    @property
    def cache_path(self) -> str | None:
        return None if self.cache.path is None else str(Path(self.cache.path).resolve())

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs) -> dict[str, Tensor]:
        max_length = kwargs.get("max_length")
        if max_length is not None and max_length != self.max_seq_length:
            raise ValueError(f"max_length={max_length} differs from the cache's max_seq_length "
                             f"{self.max_seq_length}; build a cache for it")
        texts = [(prompt or "") + t for t in inputs]
        index = self.cache.lookup(texts)
        return {"cache_index": index, "input_ids": index}

    def forward(self, features: dict[str, Tensor | Any], **kwargs) -> dict[str, Tensor | Any]:
        index = features["cache_index"]
        features["token_embeddings"], features["attention_mask"] = self.cache.batch(index)
        return features

    def get_embedding_dimension(self) -> int:
        return self.cache.dim

    def save(self, output_path: str, *args, **kwargs) -> None:
        if self.cache.path is None:
            raise ValueError("this TokenStateCache was never saved: save it (TokenStateCache.save) before "
                             "saving a model that reads it")
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> CachedTokenStates:
        config = cls.load_config(model_name_or_path, subfolder=subfolder, token=token, cache_folder=cache_folder,
                                 revision=revision, local_files_only=local_files_only)
        return cls(config["cache_path"])
