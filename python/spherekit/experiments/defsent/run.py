"""`spherekit reproduce defsent`: the data of a preset and one run of a condition (what the runner calls).

"base" evaluates the untrained starting encoder on every proxy (one run: it does not depend on the seed). A run of
a PST step builds its bank (the original backbone for 1st Training, else the best run of the previous step on the
dev proxy, loaded from its checkpoint), optionally ICA-transforms it, trains a fresh copy of the original backbone
against it (one epoch with the run's seed), evaluates it, and keeps its checkpoint only while it is the best run of
its unit (spec.best_run): the next step builds its bank with that one. The bank, its ICA, its geometry and the
untrained pooler's reverse dictionary do not depend on the seed: they are built once per unit (the banks cached
under <preset>/data/banks, the rest in the unit's cache).
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..config import fingerprint_of
from ..context import CHECKPOINT
from .spec import EXPERIMENT, best_run

ICA_FIELDS = ("ica_whiten", "ica_prescale", "ica_max_iter", "ica_tol", "ica_random_state", "ica_scale", "ica_fit_rows")


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
            d = subsample(d, cfg.max_entries, cfg.max_definitions_per_entry, cfg.data_seed)
            self._cache[key] = hold_out_reverse(d, cfg.n_reverse, cfg.data_seed)
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


def prepare(cfg, root, progress: bool) -> DefSentData:
    from .evaluate import find_sts
    from .heldout import build_heldout

    names = sorted({EXPERIMENT.conditions[c].params.dictionary for c in EXPERIMENT.selected(cfg)} - {None})
    held = build_heldout(cfg.n_heldout_terms, cfg.n_sim_anchors, cfg.n_sim_pairs, cfg.n_probe, cfg.data_seed)
    sts = find_sts(cfg.data_dir)
    stats = {**held.stats(), "dictionaries": names, "sts_sets": sorted(sts) if sts else [],
             "evaluation": "SentEval STS + offline proxies" if sts else "offline proxies (no STS files)"}
    return DefSentData(held, load_records(cfg, names), sts, stats)


def run_unit(ctx) -> dict:
    step = ctx.condition.params
    return _run_base(ctx) if step.step == 0 else _run_step(ctx, step)


def _run_base(ctx) -> dict:
    """The untrained starting encoder on every proxy (the 1st steps' runs record its banks' geometry and the
    untrained pooler's reverse dictionary)."""
    from ...models import load_backbone
    from .evaluate import evaluate_encoder

    with ctx.timed("eval"):
        metrics, best = evaluate_encoder(load_backbone(ctx.backbone), ctx.data.held, ctx.cfg, ctx.data.sts)
    return {"metrics": metrics, "best_pooling": best}


def _run_step(ctx, step) -> dict:
    from ...models import load_backbone
    from .bank import bank_key, build_bank
    from .evaluate import evaluate_encoder, reverse_dictionary
    from .geometry import bank_geometry
    from .train import sentence_vectors, train_step, training_model

    cfg, banks = ctx.cfg, ctx.root / "data" / "banks"
    pooling, kind = cfg.combination(step)
    with ctx.timed("bank"):
        encoder = load_backbone(str(_bank_source(ctx, step)))
        d = ctx.data.dictionary(step.dictionary, encoder.tokenizer, cfg)
        bank = build_bank(encoder, d, kind, cache_dir=banks, batch_size=cfg.encode_batch_size,
                          max_length=cfg.max_seq_length, progress=ctx.progress)
    ica = None
    if step.ica:
        with ctx.timed("ica"):
            key = f"{bank_key(encoder, d, kind, cfg.max_seq_length)}-{fingerprint_of(cfg, ICA_FIELDS)}"
            bank, ica = _ica_bank(bank, cfg, banks / f"ica-{key}.pt")
    rd_texts, rd_targets = [x for x, _ in d.held_out], [e for _, e in d.held_out]

    def untrained() -> dict | None:  # the starting encoder with its untrained pooler against the same bank
        if step.step != 1:
            return None
        return reverse_dictionary(sentence_vectors(training_model(ctx.backbone, pooling), rd_texts), rd_targets, bank)

    shared = ctx.cached("bank", lambda: {"geometry": bank_geometry(bank), "rd_untrained": untrained(),
                                         "dictionary": d.stats(encoder.tokenizer)}, shared=True)
    lr = cfg.lrs[step.step - 1]

    def build_and_train(out_dir):
        model = training_model(ctx.backbone, pooling)
        result = train_step(model, d, bank, lr=lr, batch_size=cfg.batch_size(step.dictionary), seed=ctx.seed,
                            n_pairs=cfg.train_definitions, max_seq_length=cfg.max_seq_length, adam_eps=cfg.adam_eps,
                            max_grad_norm=cfg.max_grad_norm, out_dir=out_dir, progress=ctx.progress,
                            logging_steps=cfg.logging_steps)
        return model, result

    model = ctx.train_or_load(build_and_train)
    with ctx.timed("eval"):
        metrics, best_pooling = evaluate_encoder(model, ctx.data.held, cfg, ctx.data.sts)
        metrics.update(reverse_dictionary(sentence_vectors(model, rd_texts), rd_targets, bank))
    _keep_the_best_checkpoint(ctx, metrics)
    return {"metrics": metrics, "best_pooling": best_pooling, "lr": lr, "combination": [pooling, kind],
            "bank": {**shared["geometry"], "ica": ica, "source": step.previous or "backbone"},
            "rd_untrained": shared["rd_untrained"], "dictionary": shared["dictionary"]}


def _bank_source(ctx, step):
    """The encoder that builds the bank: the backbone, or the checkpoint of the previous step's best run."""
    if step.previous is None:
        return ctx.backbone
    runs = ctx.requirement(step.previous)
    if not runs:
        raise FileNotFoundError(f"{ctx.condition.name} builds its bank with the best run of {step.previous}, which "
                                "has no finished run: run it first")
    best = best_run([r["result"] for r in runs])
    ckpt = next(r["dir"] for r in runs if r["seed"] == best["seed"]) / CHECKPOINT
    if not (ckpt / "modules.json").is_file():
        raise FileNotFoundError(f"{ckpt} is missing: {ctx.condition.name} builds its bank with the best run of "
                                f"{step.previous} (seed {best['seed']} on the dev proxy), which has no saved model (a "
                                f"run restored from a result card keeps its metrics only); re-run {step.previous} "
                                "with --force first")
    return ckpt


def _ica_bank(bank, cfg, path: Path):
    """(the ICA-transformed bank, its record): built once (cached at `path`); a non-converged FastICA is recorded
    in the card and warned about on every use."""
    from .bank import cached_tensors
    from .ica import ICANotConvergedWarning, ica_transform

    def build() -> dict:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, info = ica_transform(bank, whiten=cfg.ica_whiten, prescale=cfg.ica_prescale,
                                      max_iter=cfg.ica_max_iter, tol=cfg.ica_tol, random_state=cfg.ica_random_state,
                                      scale=cfg.ica_scale, fit_rows=cfg.ica_fit_rows)
        info["warnings"] = [str(w.message) for w in caught if issubclass(w.category, ICANotConvergedWarning)]
        return {"bank": out, "info": info}

    built = cached_tensors(path, build)
    for message in built["info"]["warnings"]:
        warnings.warn(message, ICANotConvergedWarning, stacklevel=2)
    return built["bank"], built["info"]


def _keep_the_best_checkpoint(ctx, metrics: dict) -> None:
    """Of this run and its finished siblings, only the best (spec.best_run) keeps its checkpoint."""
    runs = [({"seed": ctx.seed, "metrics": metrics}, ctx.dir)] + [(r["result"], r["dir"]) for r in ctx.siblings()]
    best = best_run([record for record, _ in runs])
    for record, folder in runs:
        if record is not best:
            shutil.rmtree(Path(folder) / CHECKPOINT, ignore_errors=True)
