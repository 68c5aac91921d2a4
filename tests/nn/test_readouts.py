"""LayerMixPooling (B0-WM / M1 / M2 / M3 cross-layer readouts): the mixture against hand computations from the
HF model's hidden_states, masking, what trains, deep supervision, save/load, errors, layer_mix_model."""

import json
import subprocess
import sys

import pytest
import torch

from spherekit.nn import LayerMixPooling, enable_hidden_states, layer_mix_model

TEXTS = ["dirty cup", "a warm blooded vertebrate that feeds its young with milk", "joy", "the price of milk rise"]
N_LAYERS, D = 5, 32
MODES = {  # name -> LayerMixPooling kwargs (besides num_layers)
    "uniform": dict(mode="uniform"),
    "learned": dict(mode="learned"),
    "gated": dict(mode="gated", gate_hidden=8),
    "deep": dict(mode="learned", deep_supervision=True),
}


@pytest.fixture(scope="session")
def deep_bert_path(tmp_path_factory):
    """A random 5-layer BERT (hidden 32, dropout 0) + the tiny WordPiece tokenizer."""
    from tests.losses._tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny_bert_5_layers")
    build_tiny_model(path, num_hidden_layers=N_LAYERS, dropout=0.0)
    return path


@pytest.fixture
def backbone(deep_bert_path):
    """factory() -> a fresh SentenceTransformer [Transformer, Pooling(mean)] of the 5-layer BERT."""
    from sentence_transformers import SentenceTransformer

    return lambda: SentenceTransformer(str(deep_bert_path), device="cpu")


@pytest.fixture
def mix_model(backbone):
    """factory(name, num_layers=4, seed=0) -> layer_mix_model of a fresh backbone (MODES[name])."""
    def make(name, num_layers=4, seed=0):
        torch.manual_seed(seed)
        return layer_mix_model(backbone(), num_layers=num_layers, **MODES[name])

    return make


def perturb_(module, scale=0.5, seed=1):
    """Move every readout parameter away from its init, so the mixtures are non-uniform and heads not identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)


def hidden_states(model, texts):
    """(features, the HF model's hidden_states) for texts, computed directly on the HF model."""
    features = model.preprocess(texts)
    with torch.no_grad():
        out = model[0].model(input_ids=features["input_ids"], attention_mask=features["attention_mask"],
                             token_type_ids=features.get("token_type_ids"), output_hidden_states=True)
    return features, out.hidden_states


def mean_pool(h, mask):
    m = mask.to(h.dtype).unsqueeze(-1)
    return (h * m).sum(1) / m.sum(1)


def run(model, texts):
    features = model.preprocess(texts)
    with torch.no_grad():
        return model(features)


@pytest.mark.parametrize("name", list(MODES))
@pytest.mark.parametrize("k", [1, 4])
def test_shapes(mix_model, name, k):
    model = mix_model(name, num_layers=k)
    model.eval()
    out = run(model, TEXTS)
    b, t = out["attention_mask"].shape
    assert out["token_embeddings"].shape == (b, t, D)
    assert out["sentence_embedding"].shape == (b, D)
    assert out["layer_weights"].shape == (b, k)
    torch.testing.assert_close(out["layer_weights"].sum(-1), torch.ones(b))
    assert "layer_embeddings" not in out
    assert model.get_embedding_dimension() == model[1].get_embedding_dimension() == D


@pytest.mark.parametrize("k", [1, 3, 5])
def test_uniform_is_mean_of_last_k_layer_pools(mix_model, k):
    model = mix_model("uniform", num_layers=k)
    model.eval()
    features, hs = hidden_states(model, TEXTS)
    assert len(hs) == N_LAYERS + 1
    mask = features["attention_mask"]
    expected = torch.stack([mean_pool(h, mask) for h in hs[-k:]]).mean(0)
    out = run(model, TEXTS)
    torch.testing.assert_close(out["sentence_embedding"], expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["token_embeddings"], torch.stack(hs[-k:]).mean(0), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["layer_weights"], torch.full((len(TEXTS), k), 1 / k))
    # K = 1 is the final layer's mean pool (B0); K > 1 is not (the mixture is not a no-op)
    assert torch.allclose(out["sentence_embedding"], mean_pool(hs[-1], mask), atol=1e-3) == (k == 1)


@pytest.mark.parametrize("k", [4, 6])
def test_learned_at_init_equals_uniform(k):
    features = {"all_layer_embeddings": tuple(torch.randn(3, 5, D) for _ in range(7)),
                "attention_mask": torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])}
    uniform = LayerMixPooling(D, k, "uniform")(dict(features))
    for kwargs in (dict(mode="learned"), dict(mode="learned", deep_supervision=True), dict(mode="gated")):
        out = LayerMixPooling(D, k, **kwargs).eval()(dict(features))
        for key in ("sentence_embedding", "token_embeddings", "layer_weights"):
            torch.testing.assert_close(out[key], uniform[key], msg=f"{kwargs}: {key}")


