"""DefSent's prediction head, the baseline of DefSent+'s Table 2 (Tsukagoshi, Sasano and Takeda 2021, "DefSent:
Sentence Embeddings using Definition Sentences"; their code: BertForMaskedLM's `cls`, RobertaForMaskedLM's
`lm_head`, frozen, over the whole vocabulary):

    logits(s) = LN(GELU(W p(s) + b)) E^T + c        p(s): CLS or mean of the last hidden states
                                                    E: the input word embeddings (the tied decoder), c: its bias

and the cross-entropy of each definition against its entry's token id over all V tokens (no temperature). The
transform (W, b, LN) and c are frozen; so are E.

A checkpoint with an MLM head gives it (BERT: cls.predictions.*, RoBERTa: lm_head.*). A checkpoint without one (a
sentence-transformers model such as all-MiniLM-L6-v2) gets one fitted here, its encoder frozen: 15% of the
non-special tokens of the unit's dictionary definitions replaced by the mask token, the transform started at the
identity (W = I, b = 0, LN's unit gain and zero shift) and the decoder bias at the masked tokens' smoothed log
frequencies, then trained by AdamW on the masked-token cross-entropy (the tied decoder E fixed). Its held-out
masked-token accuracy goes on the card. This is our stand-in for the pretrained head, not DefSent's own.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .bank import encoder_parts

BERT_KEYS = {"dense.weight": "cls.predictions.transform.dense.weight",
             "dense.bias": "cls.predictions.transform.dense.bias",
             "norm.weight": "cls.predictions.transform.LayerNorm.weight",
             "norm.bias": "cls.predictions.transform.LayerNorm.bias", "bias": "cls.predictions.bias"}
ROBERTA_KEYS = {"dense.weight": "lm_head.dense.weight", "dense.bias": "lm_head.dense.bias",
                "norm.weight": "lm_head.layer_norm.weight", "norm.bias": "lm_head.layer_norm.bias",
                "bias": "lm_head.bias"}
MASK_SHARE = 0.15


def _checkpoint_state(folder: Path) -> dict:
    from safetensors.torch import load_file

    state = {}
    for f in sorted(folder.glob("*.safetensors")):
        state.update(load_file(str(f)))
    if not state:
        for f in sorted(folder.glob("pytorch_model*.bin")):
            state.update(torch.load(f, map_location="cpu"))
    return state


def pretrained_head(model) -> dict | None:
    """{"dense.weight", "dense.bias", "norm.weight", "norm.bias", "bias"} of the checkpoint's MLM head, or None."""
    hf, _ = encoder_parts(model)
    folder = Path(str(hf.config._name_or_path))
    if not folder.is_dir():
        return None
    state = _checkpoint_state(folder)
    for keys in (BERT_KEYS, ROBERTA_KEYS):
        if all(k in state for k in keys.values()):
            return {ours: state[theirs].float().clone() for ours, theirs in keys.items()}
    return None


def _masked_states(model, texts, seed: int, batch_size: int = 64, max_length: int = 64):
    """(hidden states at the masked positions (M, d), their original token ids (M,)) with the encoder frozen."""
    hf, tok = encoder_parts(model)
    rng = random.Random(seed)
    special = set(tok.all_special_ids)
    states, targets = [], []
    was_training = hf.training
    hf.eval()
    device = next(hf.parameters()).device
    try:
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                batch = tok(texts[start:start + batch_size], padding=True, truncation=True, max_length=max_length,
                            return_tensors="pt")
                ids = batch["input_ids"].clone()
                mask = torch.zeros_like(ids, dtype=torch.bool)
                for i in range(ids.shape[0]):
                    positions = [j for j in range(ids.shape[1])
                                 if batch["attention_mask"][i, j] and int(ids[i, j]) not in special]
                    for j in rng.sample(positions, max(1, round(MASK_SHARE * len(positions)))) if positions else []:
                        mask[i, j] = True
                targets.append(ids[mask])
                ids[mask] = tok.mask_token_id
                out = hf(input_ids=ids.to(device), attention_mask=batch["attention_mask"].to(device))
                states.append(out.last_hidden_state[mask.to(device)].float().cpu())
    finally:
        hf.train(was_training)
    return torch.cat(states), torch.cat(targets)


