"""`spherekit reproduce compositional`: the experiment object the runner drives (spherekit.experiments.base).

A unit is (backbone, condition): base, model_a, model_b, or <regime>_<F> for a verifier. A unit runs every seed
of the config; each seed's result is written to <unit>/seed_<s>.json as soon as it is done, so an interrupted
unit resumes at the next seed. Trained models are not kept (the card is about the measurements). A unit's
metrics are the mean and population std over seeds (np.std, ddof=0, as the released code)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from ..base import CardFromReportModule, Unit
from ..card import write_json
from .config import CONDITIONS, PRESETS, preset_config

CITATION = """@misc{ralev2026compositional,
    title = {Training for Compositional Sensitivity Reduces Dense Retrieval Generalization},
    author = {Radoslav Ralev and Aditeya Baral and Iliya Zhechev and Jen Agarwal and Srijith Rajamohan},
    year = {2026},
    eprint = {2604.16351},
    archivePrefix = {arXiv},
}"""


def aggregate(per_seed: list[dict]) -> dict:
    """{"<metric>": mean, "<metric>_std": population std} over seeds of the retrieval means."""
    out = {}
    for key in per_seed[0]["retrieval"]["mean"]:
        values = np.array([s["retrieval"]["mean"][key] for s in per_seed])
        out[key], out[f"{key}_std"] = float(values.mean()), float(values.std())
    return out


def _run_seed(cfg, unit: Unit, data, seed: int, unit_dir: Path) -> dict:
    from . import evaluate, models

    torch.manual_seed(seed)
    encoder = models.load(unit.backbone, cfg)
    cond = unit.condition
    record: dict = {"seed": seed}
    if cond in ("model_a", "model_b"):
        rows = data.train_a if cond == "model_a" else data.train_b
        # A and B: the same steps (the throughput of a wall-clock budget is measured once per backbone)
        steps, sps = models.encoder_steps(encoder, data.train_a, cfg, unit_dir.parent / "encoder_throughput.json")
        record["train"] = {**models.train_encoder(encoder, rows, steps, cfg, seed, unit_dir / "trainer"),
                           "rows": len(rows), "probe_samples_per_s": sps}
    if cond in ("base", "model_a", "model_b"):
        record["retrieval"] = evaluate.retrieval(encoder, data.suite, cfg, untuned=unit.backbone if cond == "base"
                                                 else None)
        record["figure1"] = evaluate.figure1(encoder, data, cfg)
        return record
    regime, name = cond.split("_")
    verifier = models.build(name, cfg, encoder.get_embedding_dimension())
    record["train"] = models.train_verifier_run(encoder, unit.backbone, verifier, regime, name, data.train_b, cfg, seed)
    verifier.eval()
    record["retrieval"] = evaluate.retrieval(encoder, data.suite, cfg, verifier,
                                             untuned=unit.backbone if regime == "frozen" else None)
    record["figure3"] = evaluate.figure3(encoder, verifier, data, cfg)
    record["parameters"] = sum(p.numel() for p in verifier.parameters())
    return record


class CompositionalExperiment(CardFromReportModule):
    name = "compositional"
    title = "Training for Compositional Sensitivity Reduces Dense Retrieval Generalization (Ralev et al. 2026)"
    citation = CITATION
    presets = PRESETS
    conditions = CONDITIONS

    def make_config(self, preset: str):
        return preset_config(preset)

    def units(self, cfg) -> list[Unit]:
        out = []
        for b in cfg.backbones:
            for c in cfg.conditions:
                if "_F" in c and c.split("_")[1] not in cfg.verifiers:
                    continue
                out.append(Unit(b, c))
        return out

    def prepare(self, cfg, root, progress: bool):
        from .data import load_data

        return load_data(cfg, root)

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict:
        from ..training import is_main_process

        if not is_main_process():
            return {}
        unit_dir = Path(unit_dir)
        unit_dir.mkdir(parents=True, exist_ok=True)
        start, per_seed = time.perf_counter(), []
        for seed in cfg.seeds:
            path = unit_dir / f"seed_{seed}.json"
            if path.is_file():
                per_seed.append(json.loads(path.read_text(encoding="utf-8")))
                continue
            record = _run_seed(cfg, unit, data, seed, unit_dir)
            write_json(path, record)
            per_seed.append(record)
        return {"metrics": aggregate(per_seed), "seeds": per_seed, "data": data.stats,
                "seconds": {"run": round(time.perf_counter() - start, 2)}}


EXPERIMENT = CompositionalExperiment()
