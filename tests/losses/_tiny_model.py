"""A tiny random BERT SentenceTransformer built offline (no hub): for tests that need a real model.

    from tests.losses._tiny_model import build_tiny_model, TINY_WORDS
    model = build_tiny_model(tmp_path)            # 1 layer, hidden 32, mean pooling, on CPU

The vocabulary is a WordPiece vocab.txt written next to the weights: the special tokens, the
words in TINY_WORDS, and every lower-case letter and digit as a word and as a "##" continuation,
so any lower-case ASCII text tokenises without [UNK] floods.
"""

from __future__ import annotations

import string
from pathlib import Path

import torch

TINY_WORDS = (
    "a an the is not of to in and or with for by on at it he she they we i you was are be "
    "cup plate dirty clean filthy free dirt mammal animal warm cold blooded vertebrate feeds young milk "
    "death place where someone drew last breath price prices rise increase decrease sustained general level "
    "joy sad happy grim thrilled feel so this what car drove work office took sunny weather nice today "
    "give new life vigor imbue something vitality revitalize container small open drinking"
).split()

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tiny_vocab() -> list[str]:
    chars = list(string.ascii_lowercase + string.digits + ".,;:!?'-")
    vocab = SPECIAL + sorted(set(TINY_WORDS)) + chars + [f"##{c}" for c in string.ascii_lowercase + string.digits]
    seen: set[str] = set()
    return [t for t in vocab if not (t in seen or seen.add(t))]


def build_tiny_model(path: str | Path, *, seed: int = 0, pooling: str = "mean", max_seq_length: int = 32,
                     num_hidden_layers: int = 1, dropout: float | None = None):
    """Write a random BERT (hidden 32, 2 heads, `num_hidden_layers` layers; `dropout` replaces BERT's 0.1
    dropout probabilities when given) + WordPiece tokenizer to `path`; return an ST model."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        pad_token_id=0,
        **({} if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}),
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    transformer = Transformer(str(path), max_seq_length=max_seq_length)
    pool = Pooling(transformer.get_embedding_dimension(), pooling)
    return SentenceTransformer(modules=[transformer, pool], device="cpu")
