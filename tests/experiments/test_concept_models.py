"""Each condition's encoder and objective: readout modules, view columns, hard-negative modes and the BCE
coefficient, deep supervision (M3) against a hand computation, and the cached variant."""

import dataclasses

import pytest
import torch

from spherekit.experiments.concept.models import build_loss, build_model, readout_module
from spherekit.experiments.concept.spec import EXPERIMENT, SETUPS as CONDITIONS, ConceptConfig
from spherekit.losses import CachedConceptEquivalenceLoss, ConceptEquivalenceLoss
from spherekit.losses.deep_supervision import DeepSupervisionLoss

preset_config = EXPERIMENT.make_config

K = 2  # hard-negative columns per t2d row
CFG = dataclasses.replace(preset_config("tiny"), negatives_per_pair=K)
A = ["dirty cup", "mammal", "joy", "death place"]
P = ["filthy cup", "a warm blooded vertebrate", "happy feel", "where someone drew last breath"]


def columns(model, n):
    texts = [A, P, *([P[::-1]] * K), P, A, A[::-1], P[::-1]][:n]
    return [model.preprocess(list(t)) for t in texts]


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_readout_of_each_condition(backbone, name):
    cond = CONDITIONS[name]
    model = build_model(backbone, cond, CFG)
    assert model[0].max_seq_length == CFG.max_seq_length
    readout = readout_module(model)
    if cond.readout in ("mean", "cls"):
        assert readout is None and model[1].pooling_mode == cond.readout
    else:
        assert readout.mode == cond.readout and readout.num_layers == cond.layers
        assert (readout.heads is not None) == cond.deep_supervision
    emb = model.encode(A, convert_to_tensor=True)
    assert emb.shape == (len(A), 32) and torch.isfinite(emb).all()


@pytest.mark.parametrize("name", [c for c, v in CONDITIONS.items() if v.trained])
def test_loss_of_each_condition(backbone, name):
    cond = CONDITIONS[name]
    model = build_model(backbone, cond, CFG)
    loss = build_loss(model, cond, CFG, K)
    assert list(loss.view_columns) == ["syn", "t2d", "d2d"]
    assert loss.view_columns["t2d"] == 2 + (K if cond.hard_negatives else 0)
    t2d = loss.view_losses["t2d"]
    assert isinstance(t2d, DeepSupervisionLoss) == cond.deep_supervision
    inner = t2d.loss if cond.deep_supervision else t2d
    d2d = loss.view_losses["d2d"].loss if cond.deep_supervision else loss.view_losses["d2d"]
    assert inner.weight == CFG.t2d_weight and d2d.weight == pytest.approx(CFG.d2d_weight)
    if cond.hard_negatives == "bce":
        assert inner.hard_negative_mode == "bce" and inner.bce_weight * inner.weight == pytest.approx(0.5)
        assert inner.bce_bias == (CFG.bce_bias if cond.bce_bias is None else cond.bce_bias) == (
            -10.0 if name == "B1-biased" else 0.0)
        assert inner.bce_positive == (name != "B1-negonly")
        assert inner.bce_scale == {"B1-bce5": 5.0, "B1-bce1": 1.0}.get(name, CFG.bce_scale)
    elif cond.hard_negatives == "softmax":
        assert inner.hard_negative_mode == "softmax"
    assert loss.labels_to == ("t2d" if cond.hard_negatives else None)
    counts = torch.tensor([0, 1, 2, 2]) if cond.hard_negatives else None  # rows with fewer real negatives: masked
    out = loss(columns(model, loss.n_columns), counts)
    assert set(out) == {"syn", "t2d", "d2d"} and all(torch.isfinite(v) for v in out.values())
    sum(out.values()).backward()
    assert model[0].auto_model.embeddings.word_embeddings.weight.grad is not None


