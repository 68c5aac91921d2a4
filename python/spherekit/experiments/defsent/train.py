"""One step of progressive separate training (DefSent+, arXiv:2405.16153, eqs. 1 and 3-13).

The sentence vector of training is the backbone's pooler over the training pooling (sec. 3.2):

    h(s) = tanh(W p(s) + b)        p(s) = [CLS] last hidden state ("cls") or its masked mean ("mean")

(BERT's pooler, dense + tanh, with its pretrained weights; the released code also sends the mean through the
pooler. For RoBERTa-style models, whose pooler had no NSP training, the pooler's dense layer is a copy of the LM
head's dense layer and the activation is GELU; config pooler "mlm-dense" applies that rule to any backbone, with
the MLM head of spherekit.experiments.defsent.mlm_head.) A sentence-transformers checkpoint's Normalize module is
not in the path. The loss is eq. 1, the cross-entropy of each definition against its entry over the whole frozen
bank, raw dot products, no temperature: spherekit's EntryBankLoss (fused InfoNCE, candidate_grad=False: the B x E
logits never exist). DefSent's baseline trains through its frozen MLM transform against the whole vocabulary
instead (mlm_head.VocabularyLoss).

Every step restarts from the original weights ("separate"); only the bank changes ("progressive"). One epoch,
AdamW (eps 1e-6, no weight decay), linear decay to 0 without warmup, gradient clipping 1.0 (released code),
through the experiment layer's one training path (spherekit.training.trainer).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from .bank import check_bank_width

ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert")


def _lm_head_dense(folder: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """lm_head.dense.{weight,bias} from a RoBERTa checkpoint folder (AutoModel does not load the LM head)."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    state = {}
    for f in files:
        state.update(load_file(str(f)))
    if not files:
        bins = sorted(folder.glob("pytorch_model*.bin"))
        for f in bins:
            state.update(torch.load(f, map_location="cpu"))
    try:
        return state["lm_head.dense.weight"], state["lm_head.dense.bias"]
    except KeyError:
        raise ValueError(f"{folder}: a RoBERTa-style backbone needs lm_head.dense in its checkpoint (sec. 3.2: the "
                         "pooler is a copy of the LM head's dense layer)") from None


def make_pooler(transformer, seed: int = 0, mlm_dense: dict | None = None):
    """The sentence-transformers Dense module that plays the backbone's pooler (see the module docstring); with
    `mlm_dense` ({"dense.weight", "dense.bias"} of an MLM head): that dense layer + GELU, the paper's rule for a
    pooler without NSP training (RoBERTa's), for any backbone."""
    from sentence_transformers.sentence_transformer.modules import Dense

    hf = transformer.auto_model
    d = hf.config.hidden_size
    if mlm_dense is not None:
        return Dense(d, d, activation_function=nn.GELU(), init_weight=mlm_dense["dense.weight"].clone(),
                     init_bias=mlm_dense["dense.bias"].clone())
    if hf.config.model_type in ROBERTA_TYPES:
        weight, bias = _lm_head_dense(Path(hf.config._name_or_path))
        return Dense(d, d, activation_function=nn.GELU(), init_weight=weight.clone(), init_bias=bias.clone())
    pooler = getattr(hf, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if isinstance(dense, nn.Linear):
        return Dense(d, d, activation_function=nn.Tanh(), init_weight=dense.weight.detach().clone(),
                     init_bias=dense.bias.detach().clone())
    torch.manual_seed(seed)  # no pretrained pooler: a fresh dense + tanh (documented departure)
    return Dense(d, d, activation_function=nn.Tanh())


def training_model(backbone, pooling: str, device: str | None = None, head: dict | None = None,
                   mlm_dense: dict | None = None):
    """SentenceTransformer(Transformer -> Pooling(cls | mean, special tokens included) -> pooler) of a fresh copy
    of `backbone` (a name or a folder), on `device` (None: a GPU when there is one). With `head` (DefSent's MLM
    head parameters, mlm_head): the frozen MLM transform in place of the pooler. With `mlm_dense`: the pooler is
    that MLM head's dense layer + GELU (make_pooler)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    from ...models import load_backbone

    if pooling not in ("cls", "mean"):
        raise ValueError(f"training pooling must be 'cls' or 'mean', got {pooling!r}")
    base = load_backbone(str(backbone), device=device)
    transformer = base[0]
    if head is not None:
        from .mlm_head import head_modules

        last = head_modules(head, transformer.auto_model.config.layer_norm_eps)
    else:
        last = [make_pooler(transformer, mlm_dense=mlm_dense)]
    modules = [transformer, Pooling(transformer.get_embedding_dimension(), pooling), *last]
    return SentenceTransformer(modules=modules, device=device)


def sentence_vectors(model, texts, batch_size: int = 64) -> torch.Tensor:
    """h(s) of the training path (pooler output, no normalisation) for `texts`, in eval mode."""
    return model.encode(list(texts), batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=False,
                        show_progress_bar=False).float().cpu()


def train_step(model, dictionary, bank: torch.Tensor, *, lr: float, batch_size: int, seed: int, n_pairs: int,
               max_seq_length: int, adam_eps: float, max_grad_norm: float, out_dir, progress: bool = False,
               logging_steps: int = 10, targets=None, decoder_bias=None):
    """Train `model` (from training_model) for one epoch on `dictionary`'s pairs (n_pairs of them, drawn with
    `seed`; 0: all) against the frozen `bank` (row i = dictionary.entries[i]).
    DefSent's head: `bank` is the vocabulary's decoder, `decoder_bias` its bias and targets[i] entry i's token id
    (mlm_head.VocabularyLoss). Returns the TrainResult."""
    from datasets import Dataset

    from ...losses import EntryBankLoss
    from ...training.trainer import TrainConfig, train

    check_bank_width(bank, model)
    if targets is None and bank.shape[0] != dictionary.n_entries:
        raise ValueError(f"bank has {bank.shape[0]} rows but dictionary {dictionary.name} has "
                         f"{dictionary.n_entries} entries")
    model.max_seq_length = max_seq_length
    texts, labels = dictionary.sample_pairs(n_pairs, seed)
    if targets is not None:
        labels = [targets[e] for e in labels]
    steps = math.ceil(len(texts) / batch_size)  # one epoch (paper: "only 1-epoch gradient descent")
    cfg = TrainConfig(steps=steps, batch_size=batch_size, lr=lr, warmup_steps=0, schedule="linear",
                      weight_decay=0.0, adam_eps=adam_eps, max_grad_norm=max_grad_norm, seed=seed, precision="auto",
                      save_steps=0, logging_steps=logging_steps)
    dataset = Dataset.from_dict({"definition": texts, "label": labels})
    if decoder_bias is not None:
        from .mlm_head import VocabularyLoss

        loss = VocabularyLoss(model, bank, decoder_bias)
    else:
        loss = EntryBankLoss(model, bank)
    return train(model, dataset, loss, cfg, out_dir, progress=progress)
