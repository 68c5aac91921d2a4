"""The one training path of every experiment: sentence-transformers' SentenceTransformerTrainer with

- AdamW, linear warmup then linear decay to 0 (or a constant rate after warmup),
- layerwise learning-rate decay and a learning-rate multiplier for heads / readouts (spherekit.training.optim),
- several loss views summed per step (MultiViewLoss: one dataset whose columns hold every view; the
  views' losses are returned as a dict, which the trainer sums and logs per view),
- gradient clipping, seeds, bf16 / fp16 autocast on a GPU,
- data parallelism by whatever transformers' Trainer supports (torchrun, accelerate launch); the losses'
  gather_across_devices is switched on when more than one process trains (`distributed_world_size()`),
- resumable: checkpoints every `save_steps` under <out>/trainer/; a rerun continues from the last complete
  one (model, optimizer, scheduler, RNG states and data position restored by the Trainer),
- a probe: the training loss of the dataset's first PROBE_ROWS rows, in fixed batches, eval mode, no gradient,
  scored before and after the training (TrainResult.probe), so that whether the objective fell is read without
  the batch-to-batch noise of the logged curve (spherekit.experiments.api.learning.judge_training).

    views = {"syn": (ConceptEquivalenceLoss(model), 2), "t2d": (ConceptEquivalenceLoss(model), 3)}
    result = train(model, dataset, MultiViewLoss(model, views), TrainConfig(steps=200, batch_size=16, lr=5e-5), out)
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import torch
from torch import nn

from .optim import param_groups

PROBE_ROWS = 64  # rows of a training's probe: scored before and after the training
SCHEDULES = ("linear", "constant")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
TRAINER_DIR = "trainer"
PROBE_FILE = "probe_before.json"  # the probe's loss before the first update, kept for a resumed run


@dataclass(frozen=True)
class TrainConfig:
    """Training settings shared by every experiment (each experiment documents its own values).

    steps: optimizer steps.  batch_size: rows per device per step.  lr: base learning rate (the top
    Transformer layer's).  warmup_steps: linear warmup from 0.  schedule: "linear" (decay to 0 at `steps`)
    or "constant" (after warmup).  layer_decay: per-layer LR factor (1.0 = none).  head_multiplier: LR
    factor of every module after the Transformer.  weight_decay: AdamW's (none on biases / norms).
    adam_eps: AdamW epsilon.  max_grad_norm: gradient clipping (0 = off).  seed: model init, data order,
    dropout.  precision: "auto" (bf16 on a GPU that has it, else fp16 on a GPU, fp32 on a CPU), "fp32",
    "bf16", "fp16".  save_steps: checkpoint interval for resuming (0 = only at the end).
    logging_steps: loss logging interval.
    """

    steps: int
    batch_size: int
    lr: float
    warmup_steps: int = 0
    schedule: str = "linear"
    layer_decay: float = 1.0
    head_multiplier: float = 1.0
    weight_decay: float = 0.01
    adam_eps: float = 1e-8
    max_grad_norm: float = 1.0
    seed: int = 0
    precision: str = "auto"
    save_steps: int = 0
    logging_steps: int = 10

    def __post_init__(self):
        for name in ("steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.warmup_steps < 0 or self.save_steps < 0 or self.logging_steps < 1:
            raise ValueError("warmup_steps and save_steps must be >= 0 and logging_steps >= 1")


def distributed_world_size() -> int:
    """Number of training processes (torchrun / accelerate set WORLD_SIZE); 1 when not distributed."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """True in a single process and on rank 0 of a torchrun / accelerate launch (the one that writes files)."""
    return os.environ.get("RANK", "0") == "0"


DISTRIBUTED_TIMEOUT_ENV = "SPHEREKIT_DISTRIBUTED_TIMEOUT_S"
DEFAULT_DISTRIBUTED_TIMEOUT_S = 6 * 3600


def distributed_timeout() -> timedelta:
    """How long a rank of a torchrun / accelerate launch waits at a barrier or collective before it fails:
    $SPHEREKIT_DISTRIBUTED_TIMEOUT_S seconds, 6 hours by default. The other ranks wait while rank 0 evaluates
    alone, and a paper-scale evaluation (a 220k-entry bank encoded on a CPU, say) can outlast torch's and
    transformers' 30-minute default."""
    raw = os.environ.get(DISTRIBUTED_TIMEOUT_ENV)
    if raw is None:
        return timedelta(seconds=DEFAULT_DISTRIBUTED_TIMEOUT_S)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{DISTRIBUTED_TIMEOUT_ENV} must be a finite number of seconds > 0, got {raw!r}")
    return timedelta(seconds=seconds)


def barrier() -> None:
    """Wait for every training process (a no-op in a single process). Initialises accelerate's process state,
    which transformers' Trainer then reuses (gloo on a CPU, NCCL on GPUs), with `distributed_timeout()`."""
    if distributed_world_size() > 1:
        from accelerate import PartialState

        cuda = torch.cuda.is_available()
        PartialState(cpu=not cuda, backend=None if cuda else "gloo",
                     timeout=distributed_timeout()).wait_for_everyone()


def shutdown_distributed() -> None:
    """End a torchrun / accelerate launch cleanly: every rank waits for the others (rank 0 may still be
    evaluating), then leaves the process group. A rank that exits with its gloo / NCCL group still open can abort
    at interpreter exit ("terminate called without an active exception"), and torchrun then fails the whole
    launch. Training already took DDP's wrapper out of the loss (put_model_back_in_loss), so the group's last
    reference is the registry's. A no-op in a single process."""
    if distributed_world_size() <= 1 or not torch.distributed.is_initialized():
        return
    gc.collect()  # a trainer left in a reference cycle frees its DDP wrapper now, while the group is registered
    barrier()
    torch.distributed.destroy_process_group()


def resolve_precision(precision: str) -> str:
    """"fp32" | "bf16" | "fp16" for this machine ("auto": bf16 on a GPU that supports it, fp16 on other GPUs,
    fp32 on a CPU). Half precision without a GPU is an error."""
    cuda = torch.cuda.is_available()
    if precision == "auto":
        if not cuda:
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision in ("bf16", "fp16") and not cuda:
        raise ValueError(f"precision {precision!r} needs a CUDA GPU; use 'fp32' or 'auto' on a CPU")
    return precision


class MultiViewLoss(nn.Module):
    """Several losses summed per step, each on its own group of dataset columns:

        L = sum_v L_v(columns of view v)          (weights live inside each view's loss)

    `views` maps a view name to (loss, number of columns); the dataset's columns are the views' columns in
    this order. A dataset "label" column (the collator's labels) goes to the view named `labels_to` alone (the
    others get None); without `labels_to` a batch with labels is an error. forward returns {view name: loss};
    SentenceTransformerTrainer sums the dict and logs every
    view's running mean next to the total. A view loss may be a gradient-cached (GradCache) loss: its
    backward hook is reached through the sum.
    """

    def __init__(self, model, views: dict[str, tuple[nn.Module, int]], labels_to: str | None = None):
        super().__init__()
        if not views:
            raise ValueError("views is empty")
        if labels_to is not None and labels_to not in views:
            raise ValueError(f"labels_to must name a view ({', '.join(views)}), got {labels_to!r}")
        for name, spec in views.items():
            if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], int) and spec[1] >= 1):
                raise ValueError(f"views[{name!r}] must be (loss module, number of columns >= 1), got {spec!r}")
        self.model = model
        self.view_losses = nn.ModuleDict({name: loss for name, (loss, _) in views.items()})
        self.view_columns = {name: n for name, (_, n) in views.items()}
        self.labels_to = labels_to

    @property
    def n_columns(self) -> int:
        return sum(self.view_columns.values())

    def forward(self, sentence_features, labels=None) -> dict[str, torch.Tensor]:
        features = list(sentence_features)
        if len(features) != self.n_columns:
            raise ValueError(f"MultiViewLoss expects {self.n_columns} columns "
                             f"({self.view_columns}), got {len(features)}")
        if labels is not None and self.labels_to is None:
            raise ValueError("MultiViewLoss got a label column but no view takes it (set labels_to)")
        out, start = {}, 0
        for name, n in self.view_columns.items():
            out[name] = self.view_losses[name](features[start:start + n], labels if name == self.labels_to else None)
            start += n
        return out

    def get_config_dict(self) -> dict:
        return {name: {"columns": n, "loss": type(self.view_losses[name]).__name__,
                       **({"labels": True} if name == self.labels_to else {}),
                       **getattr(self.view_losses[name], "get_config_dict", dict)()}
                for name, n in self.view_columns.items()}


