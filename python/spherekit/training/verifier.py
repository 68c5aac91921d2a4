"""A small trainer for the verifiers: MNRL over in-batch + near-miss negatives, frozen or end-to-end.

    data = TokenTriplets.from_texts(encoder, anchors, positives, near_misses)    # frozen: encode once
    result = train_verifier(PatchTransformerVerifier(), data, epochs=1)

    result = train_verifier(verifier, list(zip(anchors, positives, near_misses)),   # end-to-end
                            encoder=encoder, freeze_encoder=False)

Defaults follow the paper's code ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization"
(arXiv:2604.16351), appendix D.3 and its released scripts): AdamW, verifier lr 1e-4, encoder lr 1e-5, weight decay
0.01 (verifier and encoder), linear warmup over 10% of the steps then linear decay, gradient norm clipped at 1.0
separately for verifier and encoder, batch 32 (the paper's F3/F4 batch), scale 10 (temperature 0.1), seed 42.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..losses.verifier_mnrl import VerifierMNRLLoss, stack_columns, verifier_mnrl_loss
from ..nn import Verifier
from ..nn.token_encoder import encode_tokens

__all__ = ["TokenTriplets", "TrainResult", "train_verifier"]


def _trim(tokens: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Drop trailing token positions that are padding in every row of the batch."""
    valid = mask.reshape(-1, mask.shape[-1]).any(0)
    length = int(valid.nonzero().max()) + 1 if bool(valid.any()) else 1
    return tokens[..., :length, :], mask[..., :length]


@dataclass
class TokenTriplets:
    """Precomputed token embeddings for the frozen regime (row r = one training example).

    anchors (N, m, h) + anchor_mask (N, m); positives (N, n, h) + positive_mask (N, n);
    negatives (N, H, n', h) + negative_mask (N, H, n') or None (in-batch negatives only).
    """

    anchors: Tensor
    anchor_mask: Tensor
    positives: Tensor
    positive_mask: Tensor
    negatives: Tensor | None = None
    negative_mask: Tensor | None = None

    def __post_init__(self) -> None:
        n = self.anchors.shape[0]
        for name in ("anchor_mask", "positives", "positive_mask", "negatives", "negative_mask"):
            t = getattr(self, name)
            if t is not None and t.shape[0] != n:
                raise ValueError(f"TokenTriplets.{name} must have {n} rows (as anchors), got shape {tuple(t.shape)}")
        if (self.negatives is None) != (self.negative_mask is None):
            raise ValueError("TokenTriplets: give both negatives and negative_mask, or neither")

    def __len__(self) -> int:
        return self.anchors.shape[0]

    def batch(self, index: Tensor, device=None) -> tuple:
        """(q, q_mask, pos, pos_mask, neg, neg_mask) of the rows in `index`, trimmed to their longest text."""
        def take(t):
            return None if t is None else t[index.to(t.device)].to(device)

        q, qm = _trim(take(self.anchors), take(self.anchor_mask).bool())
        p, pm = _trim(take(self.positives), take(self.positive_mask).bool())
        if self.negatives is None:
            return q, qm, p, pm, None, None
        nt, nm = _trim(take(self.negatives), take(self.negative_mask).bool())
        return q, qm, p, pm, nt, nm

    @classmethod
    def from_texts(cls, encoder, anchors: Sequence[str], positives: Sequence[str],
                   negatives: Sequence[Sequence[str]] | None = None, *, batch_size: int = 64,
                   dtype: torch.dtype | None = None) -> TokenTriplets:
        """Encode once under no_grad. negatives[r] lists the H near-misses of example r (same H for all)."""
        if len(anchors) != len(positives):
            raise ValueError(f"anchors ({len(anchors)}) and positives ({len(positives)}) must have the same length")
        a = encode_tokens(encoder, list(anchors), batch_size=batch_size, dtype=dtype)
        p = encode_tokens(encoder, list(positives), batch_size=batch_size, dtype=dtype)
        if negatives is None:
            return cls(a.tokens, a.mask, p.tokens, p.mask)
        cols = _negative_columns(negatives, len(anchors))
        encoded = [encode_tokens(encoder, col, batch_size=batch_size, dtype=dtype) for col in cols]
        n, nm = stack_columns([e.tokens for e in encoded], [e.mask for e in encoded])
        return cls(a.tokens, a.mask, p.tokens, p.mask, n, nm)


