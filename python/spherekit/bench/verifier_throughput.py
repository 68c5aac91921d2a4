"""F4 end-to-end training throughput (samples/s) and the largest batch that fits a memory limit:
spherekit's verifier path against the paper's approach ("Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351), sec. 3.2; its code found batch 32 the most that fit for F3/F4 on a
24-44 GB GPU, "OOM at 64+").

One training step (both providers): the encoder embeds B anchors, B positives and B near-misses with
gradients on; F4 scores the MNRL grid of B x (B + 1) (query, candidate) pairs (in-batch negatives + one
near-miss per query); cross-entropy with scale 10; backward; one AdamW step on encoder and verifier.
samples/s = B / median step time.

Providers:
    paper      spherekit.reference.paper_verifier: one verifier call per anchor (a Python loop over the batch),
               per pair M = bmm(Norm q, Norm d^T), 3 channels, the map zero-padded to 128 x 128, a strided
               Conv2d embedding all 256 patches (attention masks the empty ones).
    spherekit  PatchTransformerVerifier + spherekit.losses.verifier_mnrl_loss: the grid as flattened pairs in
               two calls (in-batch block, near-miss block), sim_map patches of the batch's padded map only
               (1 + ceil(m/8) ceil(n/8) tokens instead of 257), tokens normalised once per text.
Both providers use the same F4 (width, layers, heads) and the same encoder.

Encoder: a randomly initialised BERT with all-MiniLM-L6-v2's shape (6 layers, width 384, 12 heads, FF 1536;
throughput does not depend on the weights, so nothing is downloaded), or "tiny" (1 layer, width 32).
Texts are random token ids; query lengths uniform in [q_len/2, q_len], documents in [d_len/2, d_len].

Batch search: per provider B = b0, 2 b0, 4 b0, ... up to max_batch, each B in a fresh worker process;
the search stops at the first B whose step fails with out-of-memory or whose peak memory passes the
limit (CUDA: torch.cuda.max_memory_allocated of the whole step, model and optimizer state included;
CPU: the worker's resident memory, killed above the limit). The summary gives each provider's largest
B and its samples/s, and the speed ratio at every B both managed.

Presets: tiny (tests, seconds), cpu-small (MiniLM-shaped encoder on CPU, B = 4 and 8, q_len 16, d_len 64; the
paper's step takes most of a minute there), gpu (bf16 autocast,
q_len 32, d_len 128, B up to 4096, limit 24 GiB = the paper's smallest GPU class), gpu-paper-f4 (as gpu with
the F4 of the paper's experiment script: width 384, 1 layer, 1 head, FF 32), gpu-lease (gpu-paper-f4 at B = 32
and 64 only, the paper's batch and its double: the speed ratio in about a minute; scripts/gpu_check.sh).
--rehearse runs a preset's batches on CPU with the tiny encoder and F4 (rehearsal()).
Rows go to <out>/verifier_train.csv (spherekit.bench.results.COLUMNS: mode "train-e2e"; params B, candidates =
B + 1 per query, width = the encoder's, near_misses = 1, encoder, f4, q_len, d_len; samples/s, total peak and
the config in the note).

    python -m spherekit.bench.verifier_throughput --preset gpu [--mem-limit-gib 24] [--max-batch 4096]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from pathlib import Path

from . import _harness as H
from .machine import GIB, default_mem_limit, machine_name, now, versions
from .results import append_rows, set_fields

FAMILY = "verifier_train"
MODULE = "spherekit.bench.verifier_throughput"
PROVIDERS = ("paper", "spherekit")
PARAMS = ("B", "candidates", "width", "near_misses", "encoder", "f4", "q_len", "d_len")  # the params cell
SCALE = 10.0
ENCODERS = {  # BertConfig fields
    "minilm": dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                   intermediate_size=1536, max_position_embeddings=512),
    "tiny": dict(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                 max_position_embeddings=64),
}
F4_CONFIGS = {  # PatchTransformerVerifier arguments
    "class": dict(patch=8, width=256, num_layers=2, num_heads=8, ff_dim=1024, map_size=128),  # the code's defaults
    "experiment": dict(patch=8, width=384, num_layers=1, num_heads=1, ff_dim=32, map_size=128),  # its runs
    "tiny": dict(patch=4, width=32, num_layers=1, num_heads=2, ff_dim=64, map_size=32),
}


@dataclass(frozen=True)
class Preset(H.PresetBase):
    dtype: str
    encoder: str
    f4: str
    q_len: int
    d_len: int
    start_batch: int
    max_batch: int
    mem_limit_gib: float | None  # None: the harness default (CPU) / none (CUDA, real OOMs only)


PRESETS = {
    "tiny": Preset("cpu", "float32", "tiny", "tiny", 8, 16, 2, 4, None, repeats=1, warmup=1, budget_s=5.0),
    "cpu-small": Preset("cpu", "float32", "minilm", "class", 16, 64, 4, 8, None, repeats=2, warmup=1, budget_s=60.0),
    "gpu": Preset("cuda", "bfloat16", "minilm", "class", 32, 128, 8, 4096, 24.0, repeats=10, warmup=3, budget_s=30.0),
    "gpu-paper-f4": Preset("cuda", "bfloat16", "minilm", "experiment", 32, 128, 8, 4096, 24.0, repeats=10, warmup=3,
                           budget_s=30.0),
    "gpu-lease": Preset("cuda", "bfloat16", "minilm", "experiment", 32, 128, 32, 64, 24.0, repeats=5, warmup=2,
                        budget_s=5.0),
}


def rehearsal(preset: Preset) -> Preset:
    """The preset's batch search on CPU with the tiny encoder and F4, fp32, B = 2 only, one timed step."""
    return replace(preset, device="cpu", dtype="float32", encoder="tiny", f4="tiny", q_len=8, d_len=16,
                   start_batch=2, max_batch=2, mem_limit_gib=None, repeats=1, warmup=1, min_repeats=1, budget_s=5.0)