def _trainer_class():
    from sentence_transformers import SentenceTransformerTrainer

    class SpherekitTrainer(SentenceTransformerTrainer):
        """SentenceTransformerTrainer whose AdamW has layerwise-decayed learning rates (spherekit.training.optim)."""

        def __init__(self, *args, layer_decay: float = 1.0, head_multiplier: float = 1.0, **kwargs):
            self.layer_decay, self.head_multiplier = layer_decay, head_multiplier
            super().__init__(*args, **kwargs)

        def create_optimizer(self, model=None):
            if self.optimizer is None:
                opt_model = self.model if model is None else model
                decay = set(self.get_decay_parameter_names(opt_model))
                names = {n for n, _ in opt_model.named_parameters()}
                groups = param_groups(opt_model, self.args.learning_rate, layer_decay=self.layer_decay,
                                      head_multiplier=self.head_multiplier, weight_decay=self.args.weight_decay,
                                      no_decay=names - decay)
                self.optimizer = torch.optim.AdamW(
                    [{k: v for k, v in g.items() if k != "names"} for g in groups],
                    lr=self.args.learning_rate, betas=(self.args.adam_beta1, self.args.adam_beta2),
                    eps=self.args.adam_epsilon)
            return self.optimizer

    return SpherekitTrainer


def last_complete_checkpoint(folder) -> Path | None:
    """The newest checkpoint-N under `folder` that holds a trainer_state.json (written last by the Trainer);
    incomplete newer ones (an interrupted save) are deleted by the main process."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    ckpts = sorted((p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]), reverse=True)
    for ckpt in ckpts:
        if (ckpt / "trainer_state.json").is_file():
            return ckpt
        if is_main_process():
            shutil.rmtree(ckpt, ignore_errors=True)
    return None


@dataclass
class TrainResult:
    steps: int
    seconds: float
    resumed_from: int | None
    log_history: list[dict] = field(default_factory=list)
    probe: tuple[float, float] | None = None  # the probe's loss before and after (None: a run resumed without one)


_REPORT_TO: list[tuple[str, ...]] = [()]  # the integrations every training reports to (runner.reproduce's report_to)
# transformers' report_to names whose pip distribution differs from the name, or that need more than one package or
# a setting besides (what to install is all this says: whether one is usable is transformers' own is_*_available)
_REPORT_TO_NEEDS = {
    "azure_ml": "pip install azureml-core (and no mlflow: transformers then reports to mlflow instead)",
    "comet_ml": "pip install comet_ml (at least the version transformers asks for) and set COMET_API_KEY",
    "dagshub": "pip install dagshub mlflow",
    "flyte": "pip install flytekit flytekitplugins-deck-standard",
    "kubeflow": "set KUBEFLOW_TRAINER_SERVER_URL (and not DISABLE_KUBEFLOW_INTEGRATION=TRUE)",
    "mlflow": "pip install mlflow (and not DISABLE_MLFLOW_INTEGRATION=TRUE)",
    "tensorboard": "pip install tensorboard",
}


def check_report_to(report_to) -> tuple[str, ...]:
    """`report_to` as a tuple, after checking that transformers knows every name and can report to it here, so that
    a run stops before any data work rather than when its first training starts (transformers then raises deep in
    the Trainer). "all" / "none" (transformers' own) stand alone. Raises ValueError, one line: an unknown name lists
    the valid ones; a missing integration names what to install."""
    from transformers.integrations import integration_utils as integrations

    names = tuple(report_to or ())
    valid = sorted(integrations.INTEGRATION_TO_CALLBACK)
    if set(names) & {"all", "none"}:
        if len(names) > 1:
            raise ValueError(f"report_to: 'all' and 'none' stand alone, got {', '.join(names)}")
        return names
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ValueError(f"report_to: unknown integration {', '.join(map(repr, unknown))}; valid: "
                         f"{', '.join(valid)}, all, none")
    available = set(integrations.get_available_reporting_integrations())
    if integrations.is_flyte_deck_standard_available():  # usable, but not in transformers' list of the available
        available.add("flyte")
    for name in names:
        if name not in available:
            raise ValueError(f"report_to: {name} is not available here: "
                             f"{_REPORT_TO_NEEDS.get(name, f'pip install {name}')}")
    return names


@contextlib.contextmanager
def reporting(report_to) -> None:
    """Within the block every training reports to `report_to` (transformers' report_to names: "tensorboard",
    "wandb", ...; check_report_to checks them first; TensorBoard's logs under <out_dir>/logs/)."""
    _REPORT_TO.append(tuple(report_to or ()))
    try:
        yield
    finally:
        _REPORT_TO.pop()


@contextlib.contextmanager
def _tensorboard_dir(folder: Path):
    """TensorBoard's log folder (transformers reads TENSORBOARD_LOGGING_DIR) for the block, unless the user set it."""
    if "TENSORBOARD_LOGGING_DIR" in os.environ:
        yield
        return
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(folder)
    try:
        yield
    finally:
        os.environ.pop("TENSORBOARD_LOGGING_DIR", None)


def training_arguments(cfg: TrainConfig, output_dir, *, progress: bool = True, batch_sampler=None):
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    precision = resolve_precision(cfg.precision)
    world = distributed_world_size()
    save = cfg.save_steps if cfg.save_steps else cfg.steps
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), max_steps=cfg.steps, per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.lr, warmup_steps=cfg.warmup_steps,
        lr_scheduler_type="linear" if cfg.schedule == "linear" else "constant_with_warmup",
        weight_decay=cfg.weight_decay, adam_epsilon=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm,
        seed=cfg.seed, data_seed=cfg.seed, bf16=precision == "bf16", fp16=precision == "fp16",
        logging_steps=cfg.logging_steps, save_strategy="steps", save_steps=save, save_total_limit=1,
        report_to=list(_REPORT_TO[-1]), disable_tqdm=not progress, dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        ddp_backend="gloo" if world > 1 and not torch.cuda.is_available() else None,
        ddp_timeout=round(distributed_timeout().total_seconds()),
        batch_sampler=batch_sampler or BatchSamplers.BATCH_SAMPLER,
    )