def _negative_columns(negatives, n_rows: int) -> list[list[str]]:
    if len(negatives) != n_rows:
        raise ValueError(f"negatives must have one entry per anchor ({n_rows}), got {len(negatives)}")
    rows = [[r] if isinstance(r, str) else list(r) for r in negatives]
    width = {len(r) for r in rows}
    if len(width) != 1 or 0 in width:
        raise ValueError(f"every example needs the same number H >= 1 of near-misses, got counts {sorted(width)}")
    return [list(col) for col in zip(*rows)]


@dataclass
class TrainResult:
    steps: int
    history: list[dict] = field(default_factory=list)  # per step: loss, accuracy (argmax == own positive), lr
    loss: VerifierMNRLLoss | None = None


def _batches(n: int, batch_size: int, generator: torch.Generator, drop_last: bool):
    order = torch.randperm(n, generator=generator)
    stop = n - n % batch_size if drop_last and n >= batch_size else n
    for start in range(0, stop, batch_size):
        yield order[start:start + batch_size]


def train_verifier(verifier: Verifier, data, *, encoder=None, freeze_encoder: bool = True, batch_size: int = 32,
                   epochs: int = 1, max_steps: int | None = None, lr: float = 1e-4, weight_decay: float = 0.01,
                   encoder_lr: float = 1e-5, encoder_weight_decay: float = 0.01, scale: float = 10.0,
                   learn_scale: bool = False, warmup_ratio: float = 0.1, max_grad_norm: float | None = 1.0,
                   seed: int = 42, device=None, drop_last: bool = True, progress: bool = True,
                   chunk_rows: int | None = None) -> TrainResult:
    """Train a verifier (and, end-to-end, the encoder) with verifier MNRL; returns the step history.

    Args:
        verifier: F0..F4 (moved to `device`).
        data: ``TokenTriplets`` (frozen regime, precomputed tokens) or a sequence of text tuples
            ``(anchor, positive, near_miss_1, ..., near_miss_H)`` (H >= 0, the same for all), which
            need ``encoder``; with freeze_encoder=True they are encoded once up front.
        encoder: a SentenceTransformer (texts only).
        freeze_encoder: frozen (only the verifier learns) or end-to-end (encoder and verifier).
        batch_size, epochs, max_steps: batches of queries; max_steps caps the total steps.
        lr, weight_decay: AdamW for the verifier (and a learnable scale).
        encoder_lr, encoder_weight_decay: AdamW for the encoder (end-to-end only).
        scale, learn_scale: the MNRL logit scale (1 / temperature) and whether it is learned.
        warmup_ratio: linear warmup over this fraction of the steps, then linear decay to 0.
        max_grad_norm: clip verifier and encoder gradient norms separately (None: no clipping).
        seed: seeds the batch order and torch's RNG (dropout).
        device: where to train (default: the encoder's device, else the verifier's, else cpu).
        drop_last: skip the last incomplete batch of an epoch.
        progress: show a tqdm progress bar with the running loss and accuracy.
        chunk_rows: F3 / F4: score the grid this many queries at a time under activation checkpointing (less
            memory; F3's BatchNorm statistics per chunk; spherekit.losses.verifier_mnrl_loss).

    Returns a ``TrainResult`` (steps, per-step loss / in-grid accuracy / lr, the loss module with its scale).
    The verifier (and encoder) are trained in place and left in eval mode.
    """
    texts = not isinstance(data, TokenTriplets)
    _check_options(texts, encoder, freeze_encoder, batch_size, epochs)
    if device is None:
        params = list(encoder.parameters()) if encoder is not None else list(verifier.parameters())
        device = params[0].device if params else torch.device("cpu")
    torch.manual_seed(seed)
    verifier.to(device)
    rows = _text_rows(data) if texts else None
    if texts and freeze_encoder:  # frozen: encode once up front
        negs = [r[2:] for r in rows] if len(rows[0]) > 2 else None
        data, rows, texts = TokenTriplets.from_texts(encoder, [r[0] for r in rows], [r[1] for r in rows], negs), \
            None, False
    n = len(rows) if texts else len(data)
    loss_fn = VerifierMNRLLoss(encoder if texts else None, verifier, scale, learn_scale=learn_scale,
                               freeze_encoder=freeze_encoder, chunk_rows=chunk_rows).to(device)
    groups = _param_groups(loss_fn, learn_scale, encoder if texts and not freeze_encoder else None, lr, weight_decay,
                           encoder_lr, encoder_weight_decay)
    per_epoch = n // batch_size if drop_last and n >= batch_size else math.ceil(n / batch_size)
    total = per_epoch * epochs if max_steps is None else min(max_steps, per_epoch * epochs)
    if not groups or total == 0:
        return TrainResult(0, [], loss_fn)  # nothing to learn (F0/F1/fixed F2 with a frozen encoder)
    opt = torch.optim.AdamW(groups)
    sched = _warmup_then_linear_decay(opt, total, warmup_ratio)
    gen = torch.Generator().manual_seed(seed)  # one generator: a new batch order every epoch
    batches = (index for _ in range(epochs) for index in _batches(n, batch_size, gen, drop_last))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=f"{verifier.kind} {'frozen' if freeze_encoder else 'end-to-end'}",
                   dynamic_ncols=True)
    modules = [verifier] + ([encoder] if texts else [])
    for module in modules:
        module.train()
    try:
        history = _run_steps(loss_fn, data, rows, batches, total, opt, sched, groups, max_grad_norm, device, bar)
    finally:
        if bar is not None:
            bar.close()
        for module in modules:
            module.eval()
    return TrainResult(len(history), history, loss_fn)


