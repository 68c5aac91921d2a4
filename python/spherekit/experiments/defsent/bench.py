"""`spherekit bench reproduce defsent`: DefSent+'s head over a frozen entry bank, two ways, side by side.

    spherekit     EntryBankLoss: fused InfoNCE over the bank (spherekit.ops.info_nce, candidate_grad=False; on the
                  CPU in column blocks of the bank, one streamed pass): the B x E logits and their gradient never exist
    linear-head   the authors' head: nn.Linear(d, E, bias=False) whose frozen weight is the bank, then
                  nn.CrossEntropyLoss (B x E logits, softmax and their gradient in memory)

Modes: "loss" (the loss alone, forward + backward to the sentence vectors h) and "step" (a whole training step:
backbone forward on B definitions, pooler, loss, backward, AdamW step). Sizes: E entries x B rows (d = the
backbone's width). Also measured: the bank build time (AMP bank, eval mode, length-sorted batches). Time is the
median (20/80% quantiles) of `repeats` calls after one warm-up; memory is the peak extra memory of one call
(spherekit.bench.memory). Goal on CPU: at E = 400k, B = 256 the loss at least 1.5x faster and its peak memory
below 1/8 of the Linear head's. Rows go to <out>/reproduce_defsent.csv (spherekit.bench.results.COLUMNS).
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

FAMILY = "reproduce_defsent"
PROVIDERS = ("spherekit", "linear-head")
MODES = ("loss", "step")
TEXTS = ["a small open container usually used for drinking", "give new life or vigor to",
         "a flat dish with a rim for the warm food", "imbue something with new life and vitality",
         "the place where someone drew their last breath", "a sustained increase in the general level of prices"]


@dataclass(frozen=True)
class Preset:
    backbone: str | None
    entries: tuple
    batches: tuple
    repeats: int
    bank_texts: int


PRESETS = {"cpu": Preset("all-MiniLM-L6-v2", (150_000, 400_000), (32, 256), 3, 512),
           "tiny": Preset(None, (1000, 3000), (4, 8), 2, 16)}


def linear_head_loss(h, bank, labels):
    """The authors' head: a frozen Linear layer over the bank (B x E logits) and cross-entropy."""
    head = nn.Linear(bank.shape[1], bank.shape[0], bias=False)
    head.weight = nn.Parameter(bank, requires_grad=False)
    return F.cross_entropy(head(h), labels)


def spherekit_loss(h, bank, labels):
    """EntryBankLoss's computation (spherekit.losses.entry_bank.frozen_bank_cross_entropy)."""
    from ...losses.entry_bank import frozen_bank_cross_entropy

    return frozen_bank_cross_entropy(h, bank, labels, 1.0)


LOSSES = {"spherekit": spherekit_loss, "linear-head": linear_head_loss}