def train(model, train_dataset, loss, cfg: TrainConfig, out_dir, *, callbacks: Sequence = (), progress: bool = True,
          batch_sampler=None) -> TrainResult:
    """Train `model` on `train_dataset` with `loss` for cfg.steps steps; checkpoints in <out_dir>/trainer/.

    Resumes from the last complete checkpoint there (the same seed and data then give the same weights as an
    uninterrupted run). The model is trained in place; nothing is saved at the end (the caller saves it). After a
    Ctrl-C (spherekit.training.interrupt) it saves a checkpoint at the end of the current step and raises
    Interrupted.
    """
    from transformers import set_seed

    from .interrupt import check, trainer_callback

    out_dir = Path(out_dir)
    trainer_dir = out_dir / TRAINER_DIR
    resume = last_complete_checkpoint(trainer_dir)
    set_seed(cfg.seed)
    args = training_arguments(cfg, trainer_dir, progress=progress, batch_sampler=batch_sampler)
    # TensorBoard's folder: <out_dir>/logs/, kept (<out_dir>/trainer/ is removed once the model is saved); its
    # callback reads the folder when the trainer is built, so the block holds the building too
    with _tensorboard_dir(out_dir / "logs"):
        trainer = _trainer_class()(model=model, args=args, train_dataset=train_dataset, loss=loss,
                                   callbacks=[*callbacks, trainer_callback()], layer_decay=cfg.layer_decay,
                                   head_multiplier=cfg.head_multiplier)
        start = time.perf_counter()
        rows = trainer.train_dataset if trainer.train_dataset is not None else train_dataset  # as the trainer reads
        before = _probe_before(trainer, rows, cfg.batch_size, out_dir / PROBE_FILE, resume is not None)
        try:
            trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        finally:
            put_model_back_in_loss(loss, model)
    check()
    after = probe_loss(trainer, rows, cfg.batch_size) if before is not None else None
    seconds = time.perf_counter() - start
    history = [dict(row) for row in trainer.state.log_history]
    resumed = int(resume.name.split("-")[-1]) if resume else None
    probe = (round(before, 5), round(after, 5)) if after is not None else None
    return TrainResult(trainer.state.global_step, seconds, resumed, history, probe)