def _check_options(texts: bool, encoder, freeze_encoder: bool, batch_size: int, epochs: int) -> None:
    if texts and encoder is None:
        raise ValueError("train_verifier: text data needs an encoder (or pass TokenTriplets)")
    if not texts and not freeze_encoder:
        raise ValueError("train_verifier: end-to-end training (freeze_encoder=False) needs text data and an encoder; "
                         "TokenTriplets hold precomputed (frozen) token embeddings")
    if batch_size < 1 or epochs < 1:
        raise ValueError(f"batch_size and epochs must be >= 1, got batch_size={batch_size}, epochs={epochs}")


def _text_rows(data) -> list[tuple]:
    rows = [tuple(r) for r in data]
    if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        raise ValueError("text data must be a non-empty sequence of equal-length tuples "
                         "(anchor, positive, near_miss_1, ..., near_miss_H)")
    return rows


def _param_groups(loss_fn: VerifierMNRLLoss, learn_scale: bool, trained_encoder, lr: float, weight_decay: float,
                  encoder_lr: float, encoder_weight_decay: float) -> list[dict]:
    """AdamW groups: the verifier (and a learned scale) at lr; the encoder, when it trains, at encoder_lr."""
    head = [p for p in loss_fn.verifier.parameters() if p.requires_grad] + \
        ([loss_fn.log_scale] if learn_scale else [])
    groups = [{"params": head, "lr": lr, "weight_decay": weight_decay}] if head else []
    encoder = [p for p in trained_encoder.parameters() if p.requires_grad] if trained_encoder is not None else []
    if encoder:
        groups.append({"params": encoder, "lr": encoder_lr, "weight_decay": encoder_weight_decay})
    return groups


def _warmup_then_linear_decay(opt, total: int, warmup_ratio: float):
    """lr factor s / W for the first W = int(total * warmup_ratio) steps, then linear decay to 0 at total."""
    warmup = int(total * warmup_ratio)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: s / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup)))


def _run_steps(loss_fn, data, rows, batches, total: int, opt, sched, groups, max_grad_norm, device, bar) -> list:
    """The optimisation loop: up to `total` steps over `batches`; returns the per-step history."""
    history: list[dict] = []
    for index in batches:
        if len(history) >= total:
            break
        loss, scores = _step_loss(loss_fn, data, rows, index, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if max_grad_norm is not None:
            for g in groups:
                torch.nn.utils.clip_grad_norm_(g["params"], max_grad_norm)
        opt.step()
        sched.step()
        with torch.no_grad():
            acc = (scores.argmax(1) == torch.arange(len(index), device=scores.device)).float().mean()
        history.append({"loss": float(loss.detach()), "accuracy": float(acc), "lr": sched.get_last_lr()[0]})
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{history[-1]['loss']:.4f}", acc=f"{history[-1]['accuracy']:.3f}")
    return history


def _step_loss(loss_fn: VerifierMNRLLoss, data, rows, index: Tensor, device):
    if rows is None:  # precomputed tokens
        q, qm, p, pm, neg, nm = data.batch(index, device)
    else:  # end-to-end: encode this batch's texts with gradients
        batch = [rows[i] for i in index.tolist()]
        cols = [encode_tokens(loss_fn.model, [r[c] for r in batch], grad=True) for c in range(len(batch[0]))]
        (q, qm), (p, pm) = (cols[0].tokens, cols[0].mask), (cols[1].tokens, cols[1].mask)
        neg, nm = stack_columns([c.tokens for c in cols[2:]], [c.mask for c in cols[2:]]) if len(cols) > 2 \
            else (None, None)
    return verifier_mnrl_loss(loss_fn.verifier, q, qm, p, pm, neg, nm, scale=loss_fn.scale, return_scores=True,
                              chunk_rows=loss_fn.chunk_rows)
