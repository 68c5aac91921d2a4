"""`spherekit bench reproduce compositional`: verifier training of "Training for Compositional Sensitivity Reduces
Dense Retrieval Generalization" (arXiv:2604.16351, sec. 3.2) the released code's way vs spherekit's, F3 and F4,
frozen and end to end.

One training step: MNRL with scale 10 over the B x (B + 1) grid of verifier scores (in-batch positives plus one
near-miss per query), backward, AdamW (verifier; encoder too end to end).
    released   the released code's approach: the encoder re-encodes the batch every step (under no_grad when
               frozen), the grid is built by a Python loop over the B queries, each row one verifier call on the
               query copied B times (spherekit.reference.paper_verifier: every map padded to map_size x
               map_size; PaperStyleF4 embeds all its patches, PaperStyleF3 runs the CNN on all of it)
    spherekit  frozen: token embeddings cached once (no encoder in the step); the grid from sim_map's all-pairs
               layout (spherekit.losses.verifier_mnrl_loss: no sequence copied per pair); F4 embeds only the
               patches of the batch's padded map, F3 computes each layer only where the maps reach
    spherekit-chunked  spherekit with the preset's chunk_rows (the grid scored that many query rows at a time
               under activation checkpointing: less memory for one more forward pass of the verifier; F3's
               BatchNorm statistics per chunk, as the released code's per-row calls)
samples/s = B / median step time; peak = the step's peak extra memory (spherekit.bench.memory.PeakMemory: CPU
resident-set growth, CUDA allocated bytes). Largest batch: B = b0, 2 b0, ... until the peak passes the limit.

Presets: cpu-small (MiniLM-shaped random encoder, short texts, 32-token maps; batches 32 and 64, search to 512
under 3 GiB), tiny (tests), gpu (bf16-free fp32, 128-token maps, batches 32 / 64, search to 4096 under 24 GiB).
Goal on CPU: spherekit >= 3x the samples/s and >= 2x the largest batch of the released approach.
Rows go to <out>/reproduce_compositional.csv.
"""

from __future__ import annotations

import csv
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ...bench.machine import GIB, machine_name, now

PROVIDERS = ("released", "spherekit", "spherekit-chunked")
VERIFIERS = ("F3", "F4")
REGIMES = ("frozen", "e2e")
COLUMNS = ["timestamp", "preset", "machine", "provider", "verifier", "regime", "B", "samples_per_s", "step_median_s",
           "peak_extra_mib", "status", "note"]


@dataclass(frozen=True)
class Preset:
    device: str
    encoder: dict        # BertConfig fields
    q_len: int
    d_len: int
    map_size: int
    f3_channels: int
    f4_width: int
    batches: tuple
    search_start: int
    search_max: int
    mem_limit_gib: float
    steps: int
    chunk_rows: int      # of the spherekit-chunked provider


MINILM = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
PRESETS = {
    "cpu-small": Preset("cpu", MINILM, 12, 24, 32, 32, 384, (32, 64), 16, 512, 3.0, 2, 8),
    "gpu": Preset("cuda", MINILM, 32, 128, 128, 128, 384, (32, 64), 32, 4096, 24.0, 5, 16),
    "tiny": Preset("cpu", dict(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=37), 5, 7, 8, 4, 32, (4,), 2, 8, 8.0, 1, 3),
}