def probe_loss(trainer, dataset, batch_size: int) -> float | None:
    """The mean training loss of the first PROBE_ROWS rows of `dataset`, in fixed batches of batch_size, through the
    trainer's collator and loss as a training step sees them (a loss's views summed), in eval mode without
    gradient: the same rows scored before and after a training (module docstring). None for an empty dataset, a
    loss per dataset (a dict) or a loss that cannot be scored in eval mode (a ValueError: it needs outputs a model
    writes only in training, e.g. DeepSupervisionLoss's per-layer embeddings); the training itself then shows any
    real error in its data."""
    loss_fn, n = trainer.loss, min(PROBE_ROWS, len(dataset))
    if n == 0 or isinstance(loss_fn, dict):
        return None
    model = trainer.model
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        with torch.no_grad():
            for start in range(0, n, batch_size):
                rows = [dataset[i] for i in range(start, min(start + batch_size, n))]
                inputs = trainer.data_collator(rows)
                inputs.pop("dataset_name", None)
                inputs = {k: v.to(model.device) if torch.is_tensor(v) else v for k, v in inputs.items()}
                try:
                    value = loss_fn(*trainer.collect_features(inputs))
                except ValueError:
                    return None
                if isinstance(value, dict):
                    value = torch.stack(list(value.values())).sum()
                total += float(value) * len(rows)
    finally:
        model.train(was_training)
    return total / n


