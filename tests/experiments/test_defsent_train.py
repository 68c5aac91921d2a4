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


def test_defsent_head_path_is_the_frozen_mlm_transform_and_the_vocabulary_softmax(backbone_dir):
    from spherekit.experiments.defsent.mlm_head import VocabularyLoss, fit_head, pretrained_head

    model = training_model(backbone_dir, "mean")
    assert pretrained_head(model) is None  # a sentence-transformers folder: no MLM head
    texts = [t for _, t in RECORDS] * 4
    fitted = fit_head(model, texts, steps=40, seed=0)
    params, record = fitted["params"], fitted["record"]
    assert params["dense.weight"].shape == (32, 32) and params["bias"].shape[0] == len(model.tokenizer)
    assert record["masked_tokens"] >= len(texts) and record["final_loss"] < record["initial_loss"]
    head_model = training_model(backbone_dir, "mean", head=params)
    assert [type(m).__name__ for m in head_model] == ["Transformer", "Pooling", "Dense", "LayerNorm"]
    assert not any(p.requires_grad for m in list(head_model)[2:] for p in m.parameters())
    hf, tok = head_model[0].auto_model, head_model[0].tokenizer
    batch = tok(["a flat dish", "a small open container"], padding=True, return_tensors="pt")
    hf.eval()
    with torch.no_grad():
        hidden = hf(**batch).last_hidden_state
        m = batch["attention_mask"].unsqueeze(-1).float()
        p = (hidden * m).sum(1) / m.sum(1)
        expect = F.layer_norm(F.gelu(p @ params["dense.weight"].T + params["dense.bias"]), (32,),
                              params["norm.weight"], params["norm.bias"], eps=hf.config.layer_norm_eps)
    h = sentence_vectors(head_model, ["a flat dish", "a small open container"])
    torch.testing.assert_close(h, expect, atol=2e-5, rtol=1e-5)
    decoder = hf.get_input_embeddings().weight.detach()
    labels = torch.tensor([5, 7])
    loss = VocabularyLoss(head_model, decoder, params["bias"])
    features = head_model.tokenize(["a flat dish", "a small open container"])
    torch.testing.assert_close(loss([features], labels),
                               F.cross_entropy(head_model(features)["sentence_embedding"] @ decoder.T
                                               + params["bias"], labels), atol=1e-5, rtol=1e-5)


def test_pretrained_mlm_head_is_read_from_a_bert_checkpoint(tmp_path):
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from spherekit.experiments.defsent.mlm_head import pretrained_head
    from spherekit.models import load_backbone
    from tests.losses._tiny_model import tiny_vocab

    vocab = tiny_vocab()
    mlm = BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=37, max_position_embeddings=64))
    mlm.save_pretrained(tmp_path)
    BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True).save_pretrained(tmp_path)
    head = pretrained_head(load_backbone(str(tmp_path)))
    torch.testing.assert_close(head["dense.weight"], mlm.cls.predictions.transform.dense.weight.detach())
    torch.testing.assert_close(head["bias"], mlm.cls.predictions.bias.detach())
    torch.testing.assert_close(head["norm.bias"], mlm.cls.predictions.transform.LayerNorm.bias.detach())
