"""`spherekit reproduce defsent`: the experiment object the runner drives (spherekit.experiments.base).

A unit is (backbone, condition). "base" evaluates the untrained starting encoder on every proxy.
A PST step builds its bank (the original backbone for 1st Training, else the best encoder of the previous step,
whose checkpoint the runner left in <backbone>/<previous>/checkpoint/), optionally ICA-transforms it, trains
`seeds` fresh copies of the original backbone against it (one epoch each), evaluates every copy, and keeps the
best one on the dev proxy as the unit's checkpoint. Seeds finished before an interruption are not redone.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..base import CardFromReportModule, Unit, slug
from .config import CONDITIONS, PRESETS, condition, preset_config, with_prerequisites
from .paper import CITATION


@dataclass
class DefSentData:
    held: object
    records: dict                 # dictionary name -> (entry, definition) records (c may be absent: derived)
    sts: dict | None
    stats: dict = field(default_factory=dict)
    _cache: dict = field(default_factory=dict)

    def dictionary(self, name: str, tokenizer, cfg):
        """Dictionary `name` for this backbone's tokenizer: held-out terms and glosses removed, subsampled,
        reverse-dictionary definitions held out."""
        from .data import from_records, hold_out_reverse, single_token, subsample

        key = (name, tokenizer.name_or_path, len(tokenizer))
        if key not in self._cache:
            drop = dict(drop=self.held.terms, drop_definitions=self.held.definition_keys)
            if name in self.records:
                d = from_records(self.records[name], name, **drop)
            else:  # c: the single-token entries of b
                d = single_token(from_records(self.records["b"], "b", **drop), tokenizer, "c")
            d = subsample(d, cfg.max_entries, cfg.max_definitions_per_entry, cfg.eval_seed)
            self._cache[key] = hold_out_reverse(d, cfg.n_reverse, cfg.eval_seed)
        return self._cache[key]


def load_records(cfg, names) -> dict:
    from .data import find_dictionary_file, offline_records, read_dictionary_file

    out, offline = {}, None
    for name in names:
        path = find_dictionary_file(cfg.data_dir, name) if cfg.data_dir else None
        if path is not None:
            out[name] = read_dictionary_file(path)
        elif name in ("a", "b"):
            offline = offline or offline_records(cfg.mask_headword)
            out[name] = offline["gcide"] + (offline["wordnet"] if name == "a" else [])
    if "c" in names and "c" not in out and "b" not in out:
        out["b"] = load_records(cfg, ["b"])["b"]
    return out


def _aggregate(records: list[dict]) -> dict:
    keys = sorted({k for r in records for k, v in r["metrics"].items() if isinstance(v, (int, float))})
    mean = {k: float(np.mean([r["metrics"][k] for r in records])) for k in keys}
    std = {k: float(np.std([r["metrics"][k] for r in records], ddof=1)) if len(records) > 1 else 0.0 for k in keys}
    return {"mean": mean, "std": std}


def _read(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


class DefSentExperiment(CardFromReportModule):
    name = "defsent"
    title = ("DefSent+: sentence embeddings from definition sentences projected into a frozen space of dictionary "
             "entries (progressive separate training, ICA)")
    citation = CITATION
    presets = PRESETS
    conditions = CONDITIONS
    condition_help = ("base; 1st-<d>, 2nd-<d>, 3rd-<d> (PST steps on dictionary d = a, b, c); 2nd-<d>-ica, "
                      "3rd-<d>-ica (ICA bank); 1st-<d>-<cls|mean>-<amp|ac> (Table 8 grid); 1st-c-<cls|mean>-word "
                      "(DefSent's word-embedding bank)")

    def make_config(self, preset: str):
        return preset_config(preset)

    def units(self, cfg) -> list[Unit]:
        return [Unit(b, c) for b in cfg.backbones for c in with_prerequisites(cfg.conditions)]

    def prepare(self, cfg, root, progress: bool):
        from .evaluate import find_sts
        from .heldout import build_heldout

        names = sorted({condition(c).dictionary for c in with_prerequisites(cfg.conditions)} - {None})
        held = build_heldout(cfg.n_heldout_terms, cfg.n_sim_anchors, cfg.n_sim_pairs, cfg.n_probe, cfg.eval_seed)
        sts = find_sts(cfg.data_dir)
        stats = {**held.stats(), "dictionaries": names, "sts_sets": sorted(sts) if sts else [],
                 "evaluation": "SentEval STS + offline proxies" if sts else "offline proxies (no STS files)"}
        return DefSentData(held, load_records(cfg, names), sts, stats)

    def run_unit(self, cfg, unit: Unit, data, unit_dir, progress: bool) -> dict:
        from ..training import is_main_process

        if not is_main_process():
            return {}
        unit_dir = Path(unit_dir)
        unit_dir.mkdir(parents=True, exist_ok=True)
        cond = condition(unit.condition)
        if cond.step == 0:
            return self._run_base(cfg, unit, data, unit_dir, progress)
        return self._run_step(cfg, unit, cond, data, unit_dir, progress)

    def _run_base(self, cfg, unit, data, unit_dir, progress):
        """The untrained starting encoder on every proxy (its banks are the 1st steps' banks: their units record
        the geometry and the untrained pooler's reverse-dictionary accuracy)."""
        from ...models import load_backbone
        from .evaluate import evaluate_encoder

        t0 = time.perf_counter()
        model = load_backbone(unit.backbone)
        metrics, best = evaluate_encoder(model, data.held, cfg, data.sts)
        return {"metrics": metrics, "best_pooling": best, "seconds": {"eval": round(time.perf_counter() - t0, 2)}}

    def _run_step(self, cfg, unit, cond, data, unit_dir, progress):
        from ..._atomic import atomic_dir
        from ...models import load_backbone
        from ..card import write_json
        from ..training import clear_checkpoints, loss_curve
        from .bank import build_bank
        from .evaluate import evaluate_encoder, reverse_dictionary
        from .geometry import bank_geometry
        from .ica import ICANotConvergedWarning, ica_transform
        from .train import sentence_vectors, train_step, training_model

        seconds = {}
        root = unit_dir.parent.parent
        pooling, kind = cfg.combination(cond)
        t = time.perf_counter()
        source = unit.backbone if cond.previous is None else root / slug(unit.backbone) / cond.previous / "checkpoint"
        if cond.previous is not None and not Path(source).is_dir():
            raise FileNotFoundError(f"{source} is missing: condition {cond.name} builds its bank with the best "
                                    f"encoder of {cond.previous}; run that condition first")
        encoder = load_backbone(str(source))
        d = data.dictionary(cond.dictionary, encoder.tokenizer, cfg)
        bank = build_bank(encoder, d, kind, cache_dir=root / "data" / "banks", batch_size=cfg.encode_batch_size,
                          max_length=cfg.max_seq_length, progress=progress)
        seconds["bank"] = round(time.perf_counter() - t, 2)
        ica_info = None
        if cond.ica:
            t = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                bank, ica_info = ica_transform(bank, whiten=cfg.ica_whiten, prescale=cfg.ica_prescale,
                                               max_iter=cfg.ica_max_iter, tol=cfg.ica_tol,
                                               random_state=cfg.ica_random_state, scale=cfg.ica_scale,
                                               fit_rows=cfg.ica_fit_rows)
            ica_info["warnings"] = [str(w.message) for w in caught if issubclass(w.category, ICANotConvergedWarning)]
            for message in ica_info["warnings"]:  # recorded in the card, and shown
                warnings.warn(message, ICANotConvergedWarning, stacklevel=2)
            seconds["ica"] = round(time.perf_counter() - t, 2)
        geometry = bank_geometry(bank)
        rd_texts, rd_targets = [x for x, _ in d.held_out], [e for _, e in d.held_out]
        untrained = None
        if cond.step == 1:  # the starting encoder with its untrained pooler against the same bank
            untrained = reverse_dictionary(sentence_vectors(training_model(unit.backbone, pooling), rd_texts),
                                           rd_targets, bank)
        lr = cfg.lrs[cond.step - 1]
        best = _read(unit_dir / "best.json") or {}
        records = []
        for i in range(cfg.seeds):
            seed = cfg.seed + i
            path = unit_dir / "seeds" / f"{seed}.json"
            if (rec := _read(path)) is not None:
                records.append(rec)
                continue
            t = time.perf_counter()
            model = training_model(unit.backbone, pooling)
            result = train_step(model, d, bank, lr=lr, batch_size=cfg.batch_size(cond.dictionary), seed=seed,
                                n_pairs=cfg.train_definitions, max_seq_length=cfg.max_seq_length,
                                adam_eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm,
                                out_dir=unit_dir / "train" / str(seed), progress=progress,
                                logging_steps=cfg.logging_steps)
            clear_checkpoints(unit_dir / "train" / str(seed))
            train_s = time.perf_counter() - t
            t = time.perf_counter()
            metrics, best_pooling = evaluate_encoder(model, data.held, cfg, data.sts)
            metrics.update(reverse_dictionary(sentence_vectors(model, rd_texts), rd_targets, bank))
            rec = {"seed": seed, "metrics": metrics, "best_pooling": best_pooling, "steps": result.steps,
                   "loss_curve": loss_curve(result.log_history), "train_s": round(train_s, 2),
                   "eval_s": round(time.perf_counter() - t, 2)}
            if not best or metrics["dev_sim_avg/best"] > best["dev"]:
                with atomic_dir(unit_dir / "checkpoint") as tmp:
                    model.save(str(tmp))
                best = {"seed": seed, "dev": metrics["dev_sim_avg/best"]}
                write_json(unit_dir / "best.json", best)
            write_json(path, rec)
            records.append(rec)
        chosen = next(r for r in records if r["seed"] == best["seed"])
        seconds["train"] = round(sum(r["train_s"] for r in records), 2)
        seconds["eval"] = round(sum(r["eval_s"] for r in records), 2)
        return {"metrics": chosen["metrics"], "best_seed": best["seed"], "best_pooling": chosen["best_pooling"],
                **_aggregate(records), "seeds": records, "lr": lr, "combination": [pooling, kind],
                "bank": {**geometry, "ica": ica_info, "source": str(cond.previous or "backbone")},
                "rd_untrained": untrained, "dictionary": d.stats(encoder.tokenizer), "seconds": seconds}


EXPERIMENT = DefSentExperiment()
