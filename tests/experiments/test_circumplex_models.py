"""The encoder of "Mapping the Circumplex of Affect": unit-sphere outputs, nGPT renormalisation, a frozen backbone
that stays frozen and in eval mode, save / load, and the token-state cache, whose training run equals the uncached
one."""

import pytest
import torch
from transformers import TrainerCallback

from spherekit.experiments.circumplex.cache import CachedTokenStates, TokenStateCache, cache_key
from spherekit.experiments.circumplex.models import (FrozenBackboneModel, build_loss, build_model, callbacks,
                                                     to_uncached)
from spherekit.training.trainer import TrainConfig, train
from spherekit.nn import unit_norm_weights
from tests.losses._tiny_model import tiny_vocab

ANGLES = [0.0, 90.0, 180.0, 270.0]
TEXTS = ["joy", "so happy today", "i feel thrilled with joy", "what a nice sunny day at the office",
         "i took the car", "work", "prices rise", "the weather is sunny",
         "sad", "i feel so sad and grim", "death", "a cold place",
         "dirty cup", "clean plate", "it is not nice", "they drove to work in the cold car"]
LABELS = [i // 4 for i in range(16)]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    """A random BERT (hidden 32, 2 layers, 4 heads, dropout 0.1) and its WordPiece tokenizer."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("circumplex_bert")
    vocab = tiny_vocab()
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True).save_pretrained(path)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=64, pad_token_id=0)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    return path


def backbone(path, max_seq_length=24):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(str(path), max_seq_length=max_seq_length)
    return SentenceTransformer(modules=[transformer, Pooling(32, "mean")], device="cpu")


def dataset():
    return pytest.importorskip("datasets").Dataset.from_dict({"text": TEXTS, "label": LABELS})


CFG = TrainConfig(steps=4, batch_size=4, lr=1e-3, schedule="constant", weight_decay=0.0, logging_steps=1, seed=0)


def fit(model, head, out, loss="circularcse", extra=()):
    result = train(model, dataset(), build_loss(model, loss, ANGLES), CFG, out,
                   callbacks=[*callbacks(head), *extra], progress=False)
    return [row["loss"] for row in result.log_history if "loss" in row]


@pytest.mark.parametrize("head", ["gpt", "ngpt", "none"])
def test_embeddings_on_the_unit_sphere(hf_dir, head):
    model = build_model(backbone(hf_dir), head=head, pooling="cls", frozen=True, seed=0)
    emb = model.encode(TEXTS, convert_to_tensor=True)
    assert emb.shape == (16, 32)
    torch.testing.assert_close(emb.norm(dim=-1), torch.ones(16), atol=1e-5, rtol=0)
    if head != "none":
        again = build_model(backbone(hf_dir), head=head, pooling="cls", frozen=True, seed=0)
        torch.testing.assert_close(again.encode(TEXTS, convert_to_tensor=True), emb)  # seeded head init


class ModeProbe(TrainerCallback):
    """Records, at every step end, whether any backbone submodule and any head submodule is in train mode."""

    def __init__(self):
        self.backbone, self.head = [], []

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.backbone.append(any(m.training for m in model[0].modules()))
        self.head.append(any(m.training for m in model[-1].modules()))


def test_frozen_backbone_unchanged_and_in_eval_mode_ngpt_weights_unit_norm(hf_dir, tmp_path):
    model = build_model(backbone(hf_dir), head="ngpt", pooling="cls", frozen=True, seed=0)
    assert isinstance(model, FrozenBackboneModel)
    assert model[0].auto_model.config.hidden_dropout_prob > 0  # eval mode matters for this backbone
    before = {k: v.clone() for k, v in model[0].state_dict().items()}
    head_before = {k: v.clone() for k, v in model[-1].state_dict().items()}
    probe = ModeProbe()
    losses = fit(model, "ngpt", tmp_path, extra=[probe])
    assert len(losses) == 4 and probe.backbone == [False] * 4 and probe.head == [True] * 4
    for k, v in model[0].state_dict().items():
        assert torch.equal(v, before[k]), k
    assert any(not torch.equal(v, head_before[k]) for k, v in model[-1].state_dict().items())
    pairs = unit_norm_weights(model)
    assert len(pairs) >= 4  # attention in, attention out, MLP in, MLP out
    for w, dim in pairs:
        torch.testing.assert_close(w.norm(dim=dim), torch.ones_like(w.norm(dim=dim)), atol=1e-5, rtol=0)


