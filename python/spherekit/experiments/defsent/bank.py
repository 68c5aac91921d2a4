"""Entry embeddings of DefSent+ (arXiv:2405.16153, eq. 2) and the poolings that read a sentence vector.

    entry_embed(e) = (1/m) sum_j pooling(encoder("[CLS] definition_j [SEP]"))       (m definitions of e)

    AC   pooling = the last hidden state of [CLS] (token 0; not the pooler output)
    AMP  pooling = the attention-masked mean of the last hidden states, special tokens included

The encoder runs in eval mode (no dropout), without gradients, on batches of definitions sorted by length
(little padding); rows come back in input order. `build_bank` caches the bank on disk under a key of the
encoder's weights, the dictionary's text and the settings (bank_key), so a rerun (or the next seed) reuses it.

Evaluation poolings (sec. 3.2): "cls" and "mean" as above, "prompt": the last hidden state of the mask
token in `This sentence : "<s>" means [MASK] .` (the released code's string).
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor

from .spec import WORD_BANK

POOLINGS = ("cls", "mean", "prompt")
BANK_POOLING = {"ac": "cls", "amp": "mean"}


def encoder_parts(model):
    """(Hugging Face model, tokenizer) of a SentenceTransformer (its first module) or of such a pair."""
    if isinstance(model, tuple):
        return model
    first = model[0]
    return first.auto_model, first.tokenizer


def _pool(hidden: Tensor, batch, pooling: str, mask_id: int | None) -> Tensor:
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        m = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
    is_mask = batch["input_ids"] == mask_id
    if not bool((is_mask.sum(1) == 1).all()):
        raise ValueError("prompt pooling: every prompt must hold exactly one mask token after tokenisation "
                         "(a sentence containing the mask token, or truncation, breaks it)")
    return hidden[is_mask]


def prompt_texts(texts, tokenizer, template: str, max_length: int) -> list[str]:
    """The prompts of `texts`; a sentence too long for max_length is cut (by tokens) so that the template and
    its mask token stay whole."""
    if tokenizer.mask_token is None:
        raise ValueError("prompt pooling needs a tokenizer with a mask token")
    overhead = len(tokenizer(template.format(sentence="", mask=tokenizer.mask_token))["input_ids"])
    budget = max_length - overhead
    if budget < 1:
        raise ValueError(f"max_length {max_length} leaves no room for a sentence in the prompt {template!r}")
    out = []
    for t in texts:
        tokens = tokenizer.tokenize(t)
        if len(tokens) > budget:
            t = tokenizer.convert_tokens_to_string(tokens[:budget])
        out.append(template.format(sentence=t, mask=tokenizer.mask_token))
    return out


def encode_pooled(model, texts, pooling: str, *, batch_size: int = 64, max_length: int = 150,
                  template: str = 'This sentence : "{sentence}" means {mask} .', progress: bool = False,
                  desc: str = "encoding") -> Tensor:
    """(N, d) float32 pooled last hidden states of `texts` (see the module docstring), in input order."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    return encode_poolings(model, texts, (pooling,), batch_size=batch_size, max_length=max_length,
                           template=template, progress=progress, desc=desc)[pooling]


@torch.no_grad()
def encode_poolings(model, texts, poolings, *, batch_size: int = 64, max_length: int = 150,
                    template: str = 'This sentence : "{sentence}" means {mask} .', progress: bool = False,
                    desc: str = "encoding") -> dict[str, Tensor]:
    """{pooling: (N, d) float32} of `texts` from one forward pass: "cls" and "mean" read the same last hidden
    states; "prompt" encodes other inputs (the template), so it goes alone."""
    from tqdm.auto import tqdm

    poolings = tuple(poolings)
    if not poolings or any(p not in POOLINGS for p in poolings):
        raise ValueError(f"poolings must be one or more of {POOLINGS}, got {poolings!r}")
    if "prompt" in poolings and len(poolings) > 1:
        raise ValueError(f"prompt pooling encodes its own inputs and cannot share a pass, got {poolings!r}")
    hf, tok = encoder_parts(model)
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty")
    if poolings == ("prompt",):
        texts = prompt_texts(texts, tok, template, max_length)
    was_training = hf.training
    hf.eval()
    device = next(hf.parameters()).device
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    out = {p: torch.empty(len(texts), hf.config.hidden_size) for p in poolings}
    try:
        for start in tqdm(range(0, len(order), batch_size), desc=desc, disable=not progress, leave=False):
            idx = order[start:start + batch_size]
            batch = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt").to(device)
            hidden = hf(**batch).last_hidden_state
            for p in poolings:
                out[p][idx] = _pool(hidden, batch, p, tok.mask_token_id).float().cpu()
    finally:
        hf.train(was_training)
    return out


