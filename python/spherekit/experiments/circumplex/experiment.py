"""`spherekit reproduce circumplex`: the experiment object the runner drives (spherekit.experiments.base).

Per unit: build the encoder (backbone + GPT/nGPT head, or the backbone alone for Pretrained), train it with
the run's loss through the one training path (experiments.training.train; nGPT weights renormalised after
every step), save it, embed the test texts and measure V-measure, CD-r, the label x label cosine matrix, PCA
explained variance, the PCA-dimension sweep and 2-D PCA / MDS projections (evaluate.py). Frozen runs train
on cached backbone token states (cache.py): the backbone runs once per text for the whole grid, not on
every step of every run.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..base import CardFromReportModule, Unit
from .paper import CITATION
from .config import (PRESETS, PRETRAINED, SELECTION_FIELDS, TRAINED_RUNS, all_conditions, parse_condition,
                     preset_config, select, units_of)

CHECKPOINT, TRAINING, STATES = "checkpoint", "training.json", "token_states"


class CircumplexExperiment(CardFromReportModule):
    name = "circumplex"
    title = "Mapping the Circumplex of Affect"
    citation = CITATION
    presets = PRESETS
    conditions = all_conditions()
    condition_help = ("Pretrained; <run>@<regime>[+<k>labels] with run in " + ", ".join(TRAINED_RUNS)
                      + ", regime in frozen (head only), unfrozen (backbone too), k in 2, 3, 4, 6 (label-count "
                      "study); a bare run name selects it in every regime of the preset")
    selection_fields = SELECTION_FIELDS

    def make_config(self, preset: str):
        return preset_config(preset)

    def units(self, cfg) -> list[Unit]:
        return [Unit(b, c) for b in cfg.backbones for c in units_of(cfg)]

    def select(self, names) -> dict:
        return select(names)

    def prepare(self, cfg, root, progress: bool):
        from .data import load_data

        data = load_data(cfg)
        data.root = Path(root)
        return data

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict:
        from ..._atomic import atomic_dir
        from ...models import load_backbone
        from ..card import write_json
        from ..training import clear_checkpoints, is_main_process, loss_curve
        from .measure import evaluate_unit

        run = parse_condition(unit.condition)
        unit_dir, seconds, training = Path(unit_dir), {}, None
        ckpt = unit_dir / CHECKPOINT
        if not is_main_process() and (run.run == PRETRAINED or (ckpt / "modules.json").is_file()):
            return {}
        backbone = load_backbone(unit.backbone)
        backbone.max_seq_length = min(cfg.max_seq_length, backbone.max_seq_length or cfg.max_seq_length)
        labels = None
        if run.labels:
            from .evaluate import label_count_subsets

            labels = label_count_subsets(data.angles, (run.labels,))[run.labels]
        train_items, test_items, order = data.subset(labels)
        if run.run == PRETRAINED:
            model = backbone
        elif (ckpt / "modules.json").is_file():  # trained earlier; only the evaluation was cut off
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(ckpt), trust_remote_code=True, local_files_only=True)
        else:
            model, result = _train(cfg, run, backbone, data, train_items, order, unit_dir, progress)
            if not is_main_process():
                return {}
            if result["cache_seconds"] is not None:
                seconds["cache"] = result["cache_seconds"]
            seconds["train"] = round(result["seconds"], 2)
            training = {"steps": result["steps"], "resumed_from": result["resumed_from"],
                        "seconds_per_step": round(result["seconds"] / max(result["steps_here"], 1), 4),
                        "curve": loss_curve(result["log_history"])}
            write_json(unit_dir / TRAINING, training)
            with atomic_dir(ckpt) as tmp:
                model.save(str(tmp))
            clear_checkpoints(unit_dir)
        if training is None and (unit_dir / TRAINING).is_file():
            import json

            training = json.loads((unit_dir / TRAINING).read_text())
        start = time.perf_counter()
        metrics, details = evaluate_unit(model, test_items, data.angles, cfg, progress=progress)
        seconds["eval"] = round(time.perf_counter() - start, 2)
        return {"metrics": metrics, "seconds": seconds, "training": training, "details": details,
                "labels": list(order)}


def _train(cfg, run, backbone, data, train_items, order, unit_dir, progress):
    """Train one run; returns (the model to save, on the real backbone) and the training record."""
    from datasets import Dataset

    from ..training import train
    from .cache import CachedTokenStates, TokenStateCache
    from .models import build_loss, build_model, callbacks, to_uncached

    frozen = run.regime == "frozen"
    first, cache_seconds = backbone, None
    if frozen and cfg.cache_states:
        start = time.perf_counter()
        key = (str(backbone[0].auto_model.config._name_or_path), cfg.cache_dtype, backbone.max_seq_length)
        if key not in data.caches:  # built (or read from disk) once per backbone, shared by the grid's runs
            data.caches[key] = TokenStateCache.load_or_build(backbone, data.texts, data.root / "data" / STATES,
                                                             dtype=cfg.cache_dtype, batch_size=cfg.eval_batch_size,
                                                             progress=progress)
        cache_seconds = round(time.perf_counter() - start, 2)
        first = CachedTokenStates(data.caches[key])
    model = build_model(first, head=run.head, pooling=cfg.pooling, frozen=frozen, dropout=cfg.dropout,
                        d_mlp=cfg.d_mlp, alpha_init=cfg.alpha_init, seed=cfg.seed)
    ids = {label: i for i, label in enumerate(order)}
    loss = build_loss(model, run.loss, [data.angles[label] for label in order], temperature=cfg.temperature,
                      margin=cfg.margin)
    dataset = Dataset.from_dict({"text": [it.text for it in train_items],
                                 "label": [ids[it.label] for it in train_items]})
    result = train(model, dataset, loss, cfg.train_config(len(train_items)), unit_dir, callbacks=callbacks(run.head),
                   progress=progress)
    if first is not backbone:
        model = to_uncached(model, backbone)
    record = {"seconds": result.seconds, "steps": result.steps, "resumed_from": result.resumed_from,
              "steps_here": result.steps - (result.resumed_from or 0), "log_history": result.log_history,
              "cache_seconds": cache_seconds}
    return model, record


EXPERIMENT = CircumplexExperiment()
