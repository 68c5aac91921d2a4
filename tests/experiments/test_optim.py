"""Layerwise learning-rate decay and the head multiplier: the exact learning rate of every parameter, a module's own
lr_multiplier, the groups the trainer's AdamW receives, weight decay exclusions, and bad arguments."""

import pytest
import torch

from spherekit.training.optim import param_groups, parameter_lrs, transformer_depth

LR, DECAY, HEAD = 1e-3, 0.9, 5.0
N_LAYERS = 6


def expected_lr(name: str) -> float:
    """By hand for a BERT SentenceTransformer: 0.<...> names live in the Transformer, 1.<...> in the readout."""
    if not name.startswith("0."):
        return LR * HEAD
    if ".embeddings." in name:
        return LR * DECAY ** N_LAYERS
    if ".encoder.layer." in name:
        layer = int(name.split(".encoder.layer.")[1].split(".")[0])
        return LR * DECAY ** (N_LAYERS - layer - 1)
    return LR  # pooler: the top rate


@pytest.fixture
def mixed(backbone):
    from spherekit.nn import layer_mix_model

    return layer_mix_model(backbone, "learned", num_layers=4)


def test_every_parameter_gets_its_layer_rate(mixed):
    lrs = parameter_lrs(mixed, LR, DECAY, HEAD)
    names = [n for n, p in mixed.named_parameters() if p.requires_grad]
    assert set(lrs) == set(names)
    for name in names:
        assert lrs[name] == pytest.approx(expected_lr(name), rel=1e-12), name
    # the embeddings are the lowest, the readout the highest
    assert min(lrs.values()) == pytest.approx(LR * DECAY ** N_LAYERS)
    assert lrs["1.w"] == pytest.approx(LR * HEAD)


def test_a_module_after_the_transformer_can_set_its_own_multiplier(mixed):
    mixed[1].lr_multiplier = 300.0  # the layer mix's logits: a readout that must move faster than the head rate
    lrs = parameter_lrs(mixed, LR, DECAY, HEAD)
    assert lrs["1.w"] == pytest.approx(LR * 300.0)
    assert all(lr == pytest.approx(expected_lr(n)) for n, lr in lrs.items() if n != "1.w")  # the rest unchanged
    groups = param_groups(mixed, LR, layer_decay=DECAY, head_multiplier=HEAD)
    assert [g["lr"] for g in groups if "1.w" in g["names"]] == [pytest.approx(LR * 300.0)]
    for bad in (0.0, -1.0, "fast", True):
        mixed[1].lr_multiplier = bad
        with pytest.raises(ValueError, match="lr_multiplier must be a number > 0"):
            parameter_lrs(mixed, LR, DECAY, HEAD)
    del mixed[1].lr_multiplier
    mixed[0].lr_multiplier = 2.0  # inside the Transformer, layer_decay rules
    with pytest.raises(ValueError, match="lr_multiplier is for modules after the Transformer"):
        parameter_lrs(mixed, LR, DECAY, HEAD)


def test_frozen_parameters_are_left_out(backbone):
    backbone[0].auto_model.embeddings.requires_grad_(False)
    lrs = parameter_lrs(backbone, LR, DECAY, HEAD)
    assert not any(".embeddings." in n for n in lrs) and any(".encoder.layer.0." in n for n in lrs)


def test_groups_split_by_rate_and_weight_decay(mixed):
    groups = param_groups(mixed, LR, layer_decay=DECAY, head_multiplier=HEAD, weight_decay=0.01)
    seen = {}
    for g in groups:
        for name in g["names"]:
            seen[name] = (g["lr"], g["weight_decay"])
    for name, (lr, wd) in seen.items():
        assert lr == pytest.approx(expected_lr(name))
        no_decay = name.endswith("bias") or "LayerNorm" in name
        assert wd == (0.0 if no_decay else 0.01), name
    assert len(seen) == sum(p.requires_grad for p in mixed.parameters())


def test_trainer_optimizer_uses_the_groups(mixed, tmp_path):
    from datasets import Dataset

    from spherekit.training.trainer import TrainConfig, _trainer_class, training_arguments
    from spherekit.losses import MultipleNegativesRankingLoss

    cfg = TrainConfig(steps=1, batch_size=2, lr=LR, layer_decay=DECAY, head_multiplier=HEAD, warmup_steps=0)
    data = Dataset.from_dict({"a": ["dirty cup", "mammal"], "p": ["filthy cup", "a warm animal"]})
    trainer = _trainer_class()(model=mixed, args=training_arguments(cfg, tmp_path, progress=False),
                               train_dataset=data, loss=MultipleNegativesRankingLoss(mixed), layer_decay=DECAY,
                               head_multiplier=HEAD)
    opt = trainer.create_optimizer()
    assert isinstance(opt, torch.optim.AdamW)
    by_param = {id(p): g["lr"] for g in opt.param_groups for p in g["params"]}
    for name, p in mixed.named_parameters():
        assert by_param[id(p)] == pytest.approx(expected_lr(name)), name


def test_depth_of_common_names():
    assert transformer_depth("auto_model.embeddings.word_embeddings.weight", 12) == 0
    assert transformer_depth("auto_model.encoder.layer.0.attention.self.query.weight", 12) == 1
    assert transformer_depth("auto_model.encoder.layer.11.output.dense.weight", 12) == 12
    assert transformer_depth("auto_model.encoder.relative_attention_bias.weight", 12) == 12  # MPNet: shared, top
    assert transformer_depth("model.layers.3.mlp.up_proj.weight", 4) == 4
    with pytest.raises(ValueError, match="layer index 7"):
        transformer_depth("encoder.layer.7.dense.weight", 4)


@pytest.mark.parametrize("kw, match", [({"layer_decay": 0.0}, "layer_decay"), ({"layer_decay": 1.5}, "layer_decay"),
                                       ({"head_multiplier": 0.0}, "head_multiplier")])
def test_bad_arguments(backbone, kw, match):
    with pytest.raises(ValueError, match=match):
        parameter_lrs(backbone, LR, **kw)
