"""`spherekit reproduce concept`: the experiment object the runner drives (spherekit.experiments.base)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ...losses.concept_equivalence import CITATION
from ..base import CardFromReportModule, Unit
from .config import CONDITIONS, PRESETS, SH_SUFFIX, preset_config, split_condition

CHECKPOINT, TRAINING = "checkpoint", "training.json"


def _load_saved(path: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), trust_remote_code=True, local_files_only=True)


class ConceptExperiment(CardFromReportModule):
    name = "concept"
    title = "Principles of Concept Representation in Sentence Encoders"
    citation = CITATION
    presets = PRESETS
    conditions = {**{name: c.description for name, c in CONDITIONS.items()},
                  **{f"{name}{SH_SUFFIX}": f"{name} trained on the second source alone, tested on WordNet"
                     for name in CONDITIONS}}
    selection_fields = ("backbones", "conditions", "source_holdout_conditions")

    def make_config(self, preset: str):
        return preset_config(preset)

    def units(self, cfg) -> list[Unit]:
        main = [Unit(b, c) for b in cfg.backbones for c in cfg.conditions]
        return main + [Unit(b, c + SH_SUFFIX) for b in cfg.backbones for c in cfg.source_holdout_conditions]

    def select(self, names) -> dict:
        """Config overrides running exactly `names` ("B1", "B1@source-holdout", ...)."""
        for name in names:
            split_condition(name)
        return {"conditions": tuple(n for n in names if not n.endswith(SH_SUFFIX)),
                "source_holdout_conditions": tuple(n.removesuffix(SH_SUFFIX) for n in names if n.endswith(SH_SUFFIX))}

    def prepare(self, cfg, root, progress: bool):
        from ..training import distributed_world_size
        from .data import load_or_build

        return load_or_build(cfg, root, progress=progress, world=distributed_world_size())

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict:
        from ..._atomic import atomic_dir
        from ...models import load_backbone
        from ..card import write_json
        from ..training import clear_checkpoints, is_main_process, loss_curve, train
        from .evaluate import evaluate
        from .models import build_loss, build_model, readout_module

        condition, source_holdout = split_condition(unit.condition)
        unit_dir = Path(unit_dir)
        ckpt, seconds, training = unit_dir / CHECKPOINT, {}, None
        if not is_main_process() and (not condition.trained or (ckpt / "modules.json").is_file()):
            return {}  # nothing to train: rank 0 evaluates alone
        if (ckpt / "modules.json").is_file():  # trained earlier; only the evaluation was cut off
            model = _load_saved(ckpt)
            training = json.loads((unit_dir / TRAINING).read_text()) if (unit_dir / TRAINING).is_file() else None
        else:
            model = build_model(load_backbone(unit.backbone), condition, cfg)
            if condition.trained:
                loss = build_loss(model, condition, cfg, data.k, source_holdout)
                dataset = data.dataset(condition.hard_negatives is not None, source_holdout)
                result = train(model, dataset, loss, cfg.train_config(), unit_dir, progress=progress)
                if not is_main_process():
                    return {}  # rank 0 saves and evaluates
                seconds["train"] = round(result.seconds, 2)
                done_here = result.steps - (result.resumed_from or 0)
                training = {"steps": result.steps, "resumed_from": result.resumed_from,
                            "seconds_per_step": round(result.seconds / max(done_here, 1), 4),
                            "curve": loss_curve(result.log_history)}
                readout = readout_module(model)
                if readout is not None and condition.deep_supervision:
                    readout.drop_deep_supervision()  # per-layer heads are training-only
                write_json(unit_dir / TRAINING, training)
            with atomic_dir(ckpt) as tmp:
                if condition.trained:
                    model.save(str(tmp))
                else:  # a frozen backbone: record what it is instead of copying its weights
                    (tmp / "frozen.json").write_text(json.dumps({"backbone": unit.backbone,
                                                                 "readout": condition.readout}))
            clear_checkpoints(unit_dir)
        start = time.perf_counter()
        metrics, details = evaluate(model, data, cfg, source_holdout=source_holdout, progress=progress)
        seconds["eval"] = round(time.perf_counter() - start, 2)
        readout = readout_module(model)
        if readout is not None and readout.mode != "uniform":
            details["layer_weights"] = _layer_weights(readout)
        return {"metrics": metrics, "seconds": seconds, "training": training, "details": details}


def _layer_weights(readout) -> list[float] | None:
    """The learned layer mixture (M1, M3), lowest layer first; None for per-input gates (M2)."""
    import torch

    if readout.mode != "learned":
        return None
    return [round(float(x), 4) for x in torch.softmax(readout.w.detach().float(), 0)]
