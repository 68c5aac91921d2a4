"""`spherekit bench reproduce concept`: one reproduction condition run two ways, side by side.

    spherekit                the experiment layer's path: one ConceptEquivalenceLoss per view (fused InfoNCE
                             + BCE on the same embeddings, spherekit.ops.info_nce), summed per step; evaluation
                             through one EmbeddingCache (each distinct text encoded once for every suite)
    plain-st                 what a sentence-transformers user writes for the same objective: ST's
                             MultipleNegativesRankingLoss per view plus a separately materialised BCE term
                             (the t2d anchors, positives and negatives encoded again, the (B, k+1) logits
                             built), summed per step; evaluation by each suite on the model (every suite
                             encodes its own texts, as `spherekit eval` does)

Both train condition B1 of the concept preset on the same rows with the same training path (trainer,
layerwise LR, schedule), each in a fresh worker process. Measured: wall time per training step (median and
20/80% quantiles after `warmup` steps), the peak extra memory of training (resident memory growth over the
loaded model, spherekit.bench.memory; CUDA: allocated tensor memory), and the evaluation time of the
preset's suites (the stress-test negatives are generated once beforehand and shared by both, so the
evaluation ratio is the embedding reuse alone). Rows go to <out>/reproduce.csv.

Presets: cpu-small (all-MiniLM-L6-v2, batch 16, 30 steps), gpu (all-mpnet-base-v2, the paper preset, bf16,
60 steps), tiny (tests; pass --backbone). Goals on CPU: training no slower than plain-st with lower peak
memory; evaluation at least 3x faster.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ...bench import PresetBase, comma_list
from ...bench.workers import spawn_worker, worker_main

RECIPES = ("spherekit", "plain-st")


@dataclass(frozen=True)
class Preset(PresetBase):
    """`warmup` training steps are left out of the step-time quantiles (repeats, budget_s unused: every
    step is timed)."""

    experiment_preset: str  # the reproduction's own preset (spherekit reproduce concept --preset)
    steps: int


PRESETS = {
    "cpu-small": Preset("cpu", "cpu-small", 30, warmup=5),
    "gpu": Preset("cuda", "paper", 60, warmup=10),
    "tiny": Preset("cpu", "tiny", 4, warmup=1),
}
COLUMNS = ["timestamp", "run_id", "preset", "machine", "torch", "spherekit", "sentence_transformers", "experiment",
           "recipe", "backbone", "condition", "steps", "batch", "step_median_s", "step_p20_s", "step_p80_s",
           "train_peak_extra_mib", "eval_s", "eval_texts_encoded", "status", "note"]


class PlainConceptRecipe(nn.Module):
    """The objective of "Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994) the plain
    sentence-transformers way (the baseline of this benchmark):

        L = MNRL(syn) + w_t2d MNRL(t2d anchor, positive) + w_d2d MNRL(d2d) + 0.5 BCE(t2d)
        BCE = mean over rows of the mean over the row's 1 + n real pairs (positive: label 1, each of the
              n real hard negatives: label 0; the padded slots past the row's count n are left out) of
              BCE-with-logits(bce_scale * cos + bce_bias)

    with every MNRL term sentence-transformers' own loss and the BCE term computed from a second encoding of
    the t2d anchor, positive and negative columns (the MNRL loss does not hand its embeddings out)."""

    def __init__(self, model, cfg, k: int):
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        super().__init__()
        self.model, self.cfg, self.k = model, cfg, k
        self.mnrl = MultipleNegativesRankingLoss(model, scale=cfg.scale)

    def forward(self, features, labels=None) -> dict:
        import torch.nn.functional as F

        f = list(features)
        syn, t2d, d2d = f[:2], f[2:4 + self.k], f[4 + self.k:]
        out = {"syn": self.cfg.syn_weight * self.mnrl([dict(x) for x in syn], None),
               "t2d": self.cfg.t2d_weight * self.mnrl([dict(x) for x in t2d[:2]], None),
               "d2d": self.cfg.d2d_weight * self.mnrl([dict(x) for x in d2d], None)}
        emb = [F.normalize(self.model(dict(x))["sentence_embedding"], dim=-1) for x in t2d]
        anchor, cands = emb[0], torch.stack(emb[1:], dim=1)              # (B, d), (B, k+1, d)
        logits = self.cfg.bce_scale * torch.einsum("bd,bkd->bk", anchor, cands) + self.cfg.bce_bias
        target = torch.zeros_like(logits)
        target[:, 0] = 1.0
        count = labels if labels is not None else torch.full((len(logits),), self.k, device=logits.device)
        real = torch.arange(self.k + 1, device=logits.device) <= count.to(logits.device)[:, None]
        pairs = F.binary_cross_entropy_with_logits(logits, target, reduction="none") * real
        out["bce"] = self.cfg.bce_weight * (pairs.sum(1) / real.sum(1)).mean()
        return out


class StepTimer:
    """A TrainerCallback recording the wall time of every optimizer step."""

    def __init__(self):
        from transformers import TrainerCallback

        timer = self

        class _CB(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                timer.t0 = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                timer.times.append(time.perf_counter() - timer.t0)

        self.times: list[float] = []
        self.t0 = 0.0
        self.callback = _CB()


def _plain_eval(model, data, cfg) -> None:
    """Every suite on the model itself: each encodes its own texts (spherekit eval's behaviour)."""
    from ...evaluation.evaluators.concept import ConceptRetrievalEvaluator, build_pools
    from ...evaluation.evaluators.geometry import GeometryEvaluator, split_texts
    from ...evaluation.evaluators.layerwise import LayerwiseEvaluator
    from ...evaluation.evaluators.stress import StressTestEvaluator

    bs = cfg.eval_batch_size
    for kind, es in data.eval_sets.items():
        ConceptRetrievalEvaluator(es.records, seed=cfg.data_seed, batch_size=bs)(model)
        StressTestEvaluator(es.records, negatives=(es.negatives, es.rule_stats), seed=cfg.data_seed,
                            batch_size=bs)(model)
        if kind == "in-domain":
            texts, labels = split_texts(es.records)
            GeometryEvaluator(texts, labels, seed=cfg.data_seed, batch_size=bs)(model)
            terms, defs, t2d, *_ = build_pools(es.records)
            LayerwiseEvaluator(terms, defs, t2d, seed=cfg.data_seed, batch_size=bs)(model)


def worker(spec: dict) -> dict:
    """Train and evaluate one recipe (in a fresh process); returns the measured numbers."""
    from dataclasses import replace

    from ...bench import quantile
    from ...bench.memory import PeakMemory
    from ...models import load_backbone
    from ...training.trainer import train
    from .data import load_or_build
    from .evaluate import evaluate
    from .models import build_loss, build_model, training_swaps
    from .spec import EXPERIMENT, SETUPS

    cfg = replace(EXPERIMENT.make_config(spec["experiment_preset"]), logging_steps=10 ** 6)
    if spec.get("backbone"):
        cfg = replace(cfg, backbones=(spec["backbone"],))
    data = load_or_build(cfg, spec["data_root"], progress=False)
    cfg = replace(cfg, steps=spec["steps"], save_steps=0)
    condition = SETUPS["B1"]
    swaps = training_swaps(condition, cfg)
    model = build_model(load_backbone(cfg.backbones[0]), condition, cfg)
    loss = build_loss(model, condition, cfg, data.k) if spec["recipe"] == "spherekit" \
        else PlainConceptRecipe(model, cfg, data.k)
    timer = StepTimer()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp, PeakMemory(device) as peak:
        train(model, data.dataset(swaps), loss, cfg.train_config(cfg.seeds[0]), tmp, callbacks=[timer.callback],
              progress=False)
    steps = timer.times[spec["warmup"]:] or timer.times
    start = time.perf_counter()
    if spec["recipe"] == "spherekit":
        _, details, _ = evaluate(model, data, cfg)
        encoded = details["encoded_texts"]
    else:
        _plain_eval(model, data, cfg)
        encoded = None
    return {"step_median_s": quantile(steps, 0.5), "step_p20_s": quantile(steps, 0.2),
            "step_p80_s": quantile(steps, 0.8), "train_peak_extra_mib": peak.extra_bytes / (1 << 20),
            "eval_s": time.perf_counter() - start, "eval_texts_encoded": encoded, "backbone": cfg.backbones[0],
            "batch": cfg.batch_size, "memory_method": peak.method}


def _ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def run(preset: str = "cpu-small", out: str = "results/bench", backbone: str | None = None, steps: int | None = None,
        recipes=None, data_root: str = "results/reproduce/concept", timeout_s: float = 3600.0) -> int:
    from ...bench.machine import machine_name, now, versions
    from ...bench.results import append_rows

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    recipes = list(recipes or RECIPES)
    bad = [r for r in recipes if r not in RECIPES]
    if bad:
        raise ValueError(f"unknown recipe(s) {bad}; valid recipes: {', '.join(RECIPES)}")
    p = PRESETS[preset]
    run_id, device = now(), ("cuda" if torch.cuda.is_available() else "cpu")
    spec = {"experiment_preset": p.experiment_preset, "steps": steps or p.steps, "warmup": p.warmup,
            "backbone": backbone, "data_root": str(Path(data_root) / p.experiment_preset)}
    results = {}
    for recipe in recipes:
        print(f"bench reproduce concept: {recipe} ...", file=sys.stderr, flush=True)
        results[recipe] = spawn_worker(__name__, {**spec, "recipe": recipe}, timeout_s)
    ver = versions()
    rows = [{"timestamp": now(), "run_id": run_id, "preset": preset, "machine": machine_name(device),
             "torch": ver["torch"], "spherekit": ver["spherekit"],
             "sentence_transformers": ver["sentence_transformers"],
             "experiment": "concept", "recipe": recipe, "condition": "B1", "steps": spec["steps"],
             **{k: r.get(k, "") for k in ("backbone", "batch", "step_median_s", "step_p20_s", "step_p80_s",
                                           "train_peak_extra_mib", "eval_s", "eval_texts_encoded", "status")},
             "note": r.get("note", r.get("memory_method", ""))} for recipe, r in results.items()]
    append_rows(Path(out) / "reproduce.csv", rows, COLUMNS)
    print(f"{'recipe':10} {'s/step (p20-p80)':>22} {'train peak MiB':>15} {'eval s':>8}  status")
    for recipe, r in results.items():
        if r["status"] != "ok":
            print(f"{recipe:10} {r['status']}: {r.get('note', '')}")
            continue
        print(f"{recipe:10} {r['step_median_s']:8.3f} ({r['step_p20_s']:.3f}-{r['step_p80_s']:.3f}) "
              f"{r['train_peak_extra_mib']:15.0f} {r['eval_s']:8.1f}  ok")
    ours, plain = results.get("spherekit", {}), results.get("plain-st", {})
    if ours.get("status") == plain.get("status") == "ok":
        print(f"spherekit vs plain-st: time per step {_ratio(ours['step_median_s'], plain['step_median_s'])}, "
              f"training peak memory {_ratio(ours['train_peak_extra_mib'], plain['train_peak_extra_mib'])}, "
              f"evaluation {_ratio(plain['eval_s'], ours['eval_s'])} faster")
    print(f"rows appended to {Path(out) / 'reproduce.csv'}")
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1


def add_arguments(parser) -> None:
    parser.add_argument("--preset", default="cpu-small", choices=sorted(PRESETS))
    parser.add_argument("--out", default="results/bench")
    parser.add_argument("--backbone", help="override the preset's backbone (a name or a local folder)")
    parser.add_argument("--steps", type=int, help="training steps per recipe (default: the preset's)")
    parser.add_argument("--recipes", type=comma_list, help=",".join(RECIPES))
    parser.add_argument("--data-root", default="results/reproduce/concept",
                        help="where the reproduction's cached data lives (shared with spherekit reproduce)")
    parser.add_argument("--timeout-s", type=float, default=3600.0)


def run_from_args(args) -> int:
    return run(args.preset, args.out, args.backbone, args.steps, args.recipes, args.data_root, args.timeout_s)


if __name__ == "__main__":
    raise SystemExit(worker_main(worker, sys.argv[1:], lambda: 2))
