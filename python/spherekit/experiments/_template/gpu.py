"""Optional: the toy paper's GPU plan, what its `paper` preset would run on a GPU as work items (api.gpu_plan).

scripts/gpu_papers.py finds this module through the plugin (like bench.py), times each item on a lent GPU and
commits the rows whose total the `paper` card and `reproduce list` state as the predicted GPU time. Without a gpu.py
no time is predicted. Count what dominates (training steps, a frozen backbone's encoding) and say in each basis
where the count comes from."""

from __future__ import annotations

from ..api.gpu_plan import WorkItem


def gpu_plan(cfg) -> list[WorkItem]:
    """Per backbone: the fine-tuned conditions' steps x seeds ("tuned", "tuned-more"); MNRL encodes each row's term
    and gloss. The frozen condition and the evaluation encode a few dozen texts: not counted."""
    trained = [c for c in cfg.conditions if c != "frozen"]
    return [WorkItem(b, "train", 2 * cfg.batch_size, cfg.max_seq_length, len(trained) * len(cfg.seeds) * cfg.steps,
                     f"{len(trained)} trained conditions x {len(cfg.seeds)} seeds x {cfg.steps} steps (section 3) of "
                     f"{cfg.batch_size} (term, gloss) pairs")
            for b in cfg.backbones]