def _time(fn, repeats: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _peak(fn) -> float:
    from ...bench.memory import PeakMemory

    with PeakMemory("cpu") as peak:
        fn()
    return peak.extra_bytes / (1 << 20)


def measure_loss(provider: str, bank, batch: int, repeats: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(batch, bank.shape[1], generator=g).requires_grad_()
    labels = torch.randint(0, bank.shape[0], (batch,), generator=g)
    loss_fn = LOSSES[provider]

    def call():
        h.grad = None
        loss_fn(h, bank, labels).backward()

    return {"times": _time(call, repeats), "peak_mib": _peak(call)}


def measure_step(provider: str, model, bank, batch: int, repeats: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    texts = [TEXTS[i % len(TEXTS)] for i in range(batch)]
    labels = torch.randint(0, bank.shape[0], (batch,), generator=g)
    features = model.preprocess(texts)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, eps=1e-6, weight_decay=0.0)
    loss_fn = LOSSES[provider]
    model.train()

    def call():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(dict(features))["sentence_embedding"], bank, labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return {"times": _time(call, repeats), "peak_mib": _peak(call)}


def measure_bank(model, n_texts: int) -> float:
    """Seconds to build an AMP bank over n_texts definitions (n_texts / 2 entries)."""
    from .bank import build_bank
    from .data import Dictionary

    defs = [f"{TEXTS[i % len(TEXTS)]} number {i}" for i in range(n_texts)]
    d = Dictionary("bench", [f"e{i}" for i in range(n_texts // 2)],
                   [tuple(defs[2 * i:2 * i + 2]) for i in range(n_texts // 2)])
    t = time.perf_counter()
    build_bank(model, d, "amp", batch_size=64)
    return time.perf_counter() - t


def _row(base: dict, provider: str, mode: str, params: dict, times=None, peak=None, metrics=None,
         status="ok", note="") -> dict:
    from ...bench.results import set_fields

    row = {**base, "provider": provider, "mode": mode, **params, "status": status, "note": note,
           "dtype": "float32", **(metrics or {})}
    if times:
        qs = statistics.quantiles(times, n=5) if len(times) > 1 else [times[0]] * 4
        row.update(repeats=len(times), median_ms=1000 * statistics.median(times), p20_ms=1000 * qs[0],
                   p80_ms=1000 * qs[3])
    if peak is not None:
        row["peak_extra_mib"] = peak
    return set_fields(row, list(params), list(metrics or {}))


def run(preset: str = "cpu", out: str = "results/bench", backbone: str | None = None, modes=MODES) -> int:
    from ...bench.machine import machine_name, now, versions
    from ...bench.results import append_rows
    from .train import training_model

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}; valid modes: {', '.join(MODES)}")
    p = PRESETS[preset]
    backbone = backbone or p.backbone
    if backbone is None:
        raise ValueError(f"preset {preset!r} needs --backbone (a small local sentence-transformers folder)")
    model = training_model(backbone, "mean", device="cpu")  # a CPU benchmark (memory: spherekit.bench.memory)
    d = model.get_embedding_dimension()
    base = {"timestamp": now(), "run_id": now(), "preset": preset, "machine": machine_name("cpu"), "device": "cpu",
            **versions(), "family": FAMILY}
    rows, summary = [], {}
    seconds = measure_bank(model, p.bank_texts)
    rows.append(_row(base, "spherekit", "bank-build", {"texts": p.bank_texts, "d": d}, times=[seconds],
                     metrics={"definitions_per_s": round(p.bank_texts / seconds, 1)}))
    print(f"bank build: {p.bank_texts} definitions in {seconds:.1f} s", file=sys.stderr)
    for E in p.entries:
        bank = torch.randn(E, d, generator=torch.Generator().manual_seed(E)) * 0.1
        for B in p.batches:
            for mode in modes:
                for provider in PROVIDERS:
                    params = {"E": E, "B": B, "d": d}
                    try:
                        r = measure_loss(provider, bank, B, p.repeats) if mode == "loss" else \
                            measure_step(provider, model, bank, B, p.repeats)
                    except (RuntimeError, MemoryError) as exc:
                        rows.append(_row(base, provider, mode, params, status="error", note=str(exc)[:200]))
                        continue
                    summary[(E, B, mode, provider)] = (statistics.median(r["times"]), r["peak_mib"])
                    rows.append(_row(base, provider, mode, params, times=r["times"], peak=r["peak_mib"]))
                    print(f"E={E} B={B} {mode:4} {provider:11} {1000 * statistics.median(r['times']):9.1f} ms "
                          f"peak {r['peak_mib']:8.1f} MiB", file=sys.stderr, flush=True)
    append_rows(Path(out) / f"{FAMILY}.csv", rows)
    for (E, B, mode, provider), (t, m) in summary.items():
        if provider == "spherekit" and (E, B, mode, "linear-head") in summary:
            tl, ml = summary[(E, B, mode, "linear-head")]
            print(f"E={E:>7} B={B:>4} {mode:4}: spherekit {tl / t:.2f}x faster, peak memory {m / max(ml, 1e-9):.3f} "
                  "of the Linear head's")
    print(f"rows appended to {Path(out) / (FAMILY + '.csv')}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


def add_arguments(parser) -> None:
    """The options of `spherekit bench reproduce defsent`."""
    parser.add_argument("--preset", default="cpu", choices=sorted(PRESETS))
    parser.add_argument("--out", default="results/bench")
    parser.add_argument("--backbone", help="override the preset's backbone (a name or a local folder)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: loss, step")


def run_from_args(args) -> int:
    return run(args.preset, args.out, args.backbone, [m for m in args.modes.split(",") if m])
