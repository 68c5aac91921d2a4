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

import torch

from ..api.config import fingerprint_of
from ..api.files import CHECKPOINT
from ..api.learning import ENCODER
from ..api.uncertainty import PER_ITEM
from .noise import STRATA, ceiling
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
        metrics, best, values, items = evaluate_encoder(load_backbone(ctx.backbone), ctx.data.held, ctx.cfg,
                                                        ctx.data.sts)
    return {"metrics": metrics, "best_pooling": best, PER_ITEM: values, STRATA: items}


def _run_step(ctx, step) -> dict:
    from ...models import load_backbone
    from .bank import bank_key, build_bank
    from .evaluate import evaluate_encoder
    from .geometry import bank_geometry
    from .train import train_step

    cfg, banks = ctx.cfg, ctx.root / "data" / "banks"
    pooling, kind = cfg.combination(step)
    pooler = cfg.pooler_of(step)
    defsent = step.word_bank and cfg.defsent_head == "mlm"
    with ctx.timed("bank"):
        encoder = load_backbone(str(_bank_source(ctx, step)))
        d = ctx.data.dictionary(step.dictionary, encoder.tokenizer, cfg)
        # the MLM head comes from the original backbone (every step restarts from it)
        mlm = _mlm_head(ctx, encoder if step.previous is None else load_backbone(ctx.backbone), d) \
            if defsent or pooler == "mlm-dense" else None
        bank = mlm["decoder"] if defsent else build_bank(encoder, d, kind, cache_dir=banks,
                                                         batch_size=cfg.encode_batch_size,
                                                         max_length=cfg.max_seq_length, progress=ctx.progress)
    ica = None
    if step.ica:
        with ctx.timed("ica"):
            key = f"{bank_key(encoder, d, kind, cfg.max_seq_length)}-{fingerprint_of(cfg, ICA_FIELDS)}"
            bank, ica = _ica_bank(bank, cfg, banks / f"ica-{key}.pt")
    head = mlm if defsent else None
    targets = mlm["token_ids"] if defsent else None  # DefSent's classes: the entries' token ids
    rd_texts = [x for x, _ in d.held_out]
    rd_targets = [e if targets is None else targets[e] for _, e in d.held_out]
    dense = mlm["params"] if mlm and not defsent else None

    def fresh():
        return _model(ctx.backbone, pooling, head, dense)

    def untrained() -> dict:  # the starting encoder with its untrained head against the same bank
        model = fresh()
        out = {"start": _start(model, rd_texts, bank)}
        if step.step == 1:
            out["rd_untrained"] = _reverse_dictionary(model, rd_texts, rd_targets, bank, head)[0]
        return out

    shared = ctx.cached("bank", lambda: {"geometry": bank_geometry(bank), "rd_untrained": None, **untrained(),
                                         "dictionary": d.stats(encoder.tokenizer)}, shared=True)
    lr = cfg.lr_of(step)

    def build_and_train(out_dir):
        model = fresh()
        result = train_step(model, d, bank, lr=lr, batch_size=cfg.batch_size(step.dictionary), seed=ctx.seed,
                            n_pairs=cfg.pairs_per_epoch(sum(len(x) for x in d.definitions)),
                            max_seq_length=cfg.max_seq_length, adam_eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm,
                            out_dir=out_dir, progress=ctx.progress, logging_steps=cfg.logging_steps,
                            targets=targets, decoder_bias=mlm["bias"] if defsent else None)
        return model, result

    model = ctx.train_or_load(build_and_train)
    if ENCODER in ctx.training:  # eq. 1 learned only when its loss reached half the uniform softmax's (noise.ceiling)
        ctx.training[ENCODER]["ceiling"] = ceiling(bank.shape[0])
    with ctx.timed("eval"):
        metrics, best_pooling, values, items = evaluate_encoder(model, ctx.data.held, cfg, ctx.data.sts)
        rd, rd_values, rd_items = _reverse_dictionary(model, rd_texts, rd_targets, bank, head)
        metrics.update(rd)
        values.update(rd_values)
        items.update(rd_items)
    _keep_the_best_checkpoint(ctx, metrics)
    out = {"metrics": metrics, "best_pooling": best_pooling, "lr": lr, "combination": [pooling, kind],
           "pooler": "mlm-transform" if defsent else pooler,
           "bank": {**shared["geometry"], "ica": ica, "source": step.previous or "backbone"},
           "rd_untrained": shared["rd_untrained"], "dictionary": shared["dictionary"], "start": shared["start"],
           PER_ITEM: values, STRATA: items}
    if mlm:
        out["mlm_head"] = mlm["record"]
    if defsent:
        out["defsent_head"] = mlm["record"]
    return out


def _model(backbone, pooling: str, head: dict | None, dense: dict | None):
    """The training model: DefSent+'s pooler path (the backbone's pooler, or the MLM head's dense layer), or
    DefSent's MLM transform (train.training_model)."""
    from .train import training_model

    return training_model(backbone, pooling, head=head["params"] if head else None, mlm_dense=dense)


def _reverse_dictionary(model, texts, targets, bank, head):
    """Reverse dictionary of the training path: eq. 1's scores, or DefSent's vocabulary logits."""
    from .evaluate import reverse_dictionary_items
    from .train import sentence_vectors

    vectors = sentence_vectors(model, texts)
    if head:  # the decoder bias as one more coordinate: [h, 1] . [E, c] = h E^T + c
        vectors = torch.cat([vectors, torch.ones(len(vectors), 1)], 1)
        bank = torch.cat([bank, head["bias"][:, None]], 1)
    return reverse_dictionary_items(vectors, targets, bank)


def _start(model, texts, bank) -> dict:
    """The training path's vectors h(s) of the starting model on `texts`: their mean norm, and the std of eq. 1's
    logits h . bank over every bank row: how far from the uniform softmax eq. 1 starts."""
    from .train import sentence_vectors

    h = sentence_vectors(model, texts)
    return {"h_norm": float(h.norm(dim=1).mean()), "logit_std": float((h @ bank.T).std())}


def _mlm_head(ctx, encoder, d) -> dict:
    """The backbone's MLM head (mlm_head): the checkpoint's, else fitted on the dictionary's definitions (cached
    with the banks); with the decoder (the word embeddings) and, for DefSent's classes, the entries' token ids
    (None when an entry is not one token: only dictionary c has them)."""
    from .bank import cached_tensors, data_key, model_key
    from .mlm_head import fit_head, pretrained_head

    cfg = ctx.cfg
    params = pretrained_head(encoder)
    if params is not None:
        built = {"params": params, "record": {"source": "pretrained (the checkpoint's MLM head)"}}
    else:
        texts, _ = d.sample_pairs(cfg.mlm_head_texts, cfg.data_seed)
        path = ctx.root / "data" / "banks" / (f"mlm-head-{model_key(encoder)}-{data_key(d)}-{cfg.mlm_head_texts}-"
                                             f"{cfg.mlm_head_steps}.pt")
        built = cached_tensors(path, lambda: fit_head(encoder, texts, steps=cfg.mlm_head_steps, seed=cfg.data_seed))
    hf = encoder[0].auto_model
    return {**built, "decoder": hf.get_input_embeddings().weight.detach().float().cpu().clone(),
            "bias": built["params"]["bias"], "token_ids": _token_ids(encoder, d)}


def _token_ids(encoder, d) -> list[int] | None:
    from .bank import word_ids

    try:
        return word_ids(encoder, d)
    except ValueError:
        return None


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
                                f"run restored from a result card keeps its metrics only); re-train that run alone "
                                f"first: {ctx.retrain_command(step.previous, best['seed'])}")
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