def _texts(B, length, vocab, gen, device):
    lengths = torch.randint(max(1, length // 2), length + 1, (B,), generator=gen)
    ids = torch.randint(5, vocab, (B, length), generator=gen)
    mask = torch.arange(length)[None] < lengths[:, None]
    return (ids * mask).to(device), mask.to(device)


def _verifiers(name, p: Preset):
    from ...nn.verifiers import CNNVerifier, PatchTransformerVerifier
    from ...reference.paper_verifier import PaperStyleF3, PaperStyleF4

    if name == "F4":
        ours = PatchTransformerVerifier(patch=8, width=p.f4_width, num_layers=1, num_heads=1, ff_dim=32,
                                        map_size=p.map_size)
        return ours, PaperStyleF4.from_verifier(ours)
    ours = CNNVerifier(channels=p.f3_channels, num_layers=2, mlp_hidden=128, map_size=p.map_size)
    return ours, PaperStyleF3.from_verifier(ours)


def _released_loss(verifier, q, qm, pos, pm, neg, nm):
    """The released loop: one verifier call per query row on the query repeated B times, then the near-misses."""
    import torch.nn.functional as F

    b = q.shape[0]
    call = verifier if not hasattr(verifier, "score") else verifier.score
    rows = [call(q[i:i + 1].expand(b, -1, -1).contiguous(), qm[i:i + 1].expand(b, -1), pos, pm) for i in range(b)]
    grid = torch.cat([torch.stack(rows), call(q, qm, neg, nm)[:, None]], dim=1)
    return F.cross_entropy(grid * 10.0, torch.arange(b, device=q.device))


def build_step(provider, name, regime, B, p: Preset):
    from transformers import BertConfig, BertModel

    from ...losses.verifier_mnrl import verifier_mnrl_loss

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(**p.encoder, max_position_embeddings=512), add_pooling_layer=False).to(p.device)
    ours, released = _verifiers(name, p)
    verifier = (released if provider == "released" else ours).to(p.device).train()
    chunk_rows = p.chunk_rows if provider == "spherekit-chunked" else None
    params = [{"params": verifier.parameters(), "lr": 1e-4}]
    if regime == "e2e":
        params.append({"params": encoder.parameters(), "lr": 1e-5})
    opt = torch.optim.AdamW(params)
    gen = torch.Generator().manual_seed(0)
    batch = [_texts(B, n, p.encoder["vocab_size"], gen, p.device) for n in (p.q_len, p.d_len, p.d_len)]

    def encode(ids, mask):
        return encoder(input_ids=ids, attention_mask=mask.long()).last_hidden_state

    cached = None
    if provider != "released" and regime == "frozen":
        with torch.no_grad():
            cached = [encode(i, m) for i, m in batch]  # the token cache: encoded once, outside the step

    def step():
        if cached is not None:
            toks = cached
        elif regime == "frozen":
            with torch.no_grad():
                toks = [encode(i, m) for i, m in batch]
        else:
            toks = [encode(i, m) for i, m in batch]
        (q, qm), (pos, pm), (neg, nm) = [(t, m) for t, (_, m) in zip(toks, batch)]
        if provider != "released":
            loss = verifier_mnrl_loss(verifier, q, qm, pos, pm, neg[:, None], nm[:, None], scale=10.0,
                                      chunk_rows=chunk_rows)
        else:
            loss = _released_loss(verifier, q, qm, pos, pm, neg, nm)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def measure(provider, name, regime, B, p: Preset) -> dict:
    from ...bench.memory import PeakMemory

    try:
        step = build_step(provider, name, regime, B, p)
        with PeakMemory(p.device) as mem:
            step()  # warm-up, and the peak of one step
        times = []
        for _ in range(p.steps):
            start = time.perf_counter()
            step()
            if p.device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    except (torch.OutOfMemoryError, MemoryError) as err:
        return {"status": "oom", "note": str(err)[:80]}
    med = statistics.median(times)
    peak = mem.extra_bytes / 2 ** 20
    status = "ok" if mem.extra_bytes <= p.mem_limit_gib * GIB else "over-limit"
    return {"samples_per_s": round(B / med, 2), "step_median_s": round(med, 4), "peak_extra_mib": round(peak, 1),
            "status": status, "note": ""}


def run(preset: str = "tiny", out="results/bench", search: bool = True) -> list[dict]:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    p = PRESETS[preset]
    rows = []
    path = Path(out) / "reproduce_compositional.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file()

    def emit(provider, name, regime, B, result, note=""):
        row = {"timestamp": now(), "preset": preset, "machine": machine_name(p.device), "provider": provider,
               "verifier": name, "regime": regime, "B": B, "samples_per_s": "", "step_median_s": "",
               "peak_extra_mib": "", **result}
        row["note"] = "; ".join(x for x in (row.get("note", ""), note) if x)
        rows.append(row)
        print(f"{provider:>9} {name} {regime:>6} B={B:<5} {row['samples_per_s']!s:>9} samples/s  "
              f"peak {row['peak_extra_mib']!s:>8} MiB  {row['status']} {row['note']}", flush=True)

    for name in VERIFIERS:
        for regime in REGIMES:
            for provider in PROVIDERS:
                for B in p.batches:
                    emit(provider, name, regime, B, measure(provider, name, regime, B, p))
                if search:
                    B, best = p.search_start, None
                    while B <= p.search_max:
                        r = measure(provider, name, regime, B, p)
                        if r["status"] != "ok":
                            break
                        best, B = (B, r), B * 2
                    if best:
                        emit(provider, name, regime, best[0], best[1],
                             f"largest batch under {p.mem_limit_gib} GiB (searched up to {p.search_max})")
    with path.open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerows(rows)
    for line in summarize(rows):
        print(line)
    return rows


def summarize(rows) -> list[str]:
    out = []
    for name in VERIFIERS:
        for regime in REGIMES:
            sel = [r for r in rows if r["verifier"] == name and r["regime"] == regime and r["status"] == "ok"]
            plain = {(r["provider"], r["B"]): r for r in sel if "largest" not in r["note"]}
            big = {r["provider"]: r["B"] for r in sel if "largest" in r["note"]}
            for (prov, B), r in sorted(plain.items()):
                if prov != "released" and ("released", B) in plain:
                    ratio = r["samples_per_s"] / plain[("released", B)]["samples_per_s"]
                    out.append(f"{name} {regime} B={B}: {prov} / released samples/s = {ratio:.1f}x")
            for prov in big:
                if prov != "released" and "released" in big:
                    out.append(f"{name} {regime}: largest batch {prov} {big[prov]} vs released {big['released']}"
                               f" ({big[prov] / big['released']:.1f}x)")
    return out


def add_arguments(parser) -> None:
    parser.add_argument("--preset", default="cpu-small", choices=list(PRESETS))
    parser.add_argument("--out", default="results/bench")
    parser.add_argument("--no-search", action="store_true", help="skip the largest-batch search")


def run_from_args(args) -> int:
    run(args.preset, args.out, search=not args.no_search)
    return 0
