"""Shared pieces of the spherekit evaluators: the SentenceEvaluator base, record field access, the test part of a
split, limits, distinct-text encoding and the ROC-AUC of positive vs negative scores."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from ..encode import encode
from ..metrics import roc_auc

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


def split_test(split, suite: str) -> list:
    """split.test of a WordNet split (spherekit.data.splits.make_split); a clear error for suite `suite` if None."""
    if split is None:
        raise ValueError(f"the {suite} suite needs a WordNet split (make_split(...)), got None")
    return list(field(split, "test"))


def check_limit(limit: int | None) -> int | None:
    """`limit` itself if it is a positive integer or None; a ValueError otherwise."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    return limit


def apply_limit(items: list, limit: int | None) -> list:
    """The first `limit` items (deterministic: the same limit keeps the same items)."""
    return list(items) if check_limit(limit) is None else list(items)[:limit]


def separation_auc(positive, negative) -> float:
    """ROC-AUC of `positive` scores (label 1) against `negative` scores (label 0), 1-D tensors."""
    return roc_auc(torch.cat([positive, negative]), torch.cat([torch.ones_like(positive), torch.zeros_like(negative)]))


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

    def encode_distinct(self, model, texts):
        """Encode every distinct text of `texts` once; -> rows(xs), the (len(xs), D) embeddings of the texts xs."""
        distinct = list(dict.fromkeys(texts))
        index = {t: i for i, t in enumerate(distinct)}
        emb = encode(model, distinct, batch_size=self.batch_size, show_progress=self.show_progress)
        return lambda xs: emb[torch.tensor([index[x] for x in xs], dtype=torch.long)]

    def write_plots(self, out_dir) -> list[str]:
        return []