def fit_head(model, texts, *, steps: int, lr: float = 1e-3, batch_size: int = 256, seed: int = 0) -> dict:
    """An MLM head for an encoder that has none (see the module docstring): its parameters and its fit record
    (masked tokens, held-out masked-token accuracy before / after, final training loss)."""
    hf, tok = encoder_parts(model)
    if tok.mask_token_id is None:
        raise ValueError("DefSent's head needs a tokenizer with a mask token")
    states, targets = _masked_states(model, list(texts), seed)
    emb = hf.get_input_embeddings().weight.detach().float().cpu()
    d = states.shape[1]
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(targets), generator=g)
    n_test = max(1, len(order) // 10)
    test, train = order[:n_test], order[n_test:]
    dense, norm = nn.Linear(d, d), nn.LayerNorm(d, eps=hf.config.layer_norm_eps)
    with torch.no_grad():
        dense.weight.copy_(torch.eye(d))
        dense.bias.zero_()
    counts = torch.bincount(targets[train], minlength=emb.shape[0]).float() + 0.1
    bias = nn.Parameter((counts / counts.sum()).log())

    def logits(x):
        return norm(F.gelu(dense(x))) @ emb.T + bias

    def accuracy(idx) -> float:
        with torch.no_grad():
            return 100.0 * float((logits(states[idx]).argmax(1) == targets[idx]).float().mean())

    before = accuracy(test)
    with torch.no_grad():
        initial = float(F.cross_entropy(logits(states[train]), targets[train]))
    opt = torch.optim.AdamW([*dense.parameters(), *norm.parameters(), bias], lr=lr, weight_decay=0.0)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        pick = train[torch.randint(0, len(train), (min(batch_size, len(train)),), generator=g)]
        loss = F.cross_entropy(logits(states[pick]), targets[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
    params = {"dense.weight": dense.weight.detach().clone(), "dense.bias": dense.bias.detach().clone(),
              "norm.weight": norm.weight.detach().clone(), "norm.bias": norm.bias.detach().clone(),
              "bias": bias.detach().clone()}
    record = {"source": "fitted (encoder frozen, masked definitions)", "texts": len(texts),
              "masked_tokens": int(len(targets)), "steps": steps, "lr": lr, "initial_loss": initial,
              "final_loss": float(loss.detach()),
              "heldout_acc_before": before, "heldout_acc_after": accuracy(test)}
    return {"params": params, "record": record}


def head_modules(params: dict, eps: float):
    """The frozen transform as sentence-transformers modules: Dense(GELU) then LayerNorm (epsilon `eps`: the
    backbone's layer_norm_eps, as its MLM head's)."""
    from sentence_transformers.sentence_transformer.modules import Dense, LayerNorm

    d = params["dense.weight"].shape[1]
    dense = Dense(d, d, activation_function=nn.GELU(), init_weight=params["dense.weight"].clone(),
                  init_bias=params["dense.bias"].clone())
    norm = LayerNorm(d)
    norm.norm.eps = eps
    with torch.no_grad():
        norm.norm.weight.copy_(params["norm.weight"])
        norm.norm.bias.copy_(params["norm.bias"])
    for module in (dense, norm):
        for p in module.parameters():
            p.requires_grad_(False)
    return [dense, norm]


def vocabulary_logits(vectors: torch.Tensor, decoder: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """vectors E^T + c: the head's scores over the vocabulary (vectors: the transform's output)."""
    return vectors @ decoder.T + bias


class VocabularyLoss(nn.Module):
    """DefSent's loss: cross-entropy of the head's vocabulary logits against the entry's token id (labels)."""

    def __init__(self, model, decoder: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.model = model
        self.register_buffer("decoder", decoder.detach().float().contiguous(), persistent=False)
        self.register_buffer("bias", bias.detach().float().contiguous(), persistent=False)

    def forward(self, sentence_features, labels):
        features = list(sentence_features)
        if len(features) != 1:
            raise ValueError(f"VocabularyLoss expects 1 text column (plus a label column), got {len(features)}")
        h = self.model(features[0])["sentence_embedding"]
        logits = vocabulary_logits(h, self.decoder.to(h.dtype), self.bias.to(h.dtype))
        return F.cross_entropy(logits, labels.to(h.device).long())

    @property
    def citation(self) -> str:
        return "Tsukagoshi, Sasano and Takeda 2021, DefSent: Sentence Embeddings using Definition Sentences (ACL)"


__all__ = ["VocabularyLoss", "fit_head", "head_modules", "pretrained_head", "vocabulary_logits"]
