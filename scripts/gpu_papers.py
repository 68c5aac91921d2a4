"""Predicted GPU-hours of every paper's `paper` preset, from timed steps of its architecture on the GPU at hand.

For each paper, get(name).make_config("paper") gives the backbones, conditions, seeds, batch sizes and lengths; its
plan below (one function per paper, from that config and the paper's public tables) turns them into work items
(backbone, kind, sequences per step, tokens per sequence, steps). Each distinct item is timed on a randomly
initialised backbone of the paper's shape (ARCHS: the model cards' config.json values; no weights travel):
    train   bf16 autocast forward, an InfoNCE loss over the mean-pooled embeddings, backward, one AdamW step
    encode  a no-grad forward with bf16 weights (a frozen backbone: caches, evaluation)
Hours = sum of steps x the median step time (+ steps x an assumed cost where an item is not timed, said in its
basis). Data preparation, model loading and evaluation are not counted unless a basis says so. The result is a
prediction for this GPU, never a measured run.

    python scripts/gpu_papers.py --out DIR [--papers concept,defsent] [--rehearse]

--rehearse: the same path on CPU with every backbone cut to one layer of width 32 and 2 sequences of 8 tokens (the
hours are then meaningless, and the rows say so). Rows: DIR/paper_hours.csv.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

BERT = dict(vocab_size=30522, max_position_embeddings=512)
MINILM = dict(BERT, hidden_size=384, num_attention_heads=12, intermediate_size=1536)
ARCHS = {  # backbone -> (transformers model_type, config fields)
    "all-MiniLM-L6-v2": ("bert", dict(MINILM, num_hidden_layers=6)),
    "sentence-transformers/all-MiniLM-L6-v2": ("bert", dict(MINILM, num_hidden_layers=6)),
    "sentence-transformers/all-MiniLM-L12-v2": ("bert", dict(MINILM, num_hidden_layers=12)),
    "thenlper/gte-small": ("bert", dict(MINILM, num_hidden_layers=12)),
    "bert-base-uncased": ("bert", dict(BERT, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                       intermediate_size=3072)),
    "all-mpnet-base-v2": ("mpnet", dict(vocab_size=30527, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                        intermediate_size=3072, max_position_embeddings=514)),
    "Alibaba-NLP/gte-modernbert-base": ("modernbert", dict(vocab_size=50368, hidden_size=768, num_hidden_layers=22,
                                                           num_attention_heads=12, intermediate_size=1152,
                                                           max_position_embeddings=8192)),
    "Qwen/Qwen3-Embedding-4B": ("qwen3", dict(vocab_size=151665, hidden_size=2560, num_hidden_layers=36,
                                              num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                              intermediate_size=9728, max_position_embeddings=40960)),
    "nvidia/llama-embed-nemotron-8b": ("llama", dict(vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                                     num_attention_heads=32, num_key_value_heads=8,
                                                     intermediate_size=14336, max_position_embeddings=131072)),
    "meta-llama/Llama-3.2-3B": ("llama", dict(vocab_size=128256, hidden_size=3072, num_hidden_layers=28,
                                              num_attention_heads=24, num_key_value_heads=8, head_dim=128,
                                              intermediate_size=8192, max_position_embeddings=131072)),
    "allenai/Olmo-3-1025-7B": ("olmo3", dict(vocab_size=100278, hidden_size=4096, num_hidden_layers=32,
                                             num_attention_heads=32, num_key_value_heads=32, intermediate_size=11008,
                                             max_position_embeddings=65536)),
}
TINY = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)  # vocab kept: token ids
COLUMNS = ["paper", "backbone", "kind", "sequences", "tokens", "steps", "step_s", "hours", "status", "basis"]


@dataclass
class Work:
    """Steps of one kind on one backbone; steps may depend on the backbone's parameter count (a callable)."""

    backbone: str
    kind: str  # "train" | "encode" | "assumed" (assumed_s per step, not timed)
    sequences: int
    tokens: int
    steps: int | Callable[[int], int]
    basis: str
    assumed_s: float = 0.0
    result: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------