def test_unfrozen_backbone_trains(hf_dir, tmp_path):
    model = build_model(backbone(hf_dir), head="gpt", pooling="mean", frozen=False, seed=0)
    before = model[0].auto_model.embeddings.word_embeddings.weight.clone()
    fit(model, "gpt", tmp_path, loss="sincere")
    assert not torch.equal(model[0].auto_model.embeddings.word_embeddings.weight, before)


def test_save_load_round_trip(hf_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = build_model(backbone(hf_dir), head="ngpt", pooling="last", frozen=True, seed=1)
    fit(model, "ngpt", tmp_path / "run")
    model.save(str(tmp_path / "saved"))
    loaded = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True, device="cpu")
    torch.testing.assert_close(loaded.encode(TEXTS, convert_to_tensor=True),
                               model.encode(TEXTS, convert_to_tensor=True), atol=1e-6, rtol=0)


@pytest.mark.parametrize("head, loss", [("ngpt", "circularcse"), ("gpt", "softcse")])
def test_cached_training_equals_uncached(hf_dir, tmp_path, head, loss):
    """float32 storage: the same per-step losses and the same final embeddings (to float32 rounding: the cache
    encodes in other batches than training, which changes BLAS blocking only)."""
    from sentence_transformers import SentenceTransformer

    plain = build_model(backbone(hf_dir), head=head, pooling="cls", frozen=True, seed=0)
    losses = fit(plain, head, tmp_path / "plain", loss)

    cache = TokenStateCache.load_or_build(backbone(hf_dir), TEXTS, tmp_path / "cache", dtype="float32", batch_size=3)
    cached = build_model(CachedTokenStates(cache), head=head, pooling="cls", frozen=True, seed=0, device="cpu")
    cached_losses = fit(cached, head, tmp_path / "cached", loss)
    assert cached_losses == pytest.approx(losses, abs=1e-5, rel=0)
    emb = plain.encode(TEXTS, convert_to_tensor=True)
    torch.testing.assert_close(cached.encode(TEXTS, convert_to_tensor=True), emb, atol=1e-5, rtol=0)

    # the trainer's checkpoint holds a pointer to the cache: it reloads (resuming works) and encodes the same
    ckpt = SentenceTransformer(str(tmp_path / "cached" / "trainer" / "checkpoint-4"), trust_remote_code=True,
                               device="cpu")
    assert isinstance(ckpt[0], CachedTokenStates) and ckpt[0].cache.path == cache.path
    torch.testing.assert_close(ckpt.encode(TEXTS, convert_to_tensor=True), emb, atol=1e-5, rtol=0)

    # the trained head behind the real backbone: saved and reloaded, it encodes as the uncached model
    real = to_uncached(cached, backbone(hf_dir))
    real.save(str(tmp_path / "saved"))
    loaded = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True, device="cpu")
    torch.testing.assert_close(loaded.encode(TEXTS, convert_to_tensor=True), emb, atol=1e-5, rtol=0)


@pytest.mark.parametrize("dtype, tol", [("float16", 1e-3), ("bfloat16", 1e-2)])
def test_half_precision_cache_is_close(hf_dir, tmp_path, dtype, tol):
    """Half storage rounds each state by <= 2^-11 (float16) / 2^-8 (bfloat16) relative; after 4 steps the
    losses and embeddings stay within `tol` of the float32 run (measured: float16 6e-5 / 2e-4, bfloat16
    2e-4 / 1.2e-3 for losses / embeddings; the float32 cache matched the uncached run bit for bit)."""
    runs = {}
    for name in ("float32", dtype):
        cache = TokenStateCache.load_or_build(backbone(hf_dir), TEXTS, tmp_path / "cache", dtype=name)
        model = build_model(CachedTokenStates(cache), head="ngpt", pooling="mean", frozen=True, seed=0, device="cpu")
        runs[name] = (fit(model, "ngpt", tmp_path / name), model.encode(TEXTS, convert_to_tensor=True))
    assert runs[dtype][0] == pytest.approx(runs["float32"][0], abs=tol, rel=0)
    torch.testing.assert_close(runs[dtype][1], runs["float32"][1], atol=tol, rtol=0)


