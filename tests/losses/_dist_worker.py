"""Worker for tests/losses/test_distributed_gloo.py (a module of its own so spawned processes import it).

Each process holds its rank's slice of a fixed full batch, runs every case with
gather_across_devices=True (spherekit's loss and, where one exists, sentence-transformers' own),
calls backward, and saves {case: (loss, grads of its local columns)} to out_dir/rank{r}.pt.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import torch

LOCAL_BATCH = 3
DIM = 8

Q2D, Q2Q, D2Q, D2D = "query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"
# name -> (loss kind, kwargs, number of columns)
CASES = {
    "mnrl-pairs": ("mnrl", dict(), 2),
    "mnrl-2neg": ("mnrl", dict(scale=11.0), 4),
    "mnrl-gte": ("mnrl", dict(directions=(Q2D, Q2Q, D2Q, D2D)), 3),
    "mnrl-q2q-d2d": ("mnrl", dict(directions=(Q2D, Q2Q, D2D)), 2),
    "mnrl-sym-per-direction": ("mnrl", dict(directions=(Q2D, D2Q), partition_mode="per_direction"), 3),
    "mnrl-dot-sym-joint": ("mnrl", dict(directions=(Q2D, D2Q), similarity="dot", scale=1.5), 3),
    "cel-pairs": ("cel", dict(), 2),
    "cel-bce": ("cel", dict(weight=0.7), 4),
    "cel-softmax": ("cel", dict(hard_negative_mode="softmax"), 3),
}


def full_batch(name: str, world: int) -> list[torch.Tensor]:
    n_cols = CASES[name][2]
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    return [torch.randn(world * LOCAL_BATCH, DIM, generator=g) for _ in range(n_cols)]


def make_losses(name: str, gather: bool) -> dict:
    """{"ours": spherekit loss, "st": sentence-transformers loss or absent}."""
    from sentence_transformers import util
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STLoss

    from spherekit.losses import ConceptEquivalenceLoss, MultipleNegativesRankingLoss

    kind, kw, _ = CASES[name]
    kw = dict(kw)
    if kind == "cel":
        return {"ours": ConceptEquivalenceLoss(None, gather_across_devices=gather, **kw)}
    if kw.pop("similarity", "cos") == "dot":
        kw["similarity_fct"] = util.dot_score
    return {
        "ours": MultipleNegativesRankingLoss(None, gather_across_devices=gather, **kw),
        "st": STLoss(None, gather_across_devices=gather, **kw),
    }


def loss_and_grads(loss_fn, cols):
    leaves = [c.clone().requires_grad_(True) for c in cols]
    loss = loss_fn.compute_loss_from_embeddings(leaves, None)
    loss.backward()
    return loss.detach(), [x.grad.clone() for x in leaves]


def worker(rank: int, world: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        results = {}
        for name in CASES:
            local = [c[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH] for c in full_batch(name, world)]
            for tag, loss_fn in make_losses(name, gather=True).items():
                results[(name, tag)] = loss_and_grads(loss_fn, local)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
        # both ranks done before either tears gloo down: an early teardown can abort the other rank
        # ("terminate called without an active exception", seen once in CI)
        dist.barrier()
    finally:
        dist.destroy_process_group()
