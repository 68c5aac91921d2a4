"""HypersphereHead: pooling, the sentence-transformers pipeline, save/load round trip, freezing."""

import json

import pytest
import torch
import torch.nn.functional as F

from spherekit.nn import HypersphereHead, NGPTBlock, freeze_backbone, pool

TEXTS = ["dirty cup", "a warm blooded vertebrate that feeds its young with milk", "joy", "the price of milk"]


def test_pool_modes_follow_the_mask():
    h = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 1, 0, 0, 0]])  # right, left, single token
    torch.testing.assert_close(pool(h, mask, "cls"), torch.stack([h[0, 0], h[1, 2], h[2, 1]]))
    torch.testing.assert_close(pool(h, mask, "last"), torch.stack([h[0, 2], h[1, 4], h[2, 1]]))
    mean = torch.stack([h[0, :3].mean(0), h[1, 2:].mean(0), h[2, 1]])
    torch.testing.assert_close(pool(h, mask, "mean"), mean)
    torch.testing.assert_close(pool(h, None, "last"), h[:, -1])
    torch.testing.assert_close(pool(h, None, "mean"), h.mean(1))
    with pytest.raises(ValueError, match="pooling must be one of .* got 'max'"):
        pool(h, mask, "max")


@pytest.mark.parametrize("pooling", ["cls", "mean", "last"])
@pytest.mark.parametrize("kind", ["ngpt", "gpt"])
def test_head_pooling_modes(head_model, kind, pooling):
    model = head_model(kind, pooling)
    features = model.preprocess(TEXTS)
    with torch.no_grad():
        out = model(features)
    tokens, e, mask = out["token_embeddings"], out["sentence_embedding"], features["attention_mask"]
    assert tokens.shape == (len(TEXTS), mask.shape[1], 32) and e.shape == (len(TEXTS), 32)
    torch.testing.assert_close(e, F.normalize(pool(tokens, mask, pooling), dim=-1))
    torch.testing.assert_close(e.norm(dim=-1), torch.ones(len(TEXTS)))
    if kind == "ngpt":  # the head's token states are on the sphere
        torch.testing.assert_close(tokens.norm(dim=-1), torch.ones(mask.shape))
    assert model.get_embedding_dimension() == 32


@pytest.mark.parametrize("kind", ["ngpt", "gpt"])
def test_head_is_blocks_over_backbone_tokens(kind):
    """ngpt: blocks over Norm(tokens) (the head starts on the sphere); gpt: over the raw tokens. Token norms
    vary per row so the input normalisation is not a no-op."""
    torch.manual_seed(0)
    head = HypersphereHead(30, kind, "mean", n_heads=5, n_layers=2, d_mlp=41)
    x = torch.randn(3, 6, 30) * torch.rand(3, 6, 1) * 5
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [0] * 3 + [1] * 3])
    with torch.no_grad():
        out = head({"token_embeddings": x, "attention_mask": mask})
        h = F.normalize(x, dim=-1) if kind == "ngpt" else x
        for block in head.blocks:
            h = block(h, mask)
    torch.testing.assert_close(out["token_embeddings"], h)
    torch.testing.assert_close(out["sentence_embedding"], F.normalize(pool(h, mask, "mean"), dim=-1))


def test_head_reads_backbone_shape(head_model):
    head = head_model()[1]
    assert (head.backbone_dim, head.n_heads, head.d_mlp, head.n_layers) == (32, 2, 128, 1)
    assert isinstance(head.blocks[0], NGPTBlock)


def test_head_batch_invariance(head_model):
    """An embedding does not depend on the other, longer texts of its batch (padding)."""
    model = head_model("ngpt", "mean", n_layers=2)
    together = model.encode(TEXTS, convert_to_tensor=True, batch_size=4)
    alone = torch.stack([model.encode([t], convert_to_tensor=True)[0] for t in TEXTS])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind,kwargs", [
    ("ngpt", dict(pooling="cls")),
    ("ngpt", dict(pooling="mean", n_layers=2, output_dim=12, d_mlp=40)),
    ("gpt", dict(pooling="last", causal=True, normalize=False)),
])
def test_save_load_round_trip(head_model, tmp_path, kind, kwargs):
    from sentence_transformers import SentenceTransformer

    model = head_model(kind, seed=3, **kwargs)
    with torch.no_grad():  # move away from the init so a re-initialised head would not pass
        for p in model[1].parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model[1].renormalize_weights_()
    before = model.encode(TEXTS, convert_to_tensor=True)
    model.save(str(tmp_path / "saved"))
    config = json.loads(next((tmp_path / "saved").glob("1_HypersphereHead/config.json")).read_text())
    assert config["kind"] == kind and all(config[k] == v for k, v in kwargs.items())
    loaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu", trust_remote_code=True)
    assert isinstance(loaded[1], HypersphereHead)
    torch.testing.assert_close(loaded.encode(TEXTS, convert_to_tensor=True), before, atol=0, rtol=0)
    for (name, p), q in zip(model[1].state_dict().items(), loaded[1].state_dict().values()):
        assert torch.equal(p, q), name
    assert loaded.get_embedding_dimension() == kwargs.get("output_dim", 32)


def test_ngpt_projection_is_unit_norm_and_renormalised(head_model):
    head = head_model("ngpt", output_dim=12)[1]
    with torch.no_grad():
        head.proj.weight.mul_(3)
    head.renormalize_weights_()
    torch.testing.assert_close(head.proj.weight.norm(dim=1), torch.ones(12))


def test_freeze_backbone(head_model):
    model = head_model()
    n = freeze_backbone(model)
    assert n == len(list(model[0].parameters())) > 0
    assert not any(p.requires_grad for p in model[0].parameters())
    assert all(p.requires_grad for p in model[1].parameters())
    freeze_backbone(model, frozen=False)
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match="no HypersphereHead"):
        freeze_backbone(model[0])


@pytest.mark.parametrize("kwargs,match", [
    (dict(kind="bert"), "kind must be one of"),
    (dict(pooling="max"), "pooling must be one of"),
    (dict(n_layers=0), "n_layers must be an int >= 1, got 0"),
    (dict(output_dim=0), "output_dim must be None or an int >= 1, got 0"),
    (dict(n_heads=5), r"d_model \(32\).*n_heads \(5\)"),
])
def test_head_bad_arguments(kwargs, match):
    kwargs = dict(dict(n_heads=2), **kwargs)
    with pytest.raises(ValueError, match=match):
        HypersphereHead(32, **kwargs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_head(dtype):
    """The paper trains in bf16: a half-precision head keeps its dtype, stays finite and near the sphere."""
    torch.manual_seed(0)
    head = HypersphereHead(32, "ngpt", "last", n_heads=2).to(dtype)
    x = torch.randn(3, 5, 32, requires_grad=True)
    mask = torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [0, 0, 1, 1, 1]])
    e = head({"token_embeddings": x, "attention_mask": mask})["sentence_embedding"]
    assert e.dtype == dtype
    torch.testing.assert_close(e.float().norm(dim=-1), torch.ones(3), atol=1e-2, rtol=0)
    (e.float() * torch.randn(3, 32)).sum().backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in head.parameters())
