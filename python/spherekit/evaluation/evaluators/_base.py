"""Shared pieces of the spherekit evaluators: the SentenceEvaluator base, record field access, limits."""

from __future__ import annotations

import json
import logging
from pathlib import Path

try:  # sentence-transformers >= 6
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
except ImportError:  # pragma: no cover - older sentence-transformers
    from sentence_transformers.evaluation import SentenceEvaluator

logger = logging.getLogger(__name__)


def field(record, name: str):
    """record[name] for dicts, record.name for objects (dataclasses, namedtuples); a clear error if absent."""
    if isinstance(record, dict):
        if name in record:
            return record[name]
    elif hasattr(record, name):
        return getattr(record, name)
    raise KeyError(f"record has no field {name!r}: {record!r:.200}")


def apply_limit(items: list, limit: int | None) -> list:
    """The first `limit` items (deterministic: the same limit keeps the same items)."""
    if limit is None:
        return list(items)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    return list(items)[:limit]


class SpherekitEvaluator(SentenceEvaluator):
    """SentenceEvaluator whose __call__ returns plain-word metric names (no name prefix) and which can
    write its metrics to output_path/<name>_results.json and PNG plots via write_plots(out_dir)."""

    def __init__(self, name: str = "", batch_size: int = 64, show_progress: bool = False):
        super().__init__()
        self.name = name
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.last_details: dict = {}

    @property
    def config(self) -> dict:
        return self.get_config_dict()

    def compute_metrics(self, model) -> dict[str, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, model, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        metrics = {k: float(v) for k, v in self.compute_metrics(model).items()}
        if self.primary_metric is None and metrics:
            self.primary_metric = next(iter(metrics))
        logger.info("%s: %s", self.name or type(self).__name__, metrics)
        if output_path is not None:
            path = Path(output_path)
            path.mkdir(parents=True, exist_ok=True)
            stem = f"{self.name or type(self).__name__}_results"
            suffix = "" if epoch == -1 else f"_epoch{epoch}_steps{steps}"
            (path / f"{stem}{suffix}.json").write_text(json.dumps(metrics, indent=2))
        if hasattr(model, "model_card_data"):
            try:
                self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
            except Exception:  # the model card is a convenience, never a failure
                logger.debug("could not store metrics in the model card", exc_info=True)
        return metrics

    def write_plots(self, out_dir) -> list[str]:
        return []
