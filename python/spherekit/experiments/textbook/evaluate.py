"""Retrieval on the offline set (R@k, MRR@k, nDCG@k through spherekit.evaluation), with each query's own R@k
(the claims' paired bootstrap resamples the queries), and a training callback that evaluates along the way
(the sample-efficiency curves)."""

from __future__ import annotations

import torch

from ...evaluation import metrics
from ...evaluation.encode import encode
from ...evaluation.search import topk_cosine


def embed(model, texts, cfg) -> torch.Tensor:
    """Unit vectors (N, d) of `texts` (the model in eval mode, no gradient)."""
    was_training = model.training
    model.eval()
    try:
        return encode(model, list(texts), batch_size=cfg.eval_batch_size, normalize=True)
    finally:
        model.train(was_training)


def retrieval(model, data, cfg) -> tuple[dict[str, float], list[float]]:
    """(R@k, MRR@k, nDCG@k and R@1 (k = cfg.eval_k) of `model` on the retrieval set `data` (a data.Retrieval),
    each query's R@k: |relevant in the top k| / |relevant|, in the order of data.queries)."""
    q, d = embed(model, data.queries, cfg), embed(model, data.corpus, cfg)
    _, ids = topk_cosine(q, d, cfg.eval_k)
    k = cfg.eval_k
    per_query = metrics.recall_at_k(ids, data.relevant, k, reduction="none")
    return {f"R@{k}": round(float(per_query.mean()), 4),
            f"MRR@{k}": round(metrics.mrr(ids, data.relevant, k), 4),
            f"nDCG@{k}": round(metrics.ndcg_at_k(ids, data.relevant, k), 4),
            "R@1": round(metrics.recall_at_k(ids, data.relevant, 1), 4)}, [round(float(v), 4) for v in per_query]


def retrieval_metrics(model, data, cfg) -> dict[str, float]:
    """The metrics of retrieval(...) alone."""
    return retrieval(model, data, cfg)[0]


def curve_steps(steps: int, points: int) -> list[int]:
    """`points` evaluation steps spread evenly over a training of `steps` steps, ending at the last one."""
    return sorted({max(1, round(steps * (i + 1) / points)) for i in range(points)})


def curve_callback(data, cfg, steps: int, rows_per_step: int):
    """A transformers TrainerCallback recording retrieval metrics at curve_steps(...) into `.curve`:
    [{"step", "examples", <metrics>}], "examples" = training rows seen so far; each point's per-query R@k into
    `.per_query` (one list per point)."""
    from transformers import TrainerCallback

    at = set(curve_steps(steps, cfg.curve_points))

    class RetrievalCurve(TrainerCallback):
        curve: list[dict] = []
        per_query: list[list[float]] = []

        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step in at and model is not None:
                values, per_query = retrieval(model, data, cfg)
                self.curve.append({"step": state.global_step, "examples": state.global_step * rows_per_step,
                                   **values})
                self.per_query.append(per_query)

    cb = RetrievalCurve()
    cb.curve, cb.per_query = [], []
    return cb