# plans: a paper's `paper` config -> work items
# ------------------------------------------------------------------------------------------------

def _concept(cfg, exp) -> list[Work]:
    trained = [c for c in exp.selected(cfg) if getattr(exp.conditions[c].params, "trained", False)]
    texts = cfg.batch_size * (6 + cfg.negatives_per_pair)
    return [Work(b, "train", texts, cfg.max_seq_length, len(trained) * len(cfg.seeds) * cfg.steps,
                 f"{len(trained)} trained conditions x {len(cfg.seeds)} seeds x {cfg.steps} steps; a step encodes the "
                 f"three views, {cfg.batch_size} x (2 syn + 2 t2d + {cfg.negatives_per_pair} negatives + 2 d2d) texts")
            for b in cfg.backbones]


def _compositional(cfg, exp) -> list[Work]:
    from spherekit.experiments.compositional import released

    out, seeds = [], len(cfg.seeds)
    chosen = set(exp.selected(cfg))
    for b in cfg.backbones:
        encoders = [c for c in ("model_a", "model_b") if c in chosen]
        out.append(Work(b, "train", 3 * cfg.batch_size, cfg.max_seq_length,
                        lambda n, k=len(encoders): k * seeds * released.encoder_steps(n, cfg.batch_size,
                                                                                       cfg.time_budget_s, cfg.min_steps),
                        f"{' and '.join(encoders)} x {seeds} seeds x released.encoder_steps (the released scripts' "
                        f"{cfg.time_budget_s:.0f} s budget) of {cfg.batch_size} triplets"))
        for regime in ("frozen", "e2e"):
            for name in cfg.verifiers:
                if f"{regime}_{name}" not in chosen or (regime == "frozen" and name in ("F0", "F1", "F2")):
                    continue  # frozen F0-F2 have no parameters and do not train (compositional.models.verifier_steps)
                batch = cfg.verifier_batch(name)
                out.append(Work(b, "train" if regime == "e2e" else "encode", 3 * batch, cfg.max_seq_length,
                                lambda n, r=regime, v=name, bs=batch: seeds * released.verifier_steps(
                                    n, r, v, bs, cfg.time_budget_s),
                                f"{regime}_{name} x {seeds} seeds x released.verifier_steps; the encoder's share of a "
                                f"step of {batch} triplets (the verifier's own maps and layers not counted)"))
    return out


def _defsent(cfg, exp) -> list[Work]:
    from spherekit.experiments.defsent import paper, spec

    out = []
    for c in exp.selected(cfg):
        step = spec.STEP_OF[c]
        if step.step == 0:
            continue
        definitions = paper.TABLE1[step.dictionary][0]
        batch = cfg.batch_size_a if step.dictionary == "a" else cfg.batch_size_bc
        tokens = min(cfg.max_seq_length, 32)
        out += [Work(b, "train", batch, tokens, len(cfg.seeds) * math.ceil(definitions / batch),
                     f"{c}: one epoch over dictionary {step.dictionary}'s {definitions:,} definitions (Table 1) x "
                     f"{len(cfg.seeds)} seeds; definitions (median 12 tokens) in the prompt, padded to {tokens} tokens")
                for b in cfg.backbones]
    return out


def _textbook(cfg, exp) -> list[Work]:
    runs = {"losses": 3, "mining": cfg.rounds, "pooling": 3 if cfg.pooling_steps else 0}
    chosen = [s for s in exp.selected(cfg) if runs.get(s)]
    steps = sum(runs[s] * (cfg.pooling_steps if s == "pooling" else cfg.steps) for s in chosen)
    return [Work(b, "train", 3 * cfg.batch_size, cfg.max_seq_length, steps * len(cfg.seeds),
                 f"trained sections {', '.join(chosen)}: {steps} steps x {len(cfg.seeds)} seeds of "
                 f"{cfg.batch_size} (query, positive, negative) rows; the other sections encode only (not counted)")
            for b in cfg.backbones]


