"""DefSent+ entry banks (eq. 2) against hand-computed means of [CLS] states / masked means; cache; bad width;
DefSent's word-embedding bank against the embedding rows of the entries' tokens."""

import pytest
import torch

from spherekit.experiments.defsent import bank as bank_mod
from spherekit.experiments.defsent.bank import build_bank, check_bank_width, encode_pooled, encode_poolings
from spherekit.experiments.defsent.data import from_records, single_token

RECORDS = [("revitalize", "give new life or vigor to"), ("revitalize", "imbue something with new life and vitality"),
           ("cup", "a small open container usually used for drinking"), ("plate", "a dish"),
           ("plate", "a flat dish with a rim for the warm food")]


def _states(model, text):
    hf, tok = model[0].auto_model, model[0].tokenizer
    hf.eval()
    with torch.no_grad():
        return hf(**tok(text, return_tensors="pt")).last_hidden_state[0]  # one text: no padding at all


@pytest.mark.parametrize("kind", ["ac", "amp"])
def test_bank_is_the_mean_of_hand_pooled_definitions(tiny_model, kind, tmp_path):
    d = from_records(RECORDS, "a")
    got = build_bank(tiny_model, d, kind, batch_size=2, cache_dir=tmp_path)
    expect = []
    for defs in d.definitions:
        vecs = [_states(tiny_model, t)[0] if kind == "ac" else _states(tiny_model, t).mean(0) for t in defs]
        expect.append(torch.stack(vecs).mean(0))
    torch.testing.assert_close(got, torch.stack(expect), atol=2e-5, rtol=1e-5)
    assert got.shape == (3, 32)


def test_encode_order_and_prompt(tiny_model):
    texts = [t for _, t in RECORDS]
    one = encode_pooled(tiny_model, texts, "mean", batch_size=1)
    three = encode_pooled(tiny_model, texts, "mean", batch_size=3)
    torch.testing.assert_close(one, three, atol=2e-5, rtol=1e-5)
    prompt = encode_pooled(tiny_model, texts[:2], "prompt", batch_size=2)
    tok = tiny_model[0].tokenizer
    text = f'This sentence : "{texts[0]}" means [MASK] .'
    ids = tok(text)["input_ids"]
    torch.testing.assert_close(prompt[0], _states(tiny_model, text)[ids.index(tok.mask_token_id)], atol=2e-5,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="pooling must be one of"):
        encode_pooled(tiny_model, texts, "max")


def test_one_pass_gives_cls_and_mean_as_separate_passes_do(tiny_model):
    texts = [t for _, t in RECORDS]
    both = encode_poolings(tiny_model, texts, ("cls", "mean"), batch_size=2)
    assert set(both) == {"cls", "mean"}
    for pooling, emb in both.items():
        assert torch.equal(emb, encode_pooled(tiny_model, texts, pooling, batch_size=2)), pooling
    with pytest.raises(ValueError, match="cannot share a pass"):
        encode_poolings(tiny_model, texts, ("cls", "prompt"))
    with pytest.raises(ValueError, match="poolings must be one or more of"):
        encode_poolings(tiny_model, texts, ())


def test_eval_mode_is_used_and_restored(tiny_model):
    hf = tiny_model[0].auto_model
    hf.train()
    a = encode_pooled(tiny_model, ["a dish", "a cup"], "cls")
    b = encode_pooled(tiny_model, ["a dish", "a cup"], "cls")
    torch.testing.assert_close(a, b)  # no dropout
    assert hf.training


def test_bank_cache_is_keyed_by_model_and_data(tiny_model, tmp_path, monkeypatch):
    d = from_records(RECORDS, "a")
    first = build_bank(tiny_model, d, "amp", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("bank-*.pt"))) == 1

    def boom(*a, **k):
        raise AssertionError("encoded again")

    monkeypatch.setattr(bank_mod, "encode_pooled", boom)
    torch.testing.assert_close(build_bank(tiny_model, d, "amp", cache_dir=tmp_path), first)
    other = from_records(RECORDS[:3], "a")
    with pytest.raises(AssertionError, match="encoded again"):
        build_bank(tiny_model, other, "amp", cache_dir=tmp_path)
    with torch.no_grad():
        tiny_model[0].auto_model.embeddings.word_embeddings.weight[5] += 1.0
    with pytest.raises(AssertionError, match="encoded again"):
        build_bank(tiny_model, d, "amp", cache_dir=tmp_path)


def test_bank_width_must_match(tiny_model):
    check_bank_width(torch.zeros(4, 32), tiny_model)
    with pytest.raises(ValueError, match=r"shape \(4, 16\) but the encoder's width is 32"):
        check_bank_width(torch.zeros(4, 16), tiny_model)
    with pytest.raises(ValueError, match="bank kind"):
        build_bank(tiny_model, from_records(RECORDS, "a"), "cls")


def test_word_bank_is_the_embedding_rows_of_the_entry_tokens(tiny_model, tmp_path):
    records = RECORDS + [("Cup", "a drinking vessel"), ("unhappily", "in an unfortunate way")]
    tok = tiny_model[0].tokenizer
    d = single_token(from_records(records, "b"), tok)
    assert d.entries == ["revitalize", "cup", "plate"]  # "Cup" merged into "cup", "unhappily" out of vocabulary
    got = build_bank(tiny_model, d, "word", cache_dir=tmp_path)
    table = tiny_model[0].auto_model.embeddings.word_embeddings.weight
    for row, entry in zip(got, d.entries):
        torch.testing.assert_close(row, table[tok.convert_tokens_to_ids(entry)].detach())
    assert got.shape == (d.n_entries, 32) and not list(tmp_path.iterdir())  # a lookup: nothing cached
    with pytest.raises(ValueError, match=r"entry 'unhappily' of dictionary a is not one token .*\['u', '##n', "):
        build_bank(tiny_model, from_records(records, "a"), "word")  # word pieces
    with pytest.raises(ValueError, match=r"entry 'cup plate' .* \['cup', 'plate'\]"):
        build_bank(tiny_model, from_records([("cup plate", "two words")], "a"), "word")
    with pytest.raises(ValueError, match=r"entry 'ж' .* \['\[UNK\]'\]"):  # one token, but the unknown token
        build_bank(tiny_model, from_records([("ж", "a letter")], "a"), "word")