def test_readout_initialisation(backbone):
    """M1 starts at the uniform mix (B0-WM's readout), M1-last with LAST_LAYER_INIT on the last layer."""
    from spherekit.experiments.concept.spec import LAST_LAYER_INIT

    for name, want in (("M1", [0.25] * 4), ("M1-last", [(1 - LAST_LAYER_INIT) / 3] * 3 + [LAST_LAYER_INIT])):
        readout = readout_module(build_model(backbone, CONDITIONS[name], CFG))
        torch.testing.assert_close(torch.softmax(readout.w.detach(), 0), torch.tensor(want))
    with pytest.raises(ValueError, match="learned layer mix"):
        build_model(backbone, dataclasses.replace(CONDITIONS["M2"], readout_init="last"), CFG)


def test_a_paced_readout_learns_as_far_as_the_papers_steps_move_it(backbone):
    """M1-last-paced: M1-last's start, and its mix's logits at head x 8,000 / steps x lr in the optimizer (the
    rest of the model at the usual rates); at the paper's steps the pace is the head's."""
    from spherekit.experiments.concept.spec import LAST_LAYER_INIT, paced_multiplier
    from spherekit.training.optim import parameter_lrs

    cfg = dataclasses.replace(CFG, steps=120, head_multiplier=5.0, lr=5e-5)
    model = build_model(backbone, CONDITIONS["M1-last-paced"], cfg)
    readout = readout_module(model)
    assert float(torch.softmax(readout.w.detach(), 0)[-1]) == pytest.approx(LAST_LAYER_INIT)
    assert readout.lr_multiplier == pytest.approx(5.0 * 8000 / 120) == paced_multiplier(5.0, 120)
    lrs = parameter_lrs(model, cfg.lr, cfg.layer_decay, cfg.head_multiplier)
    assert lrs["1.w"] == pytest.approx(5e-5 * 5.0 * 8000 / 120)
    assert max(v for k, v in lrs.items() if k != "1.w") == pytest.approx(5e-5)  # the encoder's top rate
    assert paced_multiplier(5.0, 8000) == paced_multiplier(5.0, 20000) == 5.0  # never slower than the head
    assert not hasattr(readout_module(build_model(backbone, CONDITIONS["M1-last"], cfg)), "lr_multiplier")
    with pytest.raises(ValueError, match="readout_paced needs a learned layer mix"):
        build_model(backbone, dataclasses.replace(CONDITIONS["B1"], readout_paced=True), cfg)
    # the short presets run it; the paper preset leaves it out (at 8,000 steps it is M1-last)
    assert "M1-last-paced" in preset_config("cpu-small-ablation").conditions
    assert "M1-last-paced" not in preset_config("paper").conditions and "M1-last" in preset_config("paper").conditions


def test_gate_mixes_read_each_inputs_mix(backbone):
    """M2's gate summary: the mean mix and the mean per-input total variation from uniform, against each text's
    own forward pass; zero at the gate's start (a zero output layer), positive once the gate moves."""
    from types import SimpleNamespace

    from spherekit.experiments.concept.run import _gate_mixes

    model = build_model(backbone, CONDITIONS["M2"], CFG).eval()
    data = SimpleNamespace(eval_sets={"in-domain": SimpleNamespace(
        records=[{"term": a, "definition": p} for a, p in zip(A, P)])})
    start = _gate_mixes(model, data, 3, source_holdout=False)
    assert start == {"layer_weights": [0.25] * 4, "gate_moved": 0.0, "gate_texts": 8}
    torch.manual_seed(0)
    torch.nn.init.normal_(readout_module(model).gate[2].weight, std=3.0)
    with torch.no_grad():
        alpha = torch.cat([model(model.preprocess([t]))["layer_weights"] for t in A + P])
    got = _gate_mixes(model, data, 3, source_holdout=False)
    want = float(0.5 * (alpha - 0.25).abs().sum(1).mean())
    assert want > 0.05 and got["gate_moved"] == pytest.approx(want, abs=1e-4)
    assert got["layer_weights"] == pytest.approx(alpha.mean(0).tolist(), abs=1e-4)