def _probe_before(trainer, dataset, batch_size: int, path: Path, resuming: bool) -> float | None:
    """The probe before any update: scored and written to `path` on a fresh start, read back on a resume (None when
    the interrupted attempt kept none)."""
    import json

    if resuming:
        try:
            return float(json.loads(path.read_text(encoding="utf-8"))["before"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    before = probe_loss(trainer, dataset, batch_size)
    if before is not None and is_main_process():
        from .._atomic import atomic_write_json

        atomic_write_json(path, {"before": before, "rows": min(PROBE_ROWS, len(dataset))})
    return before


def put_model_back_in_loss(loss: nn.Module, model: nn.Module) -> None:
    """Undo what sentence-transformers' Trainer does to a loss: it stores its DDP (or compile) wrapper of `model`
    in every submodule attribute named `model`; put `model` itself back, so the wrapper dies with the trainer.

    Under torchrun, a wrapper that outlives training keeps DDP's gradient reducer alive, and the reducer holds the
    process group: if it is freed after `torch.distributed.destroy_process_group()` (say when the caller's frame
    ends), the gloo process group is destroyed from the reducer's destructor with the GIL held, while gloo's
    worker thread may need the GIL to free a finished collective's tensors, and the rank hangs. Freed while the
    group is still registered, the reducer drops a reference only; the registry's last one is dropped by
    destroy_process_group, which releases the GIL."""
    for name, child in list(loss.named_children()):
        if name == "model" and child is not model and model in (getattr(child, "module", None),
                                                                 getattr(child, "_orig_mod", None)):
            setattr(loss, name, model)
        elif child is not model:
            put_model_back_in_loss(child, model)


def clear_checkpoints(out_dir) -> None:
    """Delete the trainer checkpoints of a finished training (the final model is saved elsewhere) and its probe's
    first score."""
    shutil.rmtree(Path(out_dir) / TRAINER_DIR, ignore_errors=True)
    (Path(out_dir) / PROBE_FILE).unlink(missing_ok=True)


def plot_loss(curve: dict, path, title: str) -> Path:
    """A PNG of a training's loss curve (loss_curve's dict: the total and every view's loss against the step)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..evaluation.plots import save_figure

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for key, values in curve.items():
        if key != "step" and any(v is not None for v in values):
            ax.plot(curve["step"], values, label=key, linewidth=2 if key == "loss" else 1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path, dpi=100, bbox_inches=None)


def loss_curve(log_history: list[dict]) -> dict[str, list]:
    """{"step": [...], "loss": [...], "<view>": [...]} from a Trainer's log history (training rows only)."""
    rows = [r for r in log_history if "loss" in r and "step" in r]
    keys = sorted({k for r in rows for k in r if k not in ("step", "epoch", "learning_rate", "grad_norm")})
    return {"step": [r["step"] for r in rows], **{k: [r.get(k) for r in rows] for k in keys}}

