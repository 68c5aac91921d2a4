"""The GPU plan of "DefSent+: Improving sentence embeddings of language models by projecting definition sentences
into a quasi-isotropic or isotropic vector space of unlimited dictionary entries": its `paper` preset as work items
(api.gpu_plan), which scripts/gpu_papers.py times for the predicted GPU time of the `paper` card."""

from __future__ import annotations

import math

from ..api.gpu_plan import WorkItem


def gpu_plan(cfg) -> list[WorkItem]:
    """Per trained step and backbone: one epoch over that step's dictionary (Table 1's definition counts) per seed."""
    from . import paper
    from .spec import EXPERIMENT, STEP_OF

    out = []
    for c in EXPERIMENT.selected(cfg):
        step = STEP_OF[c]
        if step.step == 0:
            continue
        definitions = paper.TABLE1[step.dictionary][0]
        batch = cfg.batch_size_a if step.dictionary == "a" else cfg.batch_size_bc
        tokens = min(cfg.max_seq_length, 32)
        out += [WorkItem(b, "train", batch, tokens, len(cfg.seeds) * math.ceil(definitions / batch),
                         f"{c}: one epoch over dictionary {step.dictionary}'s {definitions:,} definitions (Table 1) x "
                         f"{len(cfg.seeds)} seeds; definitions (median 12 tokens) in the prompt, padded to {tokens} "
                         f"tokens")
                for b in cfg.backbones]
    return out
