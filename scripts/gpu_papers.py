"""Predicted GPU-hours of every paper's `paper` preset, from timed steps of its architecture on the GPU at hand.

Each paper that has a GPU plan (experiments/<name>/gpu.py: gpu_plan(cfg) -> [WorkItem], spherekit.experiments.api
.gpu_plan) is found through its plugin like its other modules; the plan turns get(name).make_config("paper") (the
backbones, conditions, seeds, batch sizes and lengths) and the paper's public tables into work items (backbone, kind,
sequences per step, tokens per sequence, steps). This script knows no paper. Each distinct item is timed on a
randomly initialised backbone of the paper's shape (api.gpu_plan.ARCHS: the model cards' config.json values; no
weights travel):
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
import statistics
import time
from pathlib import Path

from spherekit.experiments.api.gpu_plan import ARCHS, WorkItem

TINY = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)  # vocab kept: token ids
COLUMNS = ["paper", "backbone", "kind", "sequences", "tokens", "steps", "step_s", "hours", "status", "basis"]
GPU_MODULE = "gpu"  # experiments/<name>/gpu.py


def planned(names, get) -> list[str]:
    """The experiments among `names` that have a GPU plan (a gpu module), in the given order."""
    return [n for n in names if get(n).has_module(GPU_MODULE)]


def plan_of(experiment) -> list[WorkItem]:
    """The experiment's work items for its `paper` preset (its gpu module's gpu_plan)."""
    items = list(experiment.module(GPU_MODULE).gpu_plan(experiment.make_config("paper")))
    bad = [type(w).__name__ for w in items if not isinstance(w, WorkItem)]
    if bad:
        raise TypeError(f"{experiment.name}'s gpu_plan must return WorkItem objects; got {', '.join(sorted(set(bad)))}")
    return items


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


def measure(items: list[WorkItem], device: str, rehearse: bool, repeats: int) -> list[dict]:
    """Each item's result, in order: step_s (or its assumed cost), steps, status; one model per (backbone, kind)."""
    import gc

    import torch

    results = [{} for _ in items]
    for backbone, kind in sorted({(w.backbone, w.kind) for w in items if w.kind != "assumed"}):
        try:
            model, vocab = build(backbone, kind, device, rehearse)
        except Exception as exc:  # noqa: BLE001 - recorded per item, the other backbones go on
            for i, w in enumerate(items):
                if (w.backbone, w.kind) == (backbone, kind):
                    results[i] = dict(status=f"error: {type(exc).__name__}: {exc}"[:200])
            continue
        n_params = sum(p.numel() for p in model.parameters())
        timed: dict[tuple, float | str] = {}
        for i, w in enumerate(items):
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
            steps = w.steps_for(n_params)
            got = timed[shape]
            results[i] = dict(steps=steps, params=n_params, status="ok" if isinstance(got, float) else got,
                              step_s=got if isinstance(got, float) else None)
        del model
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    for i, w in enumerate(items):
        if w.kind == "assumed":
            results[i] = dict(steps=w.steps_for(0), step_s=w.assumed_s, status="assumed")
    return results


def rows_of(paper: str, items: list[WorkItem], results: list[dict], rehearse: bool) -> list[dict]:
    out = []
    for w, r in zip(items, results):
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
    ap.add_argument("--papers", help="comma-separated subset (default: every paper with a gpu.py plan)")
    ap.add_argument("--repeats", type=int, default=2, help="timed steps per item (after one untimed step)")
    ap.add_argument("--rehearse", action="store_true", help="CPU, tiny backbones: checks the path without a GPU")
    args = ap.parse_args(argv)
    import torch

    device = "cpu" if args.rehearse else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("needs a CUDA GPU (or --rehearse)")
        return 2
    with_plan = planned(names(), get)
    papers = [p for p in args.papers.split(",") if p] if args.papers else with_plan
    unknown = [p for p in papers if p not in with_plan]
    if unknown:
        print(f"--papers: no GPU plan (experiments/<name>/gpu.py) for {', '.join(unknown)}; papers with one: "
              f"{', '.join(with_plan)}")
        return 2
    rows = []
    for paper in papers:
        items = plan_of(get(paper))
        t0 = time.perf_counter()
        results = measure(items, device, args.rehearse, 1 if args.rehearse else args.repeats)
        paper_rows = rows_of(paper, items, results, args.rehearse)
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
