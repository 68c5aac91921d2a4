"""One step of DefSent+ progressive separate training: pooler path, eq. 1 against a hand-computed cross-entropy."""

import math

import pytest
import torch
import torch.nn.functional as F

from spherekit.experiments.defsent.data import from_records
from spherekit.experiments.defsent.train import sentence_vectors, train_step, training_model
from spherekit.losses import EntryBankLoss

RECORDS = [("cup", "a small open container"), ("cup", "a drinking vessel"), ("plate", "a flat dish"),
           ("plate", "a dish for food"), ("joy", "a happy feel"), ("car", "drove to work")]


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_training_vector_is_the_pretrained_pooler(backbone_dir, pooling):
    model = training_model(backbone_dir, pooling)
    hf, tok = model[0].auto_model, model[0].tokenizer
    assert len(model) == 3 and "Normalize" not in str(model)
    texts = ["a flat dish", "a small open container for food"]
    batch = tok(texts, padding=True, return_tensors="pt")
    hf.eval()
    with torch.no_grad():
        hidden = hf(**batch).last_hidden_state
        m = batch["attention_mask"].unsqueeze(-1).float()
        p = hidden[:, 0] if pooling == "cls" else (hidden * m).sum(1) / m.sum(1)
        expect = torch.tanh(hf.pooler.dense(p))
    torch.testing.assert_close(sentence_vectors(model, texts), expect, atol=2e-5, rtol=1e-5)


def test_loss_is_eq1_cross_entropy_over_the_bank(backbone_dir):
    model = training_model(backbone_dir, "cls")
    bank = torch.randn(7, 32)
    labels = torch.tensor([3, 0, 6])
    h = torch.randn(3, 32, requires_grad=True)
    loss = EntryBankLoss(model, bank).compute_loss_from_embeddings([h], labels)
    torch.testing.assert_close(loss, F.cross_entropy(h @ bank.T, labels), atol=1e-5, rtol=1e-5)


def test_train_step_runs_one_epoch_and_leaves_the_bank(backbone_dir, tmp_path):
    d = from_records(RECORDS, "c")
    model = training_model(backbone_dir, "mean")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    bank = torch.randn(d.n_entries, 32)
    bank_copy = bank.clone()
    result = train_step(model, d, bank, lr=1e-3, batch_size=4, seed=1, n_pairs=0, max_seq_length=24, adam_eps=1e-6,
                        max_grad_norm=1.0, out_dir=tmp_path, logging_steps=1)
    assert result.steps == math.ceil(6 / 4)
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert any(k.startswith("0.") for k in changed) and any(k.startswith("2.") for k in changed)
    torch.testing.assert_close(bank, bank_copy)
    with pytest.raises(ValueError, match="bank has 3 rows but dictionary c has 4 entries"):
        train_step(model, d, torch.randn(3, 32), lr=1e-3, batch_size=4, seed=1, n_pairs=0, max_seq_length=24,
                   adam_eps=1e-6, max_grad_norm=1.0, out_dir=tmp_path)
    with pytest.raises(ValueError, match="encoder's width is 32"):
        train_step(model, d, torch.randn(4, 16), lr=1e-3, batch_size=4, seed=1, n_pairs=0, max_seq_length=24,
                   adam_eps=1e-6, max_grad_norm=1.0, out_dir=tmp_path)
