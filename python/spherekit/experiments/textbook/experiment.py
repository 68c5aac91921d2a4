"""`spherekit reproduce textbook`: the experiment object the runner drives (spherekit.experiments.base).

A unit is (backbone, section): each of the chapter's eight sections is resumable on its own. A section loads
the backbone itself (several train fresh copies of it) and returns its metrics and details; trained models are
not kept (the chapter's statements are about the measurements, and the copies would cost gigabytes)."""

from __future__ import annotations

import time
from pathlib import Path

from ..base import CardFromReportModule, Unit
from .chapter import CITATION
from .config import PRESETS, SECTIONS, preset_config


class TextbookExperiment(CardFromReportModule):
    name = "textbook"
    title = "Sentence embeddings: bi-encoders, pooling, contrastive training, hard negatives (textbook 31.1a)"
    citation = CITATION
    presets = PRESETS
    conditions = SECTIONS
    selection_fields = ("backbones", "sections")

    def make_config(self, preset: str):
        return preset_config(preset)

    def units(self, cfg) -> list[Unit]:
        return [Unit(b, s) for b in cfg.backbones for s in cfg.sections]

    def select(self, names) -> dict:
        return {"sections": tuple(names)}

    def prepare(self, cfg, root, progress: bool):
        from .data import load_data

        return load_data(cfg, root)

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict:
        from ..training import is_main_process
        from .sections import section

        if not is_main_process():
            return {}  # the sections train small models in one process; rank 0 does everything
        unit_dir = Path(unit_dir)
        unit_dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        result = section(unit.condition).run(cfg, unit.backbone, data, unit_dir, progress)
        return {**result, "seconds": {"run": round(time.perf_counter() - start, 2)}}


EXPERIMENT = TextbookExperiment()