def _circumplex(cfg, exp) -> list[Work]:
    from spherekit.experiments.circumplex import departures

    n_labels = 12
    n_train, n_test = (cfg.n_train_per_label or 500) * n_labels, cfg.n_test_per_label * n_labels
    runs = len(cfg.runs) * len(cfg.regimes) + len(cfg.label_count_runs) * len(cfg.label_counts)
    texts = n_train + n_test + n_test * (1 + runs * len(cfg.seeds))
    head_steps = runs * len(cfg.seeds) * cfg.epochs * math.ceil(n_train / cfg.batch_size)
    out = []
    for b in cfg.backbones:
        out.append(Work(b, "encode", cfg.eval_batch_size, departures.TOKENS_PER_TEXT,
                        math.ceil(texts / cfg.eval_batch_size),
                        f"the frozen backbone's cache (every text once) and the test embeddings of Pretrained and "
                        f"{runs} runs x {len(cfg.seeds)} seeds, one {n_labels}-label dataset of "
                        f"{cfg.n_train_per_label or 500}/{cfg.n_test_per_label} texts per label, "
                        f"{departures.TOKENS_PER_TEXT} tokens per text (departures.TOKENS_PER_TEXT)"))
        out.append(Work(b, "assumed", cfg.batch_size, 0, head_steps,
                        f"head training on cached states: {runs} runs x {len(cfg.seeds)} seeds x {cfg.epochs} epochs, "
                        f"assumed {departures.STEP_SECONDS[0]} s per step (departures.STEP_SECONDS, not timed)",
                        assumed_s=departures.STEP_SECONDS[0]))
    return out


PLANS = {"concept": _concept, "compositional": _compositional, "defsent": _defsent, "textbook": _textbook,
         "circumplex": _circumplex}


# ------------------------------------------------------------------------------------------------
# timing one step
# ------------------------------------------------------------------------------------------------

def build(backbone: str, kind: str, device: str, rehearse: bool):
    import torch
    from transformers import AutoConfig, AutoModel

    model_type, fields = ARCHS[backbone]
    if rehearse:  # every shape field the arch has, cut down (grouped-query heads: 2 query, 2 key-value heads)
        fields = fields | TINY | {k: v for k, v in (("num_key_value_heads", 2), ("head_dim", 16)) if k in fields}
    config = AutoConfig.for_model(model_type, **fields)
    dtype = torch.bfloat16 if kind == "encode" and device == "cuda" else torch.float32
    with torch.device(device):
        model = AutoModel.from_config(config, dtype=dtype)
    return model.train(kind == "train"), config.vocab_size


