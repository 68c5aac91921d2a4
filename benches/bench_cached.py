"""One training step (forward + backward) of MNRL vs its gradient-cached version, sentence-transformers vs spherekit.

    python benches/bench_cached.py [--batch-sizes 64,256] [--mini-batch 16] [--repeats 3] [--out benches/results]

all-MiniLM-L6-v2 (offline, spherekit.models.load_backbone), CPU, fp32, train mode (dropout on), on
(term, definition) pairs of WordNet (short glosses). Providers: st-mnrl, st-cached-mnrl, spherekit-mnrl,
spherekit-cached-mnrl (the cached ones embed in mini-batches of --mini-batch texts). Each (provider, batch)
runs in a fresh subprocess, timed and probed by spherekit.bench._harness.measure: median of the timed steps
after one warm-up, and peak_mib, the peak resident-memory growth of one step over the memory just before
it (spherekit.bench.memory.PeakMemory; gradients of the weights included); rss_mib is the subprocess's
peak resident set (model loading included). Rows are appended atomically to <out>/cached.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile

PROVIDERS = ("st-mnrl", "st-cached-mnrl", "spherekit-mnrl", "spherekit-cached-mnrl")
COLUMNS = ["timestamp", "run_id", "machine", "torch", "spherekit", "sentence_transformers", "provider", "batch",
           "mini_batch", "repeats", "median_s", "p20_s", "p80_s", "peak_mib", "rss_mib", "status", "note"]


def make_loss(provider: str, model, mini_batch: int):
    from sentence_transformers.sentence_transformer import losses as st

    import spherekit.losses as sk

    return {
        "st-mnrl": lambda: st.MultipleNegativesRankingLoss(model),
        "st-cached-mnrl": lambda: st.CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch),
        "spherekit-mnrl": lambda: sk.MultipleNegativesRankingLoss(model),
        "spherekit-cached-mnrl": lambda: sk.CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch),
    }[provider]()


def worker(spec_path: str) -> int:
    """In a fresh process: measure one (provider, batch); print the result as one JSON line."""
    import torch

    from spherekit.bench import _harness as H
    from spherekit.models import load_backbone

    spec = json.loads(open(spec_path).read())
    torch.manual_seed(0)
    model = load_backbone("all-MiniLM-L6-v2", device="cpu")
    model.train()
    loss = make_loss(spec["provider"], model, spec["mini_batch"])
    columns = (spec["anchors"], spec["positives"])
    features = []

    def setup():
        features[:] = [model.preprocess(texts) for texts in columns]

    def step():
        loss(features, None).backward()

    settings = H.Settings(repeats=spec["repeats"], warmup=1, min_repeats=spec["repeats"], budget_s=1e9,
                          isolate="none")
    result = H.measure(step, settings, setup=setup, teardown=lambda: model.zero_grad(set_to_none=True))
    result["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps(result), flush=True)
    return 0


def load_pairs(n: int) -> tuple[list[str], list[str]]:
    """n (term, definition) pairs of WordNet with short glosses (at most 16 words), one per term."""
    from spherekit.data.wordnet import load_wordnet

    seen, pairs = set(), []
    for p in load_wordnet().term_definition_pairs():
        if p.term not in seen and len(p.definition.split()) <= 16:
            seen.add(p.term)
            pairs.append((p.term.replace("_", " "), p.definition))
    pairs = random.Random(0).sample(pairs, n)
    return [a for a, _ in pairs], [b for _, b in pairs]


def run_one(provider: str, batch: int, mini_batch: int, repeats: int, texts) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-cached-") as tmp:
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"provider": provider, "mini_batch": mini_batch, "repeats": repeats,
                       "anchors": texts[0][:batch], "positives": texts[1][:batch]}, f)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", spec],
                              capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1])
    tail = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    status = "oom" if proc.returncode == -9 else "error"
    return {"status": status, "note": f"exit {proc.returncode}: {tail[-1][:250] if tail else 'no stderr'}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-sizes", default="64,256", help="comma-separated batch sizes (default 64,256)")
    ap.add_argument("--mini-batch", type=int, default=16, help="mini_batch_size of the cached losses (default 16)")
    ap.add_argument("--repeats", type=int, default=3, help="timed steps per measurement (default 3)")
    ap.add_argument("--providers", default=",".join(PROVIDERS), help=f"comma-separated subset of {PROVIDERS}")
    ap.add_argument("--out", default="results/bench")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)

    from spherekit.bench.machine import machine_name, now, versions
    from spherekit.bench.results import append_rows

    try:
        batches = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        ap.error(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}")
    providers = args.providers.split(",")
    unknown = sorted(set(providers) - set(PROVIDERS))
    if unknown or min(batches) < 2 or args.mini_batch < 1 or args.repeats < 1:
        ap.error(f"bad arguments: unknown providers {unknown}; need batch sizes >= 2, --mini-batch >= 1, "
                 f"--repeats >= 1")
    texts = load_pairs(max(batches))
    common = dict(run_id=now(), machine=machine_name("cpu"), **versions())
    path = os.path.join(args.out, "cached.csv")
    print(f"{'provider':<22} {'batch':>5} {'mini':>4} {'median s':>9} {'p20-p80 s':>13} {'peak MiB':>9} "
          f"{'rss MiB':>8}  status", flush=True)
    ok = True
    for batch in batches:
        for provider in providers:
            mini = args.mini_batch if "cached" in provider else ""
            result = run_one(provider, batch, args.mini_batch, args.repeats, texts)
            row = {**common, "timestamp": now(), "provider": provider, "batch": batch, "mini_batch": mini,
                   "repeats": result.get("repeats"), "status": result["status"], "note": result.get("note", "")}
            if result["status"] == "ok":
                row.update(median_s=result["median_ms"] / 1e3, p20_s=result["p20_ms"] / 1e3,
                           p80_s=result["p80_ms"] / 1e3, peak_mib=result["peak_extra_mib"], rss_mib=result["rss_mib"])
                print(f"{provider:<22} {batch:>5} {mini!s:>4} {row['median_s']:9.3f} "
                      f"{row['p20_s']:6.3f}-{row['p80_s']:6.3f} {row['peak_mib']:9.1f} {row['rss_mib']:8.1f}  ok "
                      f"{row['note']}", flush=True)
            else:
                ok = False
                print(f"{provider:<22} {batch:>5} {mini!s:>4} {'-':>9} {'-':>13} {'-':>9} {'-':>8}  "
                      f"{row['status']} ({row['note']})", flush=True)
            append_rows(path, [row], columns=COLUMNS)
    print(f"rows appended to {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