def test_bce_stays_absolute_when_the_t2d_view_is_weighted(backbone):
    cfg = dataclasses.replace(CFG, t2d_weight=2.0)
    model = build_model(backbone, CONDITIONS["B1"], cfg)
    t2d = build_loss(model, CONDITIONS["B1"], cfg, K).view_losses["t2d"]
    assert t2d.weight == 2.0 and t2d.bce_weight == pytest.approx(0.25)


def test_deep_supervision_adds_one_infonce_per_layer(backbone):
    model = build_model(backbone, CONDITIONS["M3"], CFG)
    model.train()
    view = ConceptEquivalenceLoss(model, weight=0.7)
    feats = columns(model, 2)
    got = DeepSupervisionLoss(model, view, deep_weight=0.5)(feats, None)
    outs = [model(dict(f)) for f in feats]
    want = view.compute_loss_from_embeddings([o["sentence_embedding"] for o in outs], None)
    layers = [o["layer_embeddings"] for o in outs]
    assert layers[0].shape[0] == 4
    want = want + 0.5 * sum(view.compute_loss_from_embeddings([layers[0][k], layers[1][k]], None) for k in range(4))
    torch.testing.assert_close(got, want)
    model.eval()
    with pytest.raises(ValueError, match="layer_embeddings"):
        DeepSupervisionLoss(model, view)(feats, None)


def test_the_rows_counts_reach_the_t2d_view_alone(backbone):
    """The counts of real negatives (the dataset's "label" column) mask the t2d view's padded slots: the loss of a
    batch whose second column is padding is the loss without that column; no other view takes labels."""
    model = build_model(backbone, CONDITIONS["B1"], CFG)
    model.eval()  # no dropout: the two passes see the same embeddings
    loss = build_loss(model, CONDITIONS["B1"], CFG, K)
    feats = columns(model, loss.n_columns)
    got = loss(feats, torch.ones(4, dtype=torch.long))
    one = dataclasses.replace(CFG, negatives_per_pair=1)
    want = build_loss(model, CONDITIONS["B1"], one, 1)(feats[:5] + feats[6:], None)  # without negative 2
    for view in ("syn", "t2d", "d2d"):
        torch.testing.assert_close(got[view], want[view])
    b3 = build_loss(model, CONDITIONS["B3"], CFG, K)
    with pytest.raises(ValueError, match="no view takes it"):
        b3(columns(model, b3.n_columns), torch.ones(4, dtype=torch.long))


def test_cached_views_and_their_limits(backbone):
    cfg = dataclasses.replace(CFG, cached_mini_batch=2)
    model = build_model(backbone, CONDITIONS["B1"], cfg)
    loss = build_loss(model, CONDITIONS["B1"], cfg, K)
    assert all(isinstance(v, CachedConceptEquivalenceLoss) for v in loss.view_losses.values())
    model.eval()
    counts = torch.tensor([0, 1, 2, 1])
    cached = loss(columns(model, loss.n_columns), counts)
    plain = build_loss(model, CONDITIONS["B1"], CFG, K)(columns(model, loss.n_columns), counts)
    for view in ("syn", "t2d", "d2d"):
        torch.testing.assert_close(cached[view], plain[view], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="M3"):
        build_loss(build_model(backbone, CONDITIONS["M3"], cfg), CONDITIONS["M3"], cfg, K)


def test_config_validation():
    with pytest.raises(ValueError, match="valid conditions"):
        ConceptConfig(conditions=("B9",))
    with pytest.raises(ValueError, match="eval_splits"):
        ConceptConfig(eval_splits=("head-holdout",))
    with pytest.raises(ValueError, match="swap_negatives"):
        ConceptConfig(swap_negatives="farthest")
    with pytest.raises(ValueError, match="negation_scope"):
        ConceptConfig(negation_scope="everything")
    with pytest.raises(ValueError, match="valid presets"):
        preset_config("huge")