def make_task(preset: Preset, provider: str, batch: int) -> dict:
    width = ENCODERS[preset.encoder]["hidden_size"]
    return dict(family=FAMILY, provider=provider, mode="train-e2e", B=batch, candidates=batch + 1, width=width,
                near_misses=1, dtype=preset.dtype, encoder=preset.encoder, f4=preset.f4, q_len=preset.q_len,
                d_len=preset.d_len)


# ------------------------------------------------------------------------------------------------
# the family interface used by the harness
# ------------------------------------------------------------------------------------------------


def static_skip(task: dict, settings: H.Settings) -> str | None:
    return None


def predict_bytes(task: dict) -> None:
    return None  # the batch search finds the limit by running


def _texts(batch: int, length: int, vocab: int, gen, device):
    import torch

    lengths = torch.randint(max(1, length // 2), length + 1, (batch,), generator=gen)
    ids = torch.randint(5, vocab, (batch, length), generator=gen)
    mask = torch.arange(length)[None] < lengths[:, None]
    return (ids * mask).to(device), mask.to(device)


def build_step(task: dict, device: str):
    """-> (step closure running one full training step, parameter count of the verifier)."""
    import contextlib

    import torch
    from transformers import BertConfig, BertModel

    from ..losses.verifier_mnrl import verifier_mnrl_loss
    from ..nn.verifiers import PatchTransformerVerifier
    from ..reference.paper_verifier import PaperStyleF4, paper_mnrl_loss

    torch.manual_seed(0)
    cfg = ENCODERS[task["encoder"]]
    encoder = BertModel(BertConfig(**cfg), add_pooling_layer=False).to(device).train()
    f4 = F4_CONFIGS[task["f4"]]
    verifier = (PatchTransformerVerifier if task["provider"] == "spherekit" else PaperStyleF4)(**f4).to(device).train()
    opt = torch.optim.AdamW([{"params": verifier.parameters(), "lr": 1e-4, "weight_decay": 0.01},
                             {"params": encoder.parameters(), "lr": 1e-5, "weight_decay": 0.01}])
    gen = torch.Generator().manual_seed(0)
    B = task["B"]
    qi, qm = _texts(B, task["q_len"], cfg["vocab_size"], gen, device)
    pi, pm = _texts(B, task["d_len"], cfg["vocab_size"], gen, device)
    ni, nm = _texts(B, task["d_len"], cfg["vocab_size"], gen, device)
    autocast = torch.autocast(device_type="cuda", dtype=getattr(torch, task["dtype"])) \
        if device.startswith("cuda") and task["dtype"] != "float32" else contextlib.nullcontext()

    def step():
        with autocast:
            q = encoder(input_ids=qi, attention_mask=qm.long()).last_hidden_state
            p = encoder(input_ids=pi, attention_mask=pm.long()).last_hidden_state
            n = encoder(input_ids=ni, attention_mask=nm.long()).last_hidden_state
            if task["provider"] == "spherekit":
                loss = verifier_mnrl_loss(verifier, q, qm, p, pm, n[:, None], nm[:, None], scale=SCALE)
            else:
                loss = paper_mnrl_loss(verifier, q, qm, p, pm, n, nm, scale=SCALE)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step, sum(p.numel() for p in verifier.parameters())


def run_task(task: dict, settings: H.Settings) -> dict:
    import torch

    cuda = settings.device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    step, n_params = build_step(task, settings.device)
    result = H.measure(step, settings)
    notes = [f"samples_per_s={task['B'] / (result['median_ms'] / 1e3):.1f}"]
    if cuda:
        peak = torch.cuda.max_memory_allocated()
        notes.append(f"peak_total_gib={peak / GIB:.2f}")
        if settings.mem_limit_bytes and peak > settings.mem_limit_bytes:
            result["status"] = "oom"
            notes.append(f"peak {peak / GIB:.1f} GiB > mem limit {settings.mem_limit_bytes / GIB:.1f} GiB")
    notes.append(f"encoder={task['encoder']} f4={task['f4']} ({n_params} params) q_len={task['q_len']} "
                 f"d_len={task['d_len']}")
    result["note"] = "; ".join(x for x in (*notes, result.get("note", "")) if x)
    return result


# ------------------------------------------------------------------------------------------------
# batch search, report, entry point
# ------------------------------------------------------------------------------------------------


def samples_per_s(row: dict) -> float | None:
    for part in str(row.get("note", "")).split(";"):
        if part.strip().startswith("samples_per_s="):
            return float(part.strip().split("=", 1)[1])
    return None


def summarize(rows: list[dict]) -> list[str]:
    """Per provider: the largest batch that fit and its samples/s; the spherekit/paper ratio per batch."""
    ok = {(r["provider"], int(r["B"])): samples_per_s(r) for r in rows if r["status"] == "ok"}
    lines = []
    for p in PROVIDERS:
        fits = sorted(b for (q, b) in ok if q == p)
        failed = sorted((int(r["B"]), r["status"]) for r in rows if r["provider"] == p and r["status"] != "ok")
        if fits:
            after = f"; B={failed[0][0]}: {failed[0][1]}" if failed else " (the search stopped at max_batch)"
            lines.append(f"{p:<10} largest batch {fits[-1]:>5}: {ok[(p, fits[-1])]:9.1f} samples/s{after}")
        elif failed:
            lines.append(f"{p:<10} no batch fit (B={failed[0][0]}: {failed[0][1]})")
    for b in sorted({b for (_, b) in ok}):
        if ("paper", b) in ok and ("spherekit", b) in ok:
            lines.append(f"B={b:>5}: spherekit {ok[('spherekit', b)]:.1f} vs paper {ok[('paper', b)]:.1f} samples/s "
                         f"= {ok[('spherekit', b)] / ok[('paper', b)]:.2f}x")
    return lines


def run(preset: str = "tiny", out: str | Path = "results/bench", providers: list[str] | None = None,
        mem_limit_gib: float | None = None, max_batch: int | None = None, start_batch: int | None = None,
        repeats: int | None = None, isolate: str = "task", timeout_s: float = 1800.0,
        progress: bool = False, rehearse: bool = False) -> list[dict]:
    """Run the batch search of a preset (rehearse: its rehearsal() on CPU); rows appended to
    <out>/verifier_train.csv; prints a summary."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    unknown = sorted(set(providers or ()) - set(PROVIDERS))
    if unknown:
        raise ValueError(f"unknown providers {unknown}; choose from {list(PROVIDERS)}")
    spec = rehearsal(PRESETS[preset]) if rehearse else PRESETS[preset]
    spec = replace(spec, max_batch=max_batch or spec.max_batch, start_batch=start_batch or spec.start_batch,
                   repeats=repeats or spec.repeats)
    if spec.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(f"preset {preset!r} needs a CUDA GPU; none is available here")
    limit = mem_limit_gib if mem_limit_gib is not None else spec.mem_limit_gib
    mem_limit = int(limit * GIB) if limit else default_mem_limit(spec.device)
    settings = H.Settings(device=spec.device, repeats=spec.repeats, warmup=spec.warmup,
                          min_repeats=min(spec.min_repeats, spec.repeats), budget_s=spec.budget_s, timeout_s=timeout_s,
                          isolate=isolate, mem_limit_bytes=mem_limit)
    csv_path = Path(out) / f"{FAMILY}.csv"
    common = dict(run_id=now(), preset=preset, machine=machine_name(spec.device), device=spec.device, **versions())
    shown = f"{settings.mem_limit_bytes / GIB:.1f} GiB" if settings.mem_limit_bytes else "none"
    print(f"spherekit bench {FAMILY}: preset {preset} on {common['machine']}; mem limit {shown}; rows -> {csv_path}")
    rows: list[dict] = []

    def emit(task, result):
        row = {**common, **task, "median_ms": None, "p20_ms": None, "p80_ms": None, "peak_extra_mib": None,
               "repeats": 0, "note": "", **result, "timestamp": now()}
        append_rows(csv_path, [set_fields(row, PARAMS)])
        rows.append(row)
        print(f"  {row['provider']:<10} B={row['B']:>5} {row['status']:<7} "
              f"{(row['median_ms'] or float('nan')):10.1f} ms  {row['note']}", flush=True)

    t0 = time.perf_counter()
    for provider in providers or PROVIDERS:
        batch = spec.start_batch
        while batch <= spec.max_batch:
            H.run_tasks(MODULE, [make_task(spec, provider, batch)], settings, emit, progress=progress)
            if rows[-1]["status"] != "ok":
                break
            batch *= 2
    print(f"\nsummary ({time.perf_counter() - t0:.0f} s):")
    for line in summarize(rows):
        print("  " + line)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `spherekit bench verifier-train` (run_from_args passes them to run)."""
    parser.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    parser.add_argument("--out", default="results/bench", help="folder of the CSV (default: %(default)s)")
    parser.add_argument("--providers", type=H.comma_list, help=f"comma-separated subset of {','.join(PROVIDERS)}")
    parser.add_argument("--mem-limit-gib", type=float, help="memory limit of a step (default: the preset's)")
    parser.add_argument("--max-batch", type=int, help="largest batch tried (default: the preset's)")
    parser.add_argument("--start-batch", type=int, help="first batch tried (default: the preset's)")
    parser.add_argument("--repeats", type=int, help="timed steps per batch (default: the preset's)")
    parser.add_argument("--isolate", default="task", choices=("task", "none"),
                        help="a fresh worker process per batch (default) or in-process")
    parser.add_argument("--timeout-s", type=float, default=1800.0)
    parser.add_argument("--rehearse", action="store_true",
                        help="run the preset's batches on CPU with the tiny encoder (checks the path without a GPU)")


def run_from_args(args: argparse.Namespace) -> int:
    run(args.preset, args.out, args.providers, args.mem_limit_gib, args.max_batch, args.start_batch, args.repeats,
        args.isolate, args.timeout_s, rehearse=args.rehearse)
    return 0


main = H.family_entry(__name__)


if __name__ == "__main__":
    raise SystemExit(main())
