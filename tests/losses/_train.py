"""Shared by the loss tests: two SentenceTransformerTrainer steps on a tiny model, with the checks every
end-to-end loss test makes (two finite logged losses, weights moved), and a few text rows."""

from __future__ import annotations

import math

import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

# (anchor, positive, negative, negative) rows that tokenise well with the tiny vocabulary
ANCHORS = ["dirty cup", "clean plate", "mammal", "death place", "revitalize", "cup"]
POSITIVES = ["filthy cup", "free of dirt plate", "a warm blooded vertebrate that feeds its young with milk",
             "where someone drew last breath", "give new life or vigor to", "a small open container"]
NEG_1 = ["clean cup", "dirty plate", "not a warm blooded vertebrate", "where someone drew first breath",
         "give no life to", "a small closed container"]
NEG_2 = ["a cup", "a plate", "a cold blooded vertebrate", "a place", "imbue something", "a drinking place"]


def train_two_steps(model, tmp_path, dataset, loss, batch_size=4, **extra):
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=batch_size,
        learning_rate=5e-3, warmup_steps=0, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
        dataloader_num_workers=0, seed=0, **extra,
    )
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    trainer.train()
    logged = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert trainer.state.global_step == 2 and len(logged) == 2
    assert all(math.isfinite(x) for x in logged), logged
    changed = sum(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert changed > 0, "no weight moved"
    return logged
