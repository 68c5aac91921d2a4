"""`spherekit eval MODEL --suite ... --split ...`: run evaluation suites on a model, print a table of
plain-word metrics, write one JSON per suite (atomically) and PNG plots to the results folder.

    spherekit eval all-mpnet-base-v2 --suite concept --split in-domain --limit 2000
    spherekit eval results/train/B1 --suite all --split head-holdout --out results/eval/B1

All suites of a run share one spherekit.evaluation.cache.EmbeddingCache: every distinct text is encoded once.

Frozen encoder = B0 of "Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994): a
sentence-transformers model is evaluated through its own readout (for all-mpnet-base-v2: mean pooling of the final
layer, then normalisation), which is the paper's "frozen all-mpnet-base-v2 with mean pooling".

Files: <out>/<suite>.<split>.json for suites that read the WordNet split (concept, geometry,
layerwise, stress), <out>/<suite>.json for suites with their own data (nearmiss, emotion); plots in
<out>/plots/<suite>/. Resumable: a suite whose JSON exists with the same run configuration (model,
split, seed, limit, batch size) is skipped unless force=True (--force).
The suite contract (make_evaluator) is in spherekit.evaluation.suites.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

from .._atomic import atomic_write_json
from .cache import EmbeddingCache
from .suites import NEEDS_SPLIT, load_suite, suite_names

SPLITS = ("in-domain", "head-holdout", "source-holdout")


def model_slug(model) -> str:
    """A folder name for a model name or path ("results/train/B1" -> "B1")."""
    text = str(model).rstrip("/\\")
    text = Path(text).name if os.sep in text or "/" in text else text
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) or "model"


def write_json_atomic(path, payload) -> Path:
    """Write JSON to `path` atomically (spherekit._atomic.atomic_write_json: temporary file, then rename)."""
    return atomic_write_json(path, payload)


def result_path(out: Path, suite: str, split_kind: str) -> Path:
    return out / (f"{suite}.{split_kind}.json" if suite in NEEDS_SPLIT else f"{suite}.json")


def _saved(path: Path, run_config: dict) -> dict | None:
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if saved.get("run_config") == run_config and "metrics" in saved else None


def _load_model(model, device):
    if not isinstance(model, (str, os.PathLike)):
        return model
    from ..models import load_backbone

    return load_backbone(model, device=device)


def _load_split(split, seed):
    if not isinstance(split, str):
        return split
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    from ..data.splits import make_split

    return make_split(kind=split, seed=seed)


def format_table(results: dict[str, dict]) -> str:
    """Rows 'suite  metric  value' with aligned columns."""
    rows = [(suite, name, f"{value:.4f}" if isinstance(value, float) else str(value))
            for suite, res in results.items() for name, value in res.get("metrics", {}).items()]
    rows += [(suite, "error", res["error"]) for suite, res in results.items() if "error" in res]
    if not rows:
        return "(no results)"
    w0 = max(len("suite"), *(len(r[0]) for r in rows))
    w1 = max(len("metric"), *(len(r[1]) for r in rows))
    lines = [f"{'suite':<{w0}}  {'metric':<{w1}}  value", f"{'-' * w0}  {'-' * w1}  -----"]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def run_eval(model, *, suite: str = "all", split: str | object = "in-domain", out=None, limit: int | None = None,
             device: str | None = None, seed: int = 0, batch_size: int = 64, force: bool = False,
             progress: bool = True, plots: bool = True, model_name: str | None = None) -> dict[str, dict]:
    """Run the suites; return {suite: {"metrics": {...}, ...} or {"error": "..."}}.

    model: a name/path for spherekit.models.load_backbone, or a loaded SentenceTransformer.
    split: "in-domain" | "head-holdout" | "source-holdout" (make_split(kind, seed)), or a Split object.
    """
    names = suite_names(suite)
    name = model_name or (model_slug(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__)
    split_kind = split if isinstance(split, str) else getattr(split, "kind", "custom")
    out = Path(out) if out is not None else Path("results") / "eval" / model_slug(name)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    run_config = {"model": str(model) if isinstance(model, (str, os.PathLike)) else name, "split": split_kind,
                  "seed": seed, "limit": limit, "batch_size": batch_size}

    from tqdm.auto import tqdm

    results: dict[str, dict] = {}
    todo = []
    for s in names:
        saved = None if force else _saved(result_path(out, s, split_kind), run_config)
        if saved is not None:
            results[s] = {**saved, "skipped": True}
        else:
            todo.append(s)
    loaded_model = loaded_split = None
    bar = tqdm(todo, desc="suites", unit="suite", disable=not progress, file=sys.stderr)
    for s in bar:
        bar.set_postfix_str(s)
        start = time.perf_counter()
        try:
            module = load_suite(s)
            if loaded_model is None:  # one cache for every suite: each distinct text is encoded once
                loaded_model = EmbeddingCache(_load_model(model, device), batch_size=batch_size, show_progress=progress)
            split_obj = None
            if s in NEEDS_SPLIT:
                if loaded_split is None:
                    loaded_split = _load_split(split, seed)
                split_obj = loaded_split
            evaluator = module.make_evaluator(split_obj, limit=limit, seed=seed, batch_size=batch_size)
            if hasattr(evaluator, "show_progress"):
                evaluator.show_progress = progress
            metrics = {k: float(v) for k, v in evaluator(loaded_model).items()}
            plot_paths = []
            if plots and hasattr(evaluator, "write_plots"):
                plot_paths = [str(p) for p in evaluator.write_plots(out / "plots" / s)]
            payload = {
                "suite": s, "model": run_config["model"], "split": split_kind if s in NEEDS_SPLIT else None,
                "run_config": run_config, "evaluator_config": getattr(evaluator, "config", {}),
                "metrics": metrics, "plots": plot_paths, "seconds": round(time.perf_counter() - start, 3),
                "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            }
            write_json_atomic(result_path(out, s, split_kind), payload)
            results[s] = payload
        except Exception as exc:  # one failing suite does not stop the others
            results[s] = {"error": f"{type(exc).__name__}: {exc}"}
            if os.environ.get("SPHEREKIT_DEBUG"):
                traceback.print_exc()
    return results


def main(args) -> int:
    """Entry point of `spherekit eval` (args from cli.py's parser, which validated --suite and --limit)."""
    from .._atomic import check_writable

    out = Path(args.out) if args.out else Path("results") / "eval" / model_slug(args.model)
    try:  # before any model is loaded or suite computed
        check_writable(out)
    except PermissionError as exc:
        print(f"spherekit eval: error: argument --out: {exc}", file=sys.stderr)
        return 2
    results = run_eval(args.model, suite=args.suite, split=args.split, out=out, limit=args.limit,
                       device=args.device, seed=args.seed, batch_size=args.batch_size, force=args.force,
                       progress=not args.no_progress, plots=not args.no_plots)
    print(format_table(results))
    skipped = [s for s, r in results.items() if r.get("skipped")]
    if skipped:
        print(f"reused saved results for: {', '.join(skipped)} (use --force to recompute)")
    return 1 if any("error" in r for r in results.values()) else 0


def _suite_spec(text: str) -> str:
    """argparse type of --suite: the spec itself once every name in it is a known suite."""
    try:
        suite_names(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _positive_int(text: str) -> int:
    """argparse type of --limit: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_arguments(parser) -> None:
    """The `spherekit eval` arguments (called by cli.py)."""
    from .suites import SUITES

    parser.add_argument("model", help="a backbone name (all-mpnet-base-v2, all-MiniLM-L6-v2) or a saved model folder")
    parser.add_argument("--suite", default="all", type=_suite_spec,
                        help=f"'all' or a comma-separated subset of {','.join(SUITES)}")
    parser.add_argument("--split", default="in-domain", choices=SPLITS)
    parser.add_argument("--out", help="results folder (default: results/eval/<model>)")
    parser.add_argument("--limit", type=_positive_int, help="evaluate at most N (>= 1) test items per suite")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: the model's choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--force", action="store_true", help="recompute suites whose results exist")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