def test_learned_weights_are_softmax_of_w(mix_model):
    model = mix_model("learned")
    model.eval()
    w = torch.tensor([1.0, -0.5, 2.0, 0.25])
    with torch.no_grad():
        model[1].w.copy_(w)
    features, hs = hidden_states(model, TEXTS)
    mask = features["attention_mask"]
    alpha = w.exp() / w.exp().sum()
    out = run(model, TEXTS)
    torch.testing.assert_close(out["layer_weights"], alpha.expand(len(TEXTS), 4))
    expected = sum(a * mean_pool(h, mask) for a, h in zip(alpha, hs[-4:]))
    torch.testing.assert_close(out["sentence_embedding"], expected, atol=1e-5, rtol=1e-5)


def test_gated_weights_are_per_input(mix_model):
    model = mix_model("gated")
    model.eval()
    gate = model[1].gate
    assert isinstance(gate[1], torch.nn.GELU) and gate[0].out_features == 8 and gate[2].out_features == 4
    torch.testing.assert_close(run(model, TEXTS)["layer_weights"], torch.full((len(TEXTS), 4), 0.25))
    perturb_(model[1], scale=1.0)
    features, hs = hidden_states(model, TEXTS)
    mask = features["attention_mask"]
    out = run(model, TEXTS)
    alpha = out["layer_weights"]
    assert alpha.shape == (len(TEXTS), 4)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(len(TEXTS)))
    with torch.no_grad():
        expected_alpha = torch.softmax(gate(mean_pool(hs[-1], mask)), dim=-1)
    torch.testing.assert_close(alpha, expected_alpha, atol=1e-5, rtol=1e-5)
    assert (alpha.max(0).values - alpha.min(0).values).max() > 1e-2  # differs across inputs
    expected = sum(expected_alpha[:, i, None] * mean_pool(h, mask) for i, h in enumerate(hs[-4:]))
    torch.testing.assert_close(out["sentence_embedding"], expected, atol=1e-5, rtol=1e-5)


def test_gate_hidden_default_is_half_d():
    assert LayerMixPooling(D, 4, "gated").gate[0].out_features == D // 2 == LayerMixPooling(D, 4, "gated").gate_hidden