def test_cache_batches_are_the_backbone_states(hf_dir):
    """Real tokens hold the backbone's states, padding is zero, the mask is the tokenizer's, on either side.
    (BERT's absolute positions make left-padded states depend on the padding: the reference is then each
    text alone, and the cache is built one text per batch.)"""
    batch = TEXTS[:5]
    for side, batch_size in (("right", 5), ("left", 1)):
        model = backbone(hf_dir)
        model.eval()
        model[0].tokenizer.padding_side = side
        cache = TokenStateCache.build(model, TEXTS, dtype="float32", batch_size=batch_size)
        with torch.inference_mode():
            mask_ref = model.preprocess(batch)["attention_mask"]
            alone = [model[0](model.preprocess([t]))["token_embeddings"][0] for t in batch]
        h, mask = cache.batch(cache.lookup(batch))
        assert torch.equal(mask, mask_ref)
        t_max = mask.shape[1]
        for row, states in enumerate(alone):
            n = states.shape[0]
            real = slice(0, n) if side == "right" else slice(t_max - n, t_max)
            torch.testing.assert_close(h[row, real], states, atol=1e-5, rtol=0)
        assert torch.all(h[~mask.bool()] == 0)


def test_cache_key_and_reuse(hf_dir, tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    first = TokenStateCache.load_or_build(backbone(hf_dir), TEXTS, folder, dtype="float16")
    monkeypatch.setattr(TokenStateCache, "build", classmethod(lambda *a, **k: pytest.fail("rebuilt")))
    again = TokenStateCache.load_or_build(backbone(hf_dir), list(reversed(TEXTS)) + TEXTS[:3], folder, dtype="float16")
    assert again.path == first.path and torch.equal(again.states, first.states) and again.texts == first.texts
    monkeypatch.undo()

    keys = {cache_key(TokenStateCache.spec_for(backbone(hf_dir), TEXTS, "float16"))}
    assert keys == {first.path.name}
    other_length = backbone(hf_dir, max_seq_length=8)
    other_weights = backbone(hf_dir)
    with torch.no_grad():
        other_weights[0].auto_model.encoder.layer[1].output.dense.weight[0, 0] += 1.0
    for model, dtype, texts in [(other_length, "float16", TEXTS), (other_weights, "float16", TEXTS),
                                (backbone(hf_dir), "bfloat16", TEXTS), (backbone(hf_dir), "float16", TEXTS[:-1])]:
        keys.add(cache_key(TokenStateCache.spec_for(model, texts, dtype)))
    assert len(keys) == 5
    short = TokenStateCache.load_or_build(other_length, TEXTS, folder, dtype="float16")
    assert short.path != first.path and int(short.lengths.max()) <= 8 < int(first.lengths.max())
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.path.name, short.path.name])


def test_unknown_text_and_bad_arguments(hf_dir, tmp_path):
    cache = TokenStateCache.load_or_build(backbone(hf_dir), TEXTS, tmp_path / "cache", dtype="float32")
    model = build_model(CachedTokenStates(cache), head="gpt", pooling="cls", frozen=True, seed=0, device="cpu")
    with pytest.raises(KeyError, match="not a cached text"):
        model.encode(["joy", "not a cached text"])
    with pytest.raises(ValueError, match="frozen"):
        build_model(CachedTokenStates(cache), head="gpt", pooling="cls", frozen=False, seed=0)
    with pytest.raises(ValueError, match="head"):
        build_model(backbone(hf_dir), head="mlp", pooling="cls", frozen=True, seed=0)
    with pytest.raises(ValueError, match="pooling"):
        build_model(backbone(hf_dir), head="gpt", pooling="max", frozen=True, seed=0)
    with pytest.raises(ValueError, match="dropout"):
        build_model(backbone(hf_dir), head="gpt", pooling="cls", frozen=True, seed=0, dropout=1.5)
    with pytest.raises(ValueError, match="loss"):
        build_loss(model, "infonce", ANGLES)
    with pytest.raises(ValueError, match="label_angles_deg"):
        build_loss(model, "circularcse", [])
    with pytest.raises(ValueError, match="dtype"):
        TokenStateCache.load_or_build(backbone(hf_dir), TEXTS, tmp_path / "cache", dtype="int8")
    with pytest.raises(ValueError, match="differs in"):
        to_uncached(model, backbone(hf_dir, max_seq_length=8))
    assert [type(c).__name__ for c in callbacks("ngpt")] == ["RenormalizeCallback"] and callbacks("gpt") == []