def entry_means(vectors: Tensor, labels, n_entries: int) -> Tensor:
    """Row e = the mean of the vectors whose label is e (eq. 2); every entry needs at least one."""
    labels = torch.as_tensor(labels, dtype=torch.long)
    sums = torch.zeros(n_entries, vectors.shape[1], dtype=torch.float64).index_add_(0, labels, vectors.double())
    counts = torch.bincount(labels, minlength=n_entries)
    if bool((counts == 0).any()):
        raise ValueError(f"entry {int((counts == 0).nonzero()[0])} has no definition to average")
    return (sums / counts.unsqueeze(1)).float()


def model_key(model) -> str:
    """A hash of the encoder's weights (names, shapes and bytes)."""
    hf, _ = encoder_parts(model)
    h = hashlib.sha256()
    for name, t in sorted(hf.state_dict().items()):
        h.update(name.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def data_key(dictionary) -> str:
    h = hashlib.sha256()
    for entry, defs in zip(dictionary.entries, dictionary.definitions):
        h.update(entry.encode() + b"\t" + "\x1f".join(defs).encode() + b"\n")
    return h.hexdigest()[:16]


def word_ids(model, dictionary) -> list[int]:
    """The vocabulary id of each entry of `dictionary` (DefSent's classes). Every entry must be one token of the
    vocabulary (dictionary c); entries that share a token (e.g. accent variants in an uncased vocabulary) share an
    id, as they share DefSent's output class."""
    _, tok = encoder_parts(model)
    special = set(tok.all_special_tokens)
    ids = []
    for entry in dictionary.entries:
        tokens = tok.tokenize(entry)
        if len(tokens) != 1 or tokens[0] in special:
            raise ValueError(f"word bank: entry {entry!r} of dictionary {dictionary.name} is not one token of the "
                             f"backbone's vocabulary (tokens {tokens}); the word bank needs single-token entries "
                             "(dictionary c)")
        ids.append(tok.convert_tokens_to_ids(tokens[0]))
    return ids


def word_bank(model, dictionary) -> Tensor:
    """(E, d) the older stand-in for DefSent's bank (defsent_head "pooler"): row e = the backbone's input embedding
    of entry e's token, bank[e] = W_emb[token(e)], with the pooler in place of DefSent's MLM transform (mlm_head has
    DefSent's own head)."""
    hf, _ = encoder_parts(model)
    ids = torch.tensor(word_ids(model, dictionary))
    return hf.get_input_embeddings().weight.detach()[ids].float().cpu().clone()


def bank_key(model, dictionary, kind: str, max_length: int) -> str:
    """What a bank depends on: the encoder's weights, the dictionary's text, the kind and the truncation."""
    return f"{model_key(model)}-{data_key(dictionary)}-{kind}-{max_length}"


def cached_tensors(path, build):
    """torch.load(path) when the file exists, else build() (a tensor, or a dict of tensors and plain values) saved
    there atomically; path None: build() alone."""
    from pathlib import Path

    from ..._atomic import atomic_path

    if path is None:
        return build()
    path = Path(path)
    if path.is_file():
        return torch.load(path)
    out = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save(out, tmp)
    return out


def build_bank(model, dictionary, kind: str, *, cache_dir=None, batch_size: int = 64, max_length: int = 150,
               progress: bool = False) -> Tensor:
    """(E, d) bank of `kind` ("ac" | "amp", cached under cache_dir; "word": word_bank) for every entry of
    `dictionary`."""
    if kind == WORD_BANK:
        return word_bank(model, dictionary)
    if kind not in BANK_POOLING:
        raise ValueError(f"bank kind must be one of {(*BANK_POOLING, WORD_BANK)}, got {kind!r}")

    def build() -> Tensor:
        texts, labels = dictionary.pairs()
        vectors = encode_pooled(model, texts, BANK_POOLING[kind], batch_size=batch_size, max_length=max_length,
                                progress=progress, desc=f"{kind.upper()} bank ({dictionary.name})")
        return entry_means(vectors, labels, dictionary.n_entries)

    path = None if cache_dir is None else cache_dir / f"bank-{bank_key(model, dictionary, kind, max_length)}.pt"
    return cached_tensors(path, build)


def check_bank_width(bank: Tensor, model) -> None:
    hf, _ = encoder_parts(model)
    if bank.dim() != 2 or bank.shape[1] != hf.config.hidden_size:
        raise ValueError(f"bank has shape {tuple(bank.shape)} but the encoder's width is {hf.config.hidden_size}: "
                         "build the bank with the same backbone")