@pytest.mark.parametrize("name", list(MODES))
def test_padding_does_not_change_an_embedding(mix_model, name):
    model = mix_model(name)
    perturb_(model[1])
    model.eval()
    short, long = TEXTS[0], TEXTS[1]
    alone = run(model, [short])
    batched = run(model, [short, long])
    assert batched["attention_mask"][0].sum() < batched["attention_mask"].shape[1]  # short really is padded
    torch.testing.assert_close(batched["sentence_embedding"][0], alone["sentence_embedding"][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batched["layer_weights"][0], alone["layer_weights"][0], atol=1e-5, rtol=1e-5)


TRAINABLE = {
    "uniform": set(),
    "learned": {"w"},
    "gated": {"gate.0.weight", "gate.0.bias", "gate.2.weight", "gate.2.bias"},
    "deep": {"w"} | {f"heads.{i}.{p}" for i in range(4) for p in ("weight", "bias")},
}


@pytest.mark.parametrize("name", list(MODES))
def test_what_trains_and_backward_reaches_the_transformer(mix_model, name):
    model = mix_model(name)
    readout = model[1]
    assert {n for n, p in readout.named_parameters() if p.requires_grad} == TRAINABLE[name]
    assert readout.trainable_readout == (name != "uniform")
    perturb_(readout)  # the gate's zero output layer would otherwise block its hidden layer's gradient
    model.train()
    out = model(model.preprocess(TEXTS))
    loss = out["sentence_embedding"].square().sum()
    if name == "deep":
        assert "layer_embeddings" in out
        loss = loss + out["layer_embeddings"].square().sum()
    loss.backward()
    for n, p in readout.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, n
    bert = model[0].model
    lowest_mixed = bert.encoder.layer[N_LAYERS - 4]
    for p in (bert.embeddings.word_embeddings.weight, lowest_mixed.output.dense.weight):
        assert p.grad is not None and p.grad.abs().sum() > 0


def test_deep_supervision_layer_embeddings(mix_model):
    model = mix_model("deep")
    model.train()
    features, hs = hidden_states(model, TEXTS)
    mask = features["attention_mask"]
    pools = torch.stack([mean_pool(h, mask) for h in hs[-4:]])  # lowest of the K first
    with torch.no_grad():
        out = model(model.preprocess(TEXTS))
    assert out["layer_embeddings"].shape == (4, len(TEXTS), D)
    torch.testing.assert_close(out["layer_embeddings"], pools, atol=1e-5, rtol=1e-5)  # identity heads at init
    heads = model[1].heads
    perturb_(heads)
    with torch.no_grad():
        out = model(model.preprocess(TEXTS))
        expected = torch.stack([head(p) for head, p in zip(heads, pools)])
    torch.testing.assert_close(out["layer_embeddings"], expected, atol=1e-5, rtol=1e-5)
    model.eval()
    assert "layer_embeddings" not in run(model, TEXTS)


def test_drop_deep_supervision(mix_model):
    model = mix_model("deep")
    perturb_(model[1])
    model.eval()
    before = run(model, TEXTS)["sentence_embedding"]
    model[1].drop_deep_supervision()
    assert model[1].heads is None and not model[1].deep_supervision
    assert {n for n, _ in model[1].named_parameters()} == {"w"}
    model.train()
    out = run(model, TEXTS)
    assert "layer_embeddings" not in out
    torch.testing.assert_close(out["sentence_embedding"], before)


@pytest.mark.parametrize("name", list(MODES))
def test_save_load_round_trip(mix_model, tmp_path, name):
    from sentence_transformers import SentenceTransformer

    model = mix_model(name, num_layers=3)
    perturb_(model[1])  # away from the init, so a re-initialised readout would not pass
    before = model.encode(TEXTS, convert_to_tensor=True)
    model.save(str(tmp_path / "saved"))
    config = json.loads(next((tmp_path / "saved").glob("1_LayerMixPooling/config.json")).read_text())
    assert config == {"embedding_dimension": D, "num_layers": 3, "mode": MODES[name]["mode"],
                      "gate_hidden": MODES[name].get("gate_hidden"), "deep_supervision": False}
    loaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu", trust_remote_code=True)
    assert len(loaded) == 2 and isinstance(loaded[1], LayerMixPooling)
    torch.testing.assert_close(loaded.encode(TEXTS, convert_to_tensor=True), before, atol=0, rtol=0)
    params = dict(loaded[1].named_parameters())
    assert set(params) == TRAINABLE[name] - {n for n in TRAINABLE[name] if n.startswith("heads.")}
    for n, p in params.items():
        assert torch.equal(p, model[1].get_parameter(n)), n
    if name == "deep":  # heads dropped at inference; saving left the trained module's heads in place
        assert loaded[1].heads is None and not loaded[1].deep_supervision
        assert model[1].heads is not None and model[1].deep_supervision
        loaded.train()
        assert "layer_embeddings" not in run(loaded, TEXTS)


@pytest.mark.parametrize("name", ["learned", "deep"])
def test_save_load_round_trip_pytorch_bin(mix_model, tmp_path, name):
    model = mix_model(name)
    perturb_(model[1])
    model[1].save(str(tmp_path), safe_serialization=False)
    assert not (tmp_path / "model.safetensors").exists()
    loaded = LayerMixPooling.load(str(tmp_path))
    assert set(loaded.state_dict()) == {"w"}
    assert torch.equal(loaded.w, model[1].w)


def test_errors(mix_model, backbone):
    from sentence_transformers import SentenceTransformer

    with pytest.raises(ValueError, match=r"mode must be one of \('uniform', 'learned', 'gated'\), got 'max'"):
        LayerMixPooling(D, 4, "max")
    with pytest.raises(ValueError, match="num_layers must be an int >= 1, got 0"):
        LayerMixPooling(D, 0)
    with pytest.raises(ValueError, match="embedding_dimension must be an int >= 1, got 0"):
        LayerMixPooling(0, 4)
    with pytest.raises(ValueError, match="gate_hidden is only used with mode='gated', got gate_hidden=8"):
        LayerMixPooling(D, 4, "learned", gate_hidden=8)
    with pytest.raises(ValueError, match="gate_hidden must be None or an int >= 1, got 0"):
        LayerMixPooling(D, 4, "gated", gate_hidden=0)
    for mode in ("uniform", "gated"):
        with pytest.raises(ValueError, match=f"deep_supervision=True needs mode='learned'.*got mode='{mode}'"):
            LayerMixPooling(D, 4, mode, deep_supervision=True)
    # more layers than the model has: at build time and in forward
    with pytest.raises(ValueError, match=f"num_layers=6 exceeds the model's {N_LAYERS} layers"):
        mix_model("learned", num_layers=6)
    model = mix_model("learned")
    model[1] = LayerMixPooling(D, 6, "learned")
    with pytest.raises(ValueError, match=f"num_layers=6 exceeds the model's {N_LAYERS} layers"):
        model.encode(TEXTS)
    # hidden states not enabled
    base = backbone()
    no_hidden = SentenceTransformer(modules=[base[0], LayerMixPooling(D, 4)], device="cpu")
    with pytest.raises(ValueError, match=r"all_layer_embeddings.*enable_hidden_states"):
        no_hidden.encode(TEXTS)
    enable_hidden_states(base[0])
    assert no_hidden.encode(TEXTS).shape == (len(TEXTS), D)
    with pytest.raises(TypeError, match="transformer must be a sentence-transformers Transformer"):
        enable_hidden_states(base[1])
    with pytest.raises(TypeError, match=r"backbone\[0\] must be a sentence-transformers Transformer, got Pooling"):
        layer_mix_model(SentenceTransformer(modules=[base[1]], device="cpu"), "learned")


def test_layer_mix_model_builds_two_modules(backbone):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize

    base = backbone()
    base = SentenceTransformer(modules=[base[0], base[1], Normalize()], device="cpu")
    assert not base[0].model.config.output_hidden_states
    model = layer_mix_model(base, "gated", num_layers=2, gate_hidden=5)
    assert len(model) == 2 and model[0] is base[0] and isinstance(model[1], LayerMixPooling)
    assert base[0].model.config.output_hidden_states
    assert (model[1].mode, model[1].num_layers, model[1].gate_hidden) == ("gated", 2, 5)
    assert model.device == base.device
    emb = model.encode(TEXTS, convert_to_tensor=True)
    assert emb.shape == (len(TEXTS), D)
    assert not torch.allclose(emb.norm(dim=-1), torch.ones(len(TEXTS)))  # Normalize dropped
    torch.testing.assert_close(emb, run(model, TEXTS)["sentence_embedding"])


def test_import_spherekit_nn_stays_light():
    code = ("import sys, spherekit.nn as nn; assert 'spherekit.nn.readouts' not in sys.modules; "
            "nn.LayerMixPooling; assert 'spherekit.nn.readouts' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
