"""Train the tiny backbone with spherekit's training path, in one process or under torchrun (2 gloo processes),
and write the logged loss curve (rank 0) to <out>/curve.json. Used by test_distributed_training.py:

    python tests/experiments/_dist_train.py BACKBONE OUT GLOBAL_BATCH
    python -m torch.distributed.run --nproc_per_node 2 tests/experiments/_dist_train.py BACKBONE OUT GLOBAL_BATCH
"""

import json
import os
import sys
from pathlib import Path

import torch

ANCHORS = ["dirty cup", "clean plate", "mammal", "death place", "revitalize", "cup", "a cup", "a plate",
           "warm milk", "cold cup", "sad joy", "the car"]
POSITIVES = ["filthy cup", "free of dirt plate", "a warm blooded vertebrate", "where someone drew last breath",
             "give new life", "a small open container", "the cup", "the plate", "milk that is warm",
             "a cup that is cold", "joy and sad", "a car"]
STEPS = 4


def main(backbone: str, out: str, global_batch: int) -> None:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer

    from spherekit.training.trainer import (MultiViewLoss, TrainConfig, distributed_world_size, loss_curve,
                                               shutdown_distributed, train)
    from spherekit.losses import ConceptEquivalenceLoss

    torch.set_num_threads(1)
    world = distributed_world_size()
    model = SentenceTransformer(backbone, device="cpu")
    n = STEPS * global_batch
    data = Dataset.from_dict({"a": (ANCHORS * n)[:n], "p": (POSITIVES * n)[:n], "x": (POSITIVES[::-1] * n)[:n],
                              "y": (ANCHORS[::-1] * n)[:n]})
    gather = world > 1
    loss = MultiViewLoss(model, {"one": (ConceptEquivalenceLoss(model, gather_across_devices=gather), 2),
                                 "two": (ConceptEquivalenceLoss(model, weight=0.7, gather_across_devices=gather), 2)})
    cfg = TrainConfig(steps=STEPS, batch_size=global_batch // world, lr=2e-3, warmup_steps=0, logging_steps=1,
                      layer_decay=0.9, head_multiplier=5.0, seed=7)
    result = train(model, data, loss, cfg, Path(out) / "run", progress=False)
    # DDP's wrapper must not outlive training inside the loss: its reducer would free the process group after
    # shutdown_distributed, with the GIL held (a hang seen once in CI-like load); see put_model_back_in_loss
    wrapped = [name for name, m in loss.named_modules() if isinstance(m, torch.nn.parallel.DistributedDataParallel)]
    assert not wrapped, f"DDP wrapper left in the loss at {wrapped}"
    if int(os.environ.get("RANK", "0")) == 0:
        (Path(out) / "curve.json").write_text(json.dumps(loss_curve(result.log_history)))
    shutdown_distributed()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
