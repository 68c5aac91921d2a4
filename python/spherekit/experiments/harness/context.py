"""What a paper's run_unit(ctx) gets: one run (backbone, condition, seed) of a preset, and the core's help with what
every paper repeats (training or loading the model, caching, timing, reading the runs a condition requires).

    def run_unit(ctx):
        model = ctx.train_or_load(lambda out: train_my_model(ctx.cfg, ctx.backbone, ctx.seed, out))
        with ctx.timed("eval"):
            metrics = evaluate(model, ctx.data, ctx.cfg)
        return {"metrics": metrics, "details": {...}}

The runner adds "seed", "seconds" (every ctx.timed stage) and "training" ({name: record} of every training the
unit did: "encoder" from train_or_load, the others from record_training; learning.trainings reads them) to the
returned dict and writes it as the run's metrics.json. Per-item values go under the result's "per_item". Under
torchrun, rank 0 alone runs a condition that is not `distributed`; for a distributed one every rank runs run_unit,
train_or_load trains on every rank and then ends the run on the others (they never evaluate or write).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from ..api.files import CHECKPOINT
from ..api.learning import ENCODER
from ..api.plugin import Condition

TRAINING, CACHE, LOSS_PLOT = "training.json", "cache", "loss.png"


class RankDone(Exception):
    """Raised on ranks other than 0 once they have done their share of a distributed run (the runner ends it)."""


class UnitContext:
    """One run of a preset: `cfg` (the preset's config), `backbone` (name or path), `condition` (plugin.Condition;
    its name is condition.name), `seed` (None for a condition that is not seeded), `data` (what the paper's prepare
    returned), `dir` (the run's own folder, created), `unit_dir` (the folder of the condition on this backbone,
    shared by its seeds), `backbone_dir` (the folder of this backbone, shared by its conditions), `root` (the
    preset's output folder), `progress` (show progress bars), `is_main` (rank 0 or a single process)."""

    def __init__(self, *, experiment, cfg, backbone: str, condition: Condition, seed: int, data, run_dir: Path,
                 root: Path, fingerprint: str, unit_fingerprint: str, progress: bool, is_main: bool,
                 requirements: dict, siblings=lambda: [], log=None):
        self.experiment, self.cfg, self.backbone, self.condition, self.seed = experiment, cfg, backbone, condition, seed
        self.data, self.dir, self.root = data, Path(run_dir), Path(root)
        self.unit_dir, self.backbone_dir = self.dir.parent, self.dir.parent.parent
        self.fingerprint, self.unit_fingerprint = fingerprint, unit_fingerprint
        self.progress, self.is_main = progress, is_main
        self.seconds: dict[str, float] = {}
        self.training: dict[str, dict] = {}
        self._requirements, self._siblings = requirements, siblings
        self._log = log or (lambda msg: None)
        self.dir.mkdir(parents=True, exist_ok=True)

    def log(self, message: str) -> None:
        self._log(message)

    @contextlib.contextmanager
    def timed(self, stage: str):
        """Time the block as `stage` (added to an earlier time of the same stage) in the run's "seconds"."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 2)

    def cached(self, name: str, build: Callable[[], object], *, shared: bool = False, key: str = ""):
        """JSON data built once: read from the cache when it was built for this run (or, with shared=True, for this
        condition on this backbone, whatever the seed: build must not depend on the seed), else build() and save.
        key: anything else the data depends on."""
        from ..api.files import cached_json

        folder = (self.unit_dir if shared else self.dir) / CACHE
        stamp = f"{self.unit_fingerprint if shared else self.fingerprint}|{key}"
        return cached_json(folder / f"{name}.json", stamp, build)

    def requirement(self, condition: str) -> list[dict]:
        """The finished runs of a condition this one requires (same backbone), each {"seed", "dir", "result"}:
        `dir` holds its checkpoint/ when it saved a model."""
        if condition not in self._requirements:
            raise KeyError(f"{self.condition.name} does not declare {condition!r} in its requires "
                           f"({', '.join(self.condition.requires) or 'none'})")
        return self._requirements[condition]

    def retrain_command(self, condition: str, seed: int | None) -> str:
        """The command that re-trains one finished run of `condition` on this backbone (and so saves its model
        again, e.g. after `restore`, which keeps metrics only), leaving every other run as it is."""
        from .runner import DEFAULT_OUT

        out = self.root.parent.parent
        words = ["spherekit", "reproduce", self.experiment.name, "--preset", self.root.name, "--backbone",
                 str(self.backbone), "--conditions", condition, *([] if seed is None else ["--seed", str(seed)]),
                 "--force", *([] if out == Path(DEFAULT_OUT) else ["--out", str(out)])]
        return shlex.join(words)  # quoted where a path has spaces: it pastes into a shell as printed

    def record_training(self, name: str, record: dict) -> None:
        """Keep the record of a training the unit did besides its encoder's (a verifier, a bank, a section's
        fine-tuning): "steps", "curve" {"step", "loss"}, and where kept "probe", "start" / "final", "ceiling"
        (spherekit.experiments.api.learning). It goes into the run's "training" under `name`."""
        if not isinstance(record, dict):
            raise TypeError(f"record must be a dict, got {type(record).__name__}")
        if name in self.training:
            raise ValueError(f"training {name!r} recorded twice in {self.condition.name} seed {self.seed}")
        self.training[name] = record

    def siblings(self) -> list[dict]:
        """The finished runs of this condition on this backbone with other seeds, each {"seed", "dir", "result"}
        (e.g. to keep only the best seed's checkpoint)."""
        return self._siblings()

    def train_or_load(self, build_and_train: Callable[[Path], tuple]):
        """The run's trained model (a SentenceTransformer).

        When an earlier attempt saved it (<run>/checkpoint/), it is loaded with its training record; else
        build_and_train(run_dir) builds and trains it and returns (model, training.TrainResult): it trains with
        training.train(..., out_dir=run_dir), which resumes from the last trainer checkpoint there. The model is
        then saved (atomically), its record (steps, s/step, loss curve, probe) written with a plot of the curve
        (<run>/loss.png), the trainer checkpoints removed.
        On ranks other than 0 the run ends here (RankDone)."""
        from ..._atomic import atomic_dir
        from ...training.trainer import clear_checkpoints, loss_curve, plot_loss
        from ..api.files import write_json

        ckpt = self.dir / CHECKPOINT
        if (ckpt / "modules.json").is_file():
            if not self.is_main:
                raise RankDone
            from sentence_transformers import SentenceTransformer

            record = self.dir / TRAINING
            if record.is_file():
                self.training[ENCODER] = json.loads(record.read_text(encoding="utf-8"))
            return SentenceTransformer(str(ckpt), trust_remote_code=True, local_files_only=True)
        model, result = build_and_train(self.dir)
        if not self.is_main:
            raise RankDone
        done_here = result.steps - (result.resumed_from or 0)
        self.seconds["train"] = round(result.seconds, 2)
        training = {"steps": result.steps, "resumed_from": result.resumed_from,
                    "seconds_per_step": round(result.seconds / max(done_here, 1), 4),
                    "curve": loss_curve(result.log_history)}
        if result.probe is not None:  # the loss of the first rows before and after (learning.judge_training)
            training["probe"] = list(result.probe)
        self.training[ENCODER] = training
        write_json(self.dir / TRAINING, training)
        if training["curve"]["step"]:
            plot_loss(training["curve"], self.dir / LOSS_PLOT, f"{self.backbone} {self.condition.name} "
                      f"(seed {self.seed}): {result.steps} steps")
        with atomic_dir(ckpt) as tmp:
            model.save(str(tmp))
        clear_checkpoints(self.dir)
        return model


__all__ = ["CHECKPOINT", "RankDone", "UnitContext"]