def time_steps(model, vocab: int, kind: str, sequences: int, tokens: int, device: str, repeats: int) -> float:
    """Median seconds of one step (after one untimed step)."""
    import contextlib

    import torch
    import torch.nn.functional as F

    ids = torch.randint(5, vocab, (sequences, tokens), device=device)
    mask = torch.ones_like(ids)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5) if kind == "train" else None
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        with autocast, (contextlib.nullcontext() if opt else torch.no_grad()):
            emb = F.normalize(model(input_ids=ids, attention_mask=mask).last_hidden_state.mean(1).float(), dim=-1)
        if opt is not None:
            half = sequences // 2
            loss = F.cross_entropy(emb[:half] @ emb[half:2 * half].T * 20.0, torch.arange(half, device=device))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    times = []
    for i in range(repeats + 1):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(items: list[Work], device: str, rehearse: bool, repeats: int) -> None:
    """Fill each item's result: step_s (or its assumed cost), steps, status; one model per (backbone, kind)."""
    import gc

    import torch

    for backbone, kind in sorted({(w.backbone, w.kind) for w in items if w.kind != "assumed"}):
        try:
            model, vocab = build(backbone, kind, device, rehearse)
        except Exception as exc:  # noqa: BLE001 - recorded per item, the other backbones go on
            for w in items:
                if (w.backbone, w.kind) == (backbone, kind):
                    w.result = dict(status=f"error: {type(exc).__name__}: {exc}"[:200])
            continue
        n_params = sum(p.numel() for p in model.parameters())
        timed: dict[tuple, float | str] = {}
        for w in items:
            if (w.backbone, w.kind) != (backbone, kind):
                continue
            shape = (2, 8) if rehearse else (w.sequences, w.tokens)
            if shape not in timed:
                try:
                    timed[shape] = time_steps(model, vocab, kind, *shape, device, repeats)
                except torch.cuda.OutOfMemoryError:
                    timed[shape] = "oom"
                    torch.cuda.empty_cache()
                except Exception as exc:  # noqa: BLE001 - recorded, the other items go on
                    timed[shape] = f"error: {type(exc).__name__}: {exc}"[:200]
            steps = w.steps(n_params) if callable(w.steps) else w.steps
            got = timed[shape]
            w.result = dict(steps=steps, params=n_params, status="ok" if isinstance(got, float) else got,
                            step_s=got if isinstance(got, float) else None)
        del model
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    for w in items:
        if w.kind == "assumed":
            w.result = dict(steps=w.steps, step_s=w.assumed_s, status="assumed")


def rows_of(paper: str, items: list[Work], rehearse: bool) -> list[dict]:
    out = []
    for w in items:
        r = w.result
        hours = r["steps"] * r["step_s"] / 3600 if r.get("step_s") is not None else None
        out.append(dict(paper=paper, backbone=w.backbone, kind=w.kind, sequences=w.sequences, tokens=w.tokens,
                        steps=r.get("steps"), step_s=None if r.get("step_s") is None else round(r["step_s"], 5),
                        hours=None if hours is None else round(hours, 3),
                        status=("rehearsal (tiny shapes): " if rehearse else "") + r.get("status", "not run"),
                        basis=w.basis))
    return out


def main(argv=None) -> int:
    from spherekit.experiments import get, names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder of paper_hours.csv")
    ap.add_argument("--papers", help="comma-separated subset (default: every paper with a plan)")
    ap.add_argument("--repeats", type=int, default=2, help="timed steps per item (after one untimed step)")
    ap.add_argument("--rehearse", action="store_true", help="CPU, tiny backbones: checks the path without a GPU")
    args = ap.parse_args(argv)
    import torch

    device = "cpu" if args.rehearse else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("needs a CUDA GPU (or --rehearse)")
        return 2
    papers = args.papers.split(",") if args.papers else [n for n in names() if n in PLANS]
    rows = []
    for paper in papers:
        exp = get(paper)
        items = PLANS[paper](exp.make_config("paper"), exp)
        t0 = time.perf_counter()
        measure(items, device, args.rehearse, 1 if args.rehearse else args.repeats)
        paper_rows = rows_of(paper, items, args.rehearse)
        total = sum(r["hours"] or 0.0 for r in paper_rows)
        missing = sum(r["hours"] is None for r in paper_rows)
        rows += paper_rows + [dict(paper=paper, backbone="all", kind="total", hours=round(total, 2),
                                   status="incomplete" if missing else "ok",
                                   basis=f"sum of the rows above{f'; {missing} not timed' if missing else ''}")]
        what = "rehearsal hours (tiny shapes on CPU, no prediction)" if args.rehearse else \
            "predicted GPU-hours on this device"
        print(f"{paper:<14} paper preset: {total:8.2f} {what} "
              f"({len(items)} items{f', {missing} not timed' if missing else ''}; {time.perf_counter() - t0:.0f} s)",
              flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "paper_hours.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
