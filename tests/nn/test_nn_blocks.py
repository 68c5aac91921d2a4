"""NGPTBlock and GPTBlock: the math against float64 oracles written from the equations of "Mapping the Circumplex
of Affect" (arXiv:2601.06575), unit norm, padding invariance, causality, weight renormalisation, gradients and
argument errors."""

import pytest
import torch

from spherekit.nn import GPTBlock, NGPTBlock
from tests.nn import _oracle_blocks as oracle
from tests.ops._harness import backends

BACKENDS = ["reference", *backends("ngpt")]
D, H, DM = 30, 5, 41  # d_head 6, non-power-of-two sizes


def make(kind, causal=False, backend="cpu", seed=0):
    torch.manual_seed(seed)
    if kind == "gpt":
        block = GPTBlock(D, H, DM, causal=causal)
        with torch.no_grad():  # non-trivial RMSNorm gains
            block.norm_attn.weight.uniform_(0.5, 1.5)
            block.norm_mlp.weight.uniform_(0.5, 1.5)
        return block
    block = NGPTBlock(D, H, DM, causal=causal, backend=backend)
    with torch.no_grad():  # non-trivial scales (negative alpha entries: the step is |alpha|)
        for p in (block.alpha_attn, block.alpha_mlp):
            p.raw.uniform_(-2, 4).mul_(p.init_scaling)
        for p in (block.s_qk, block.s_u, block.s_v):
            p.raw.uniform_(0.5, 1.5).mul_(p.init_scaling)
    return block


def padded_batch(b=3, t=7, left=False, seed=1):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([t, 4, 1, 6][:b])
    pos = torch.arange(t)[None]
    mask = (pos >= t - lengths[:, None]) if left else (pos < lengths[:, None])
    return torch.randn(b, t, D, generator=g) * 3, mask.long()


@pytest.mark.parametrize("kind,backend", [("ngpt", b) for b in BACKENDS] + [("gpt", "-")])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_matches_equations(kind, backend, causal, left):
    block = make(kind, causal, backend)
    h, mask = padded_batch(left=left)
    ref_fn = oracle.ngpt_block if kind == "ngpt" else oracle.gpt_block
    if kind == "ngpt":
        h = torch.nn.functional.normalize(h, dim=-1)
    out = block(h, mask)
    expected = ref_fn(block, h, mask)
    real = mask.bool()
    torch.testing.assert_close(out[real].double(), expected[real], atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(out.double(), expected, atol=2e-5, rtol=2e-5)  # padding rows too (finite)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ngpt_output_on_unit_sphere_with_padding(backend):
    block = make("ngpt", backend=backend)
    h, mask = padded_batch()  # raw (not normalised) inputs: the residual normalises
    out = block(h, mask)
    assert out.shape == h.shape and out.dtype == torch.float32
    torch.testing.assert_close(out.norm(dim=-1), torch.ones(h.shape[:2]), atol=1e-5, rtol=0)


def test_ngpt_zero_alpha_is_identity_on_sphere():
    block = make("ngpt")
    with torch.no_grad():
        block.alpha_attn.raw.zero_()
        block.alpha_mlp.raw.zero_()
    h, mask = padded_batch()
    torch.testing.assert_close(block(h, mask), torch.nn.functional.normalize(h, dim=-1), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kind", ["ngpt", "gpt"])
@pytest.mark.parametrize("causal,left", [(False, False), (True, False), (True, True), (False, True)])
def test_padding_does_not_change_real_tokens(kind, causal, left):
    block = make(kind, causal)
    h, mask = padded_batch(left=left)
    out = block(h, mask)
    garbage = torch.where(mask.bool()[..., None], h, torch.randn_like(h) * 100)
    torch.testing.assert_close(block(garbage, mask)[mask.bool()], out[mask.bool()], atol=1e-5, rtol=1e-5)
    for i in range(h.shape[0]):  # each sequence alone, unpadded
        real = mask[i].bool()
        alone = block(h[i:i + 1, real], None)[0]
        torch.testing.assert_close(out[i, real], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["ngpt", "gpt"])
def test_causal_option(kind):
    h, _ = padded_batch(b=1)
    changed = h.clone()
    changed[0, 4] += 1.0
    causal, full = make(kind, causal=True), make(kind, causal=False)
    a, b = causal(h), causal(changed)
    torch.testing.assert_close(a[0, :4], b[0, :4], atol=1e-6, rtol=1e-6)  # earlier tokens do not see token 4
    assert (a[0, 4:] - b[0, 4:]).abs().amax(-1).min() > 1e-4           # later ones do
    assert (full(h)[0, :4] - full(changed)[0, :4]).abs().amax(-1).min() > 1e-4  # bidirectional: all do


def _weight_norms(block):
    return [w.detach().norm(dim=dim) for w, dim in block.unit_norm_weights()]


def test_ngpt_weights_unit_norm_along_embedding_dim():
    block = make("ngpt")
    dims = {name: dim for name, dim in [("qkv", 1), ("attn_out", 0), ("uv", 1), ("mlp_out", 0)]}
    for name, dim in dims.items():
        w = getattr(block, name).weight.detach()
        assert w.shape[dim] == D  # the normalised axis is the embedding dimension
        torch.testing.assert_close(w.norm(dim=dim), torch.ones(w.shape[1 - dim]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_renormalize_weights_restores_unit_norm(backend):
    block = make("ngpt", backend=backend)
    with torch.no_grad():
        for w, _ in block.unit_norm_weights():
            w.mul_(torch.rand_like(w) * 3).add_(torch.randn_like(w) * 0.1)
    assert all((n - 1).abs().max() > 0.05 for n in _weight_norms(block))
    before = [w.detach().clone() for w, _ in block.unit_norm_weights()]
    block.renormalize_weights_()
    for n in _weight_norms(block):
        torch.testing.assert_close(n, torch.ones_like(n), atol=1e-6, rtol=0)
    for (w, dim), old in zip(block.unit_norm_weights(), before):  # direction kept
        torch.testing.assert_close(w.detach(), old / old.norm(dim=dim, keepdim=True), atol=1e-6, rtol=1e-6)


def test_renormalize_weights_is_one_launch(monkeypatch):
    import spherekit.ops as ops

    block, calls, real = make("ngpt"), [], ops.renormalize_
    monkeypatch.setattr(ops, "renormalize_", lambda w, d, **kw: (calls.append((len(w), list(d))), real(w, d, **kw)))
    block.renormalize_weights_()
    assert calls == [(4, [1, 0, 1, 0])]


@pytest.mark.parametrize("kind", ["ngpt", "gpt"])
def test_gradients_finite_and_reach_every_parameter(kind):
    block = make(kind, causal=True)
    h, mask = padded_batch(left=True)  # left padding + causal: padding queries see only themselves
    h.requires_grad_(True)
    out = block(h, mask)
    (out * torch.randn_like(out)).sum().backward()
    assert torch.isfinite(h.grad).all()
    for name, p in block.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_gpt_block_shapes_and_unbounded_norm():
    block = make("gpt")
    h, mask = padded_batch()
    out = block(h, mask)
    assert out.shape == h.shape and out.dtype == h.dtype
    assert not torch.allclose(out.norm(dim=-1), torch.ones(h.shape[:2]))


@pytest.mark.parametrize("cls", [NGPTBlock, GPTBlock])
def test_heads_must_divide_d_model(cls):
    with pytest.raises(ValueError, match=r"d_model \(30\).*n_heads \(4\)"):
        cls(30, 4, 16)


@pytest.mark.parametrize("cls", [NGPTBlock, GPTBlock])
def test_bad_inputs(cls):
    block = cls(D, H, DM)
    with pytest.raises(ValueError, match=r"h must be \(batch, seq_len, d_model=30\), got \(2, 5, 29\)"):
        block(torch.randn(2, 5, 29))
    with pytest.raises(ValueError, match=r"attention_mask must be \(batch, seq_len\) = \(2, 5\), got \(2, 4\)"):
        block(torch.randn(2, 5, D), torch.ones(2, 4))
    with pytest.raises(ValueError, match="d_mlp must be a positive int, got 0"):
        cls(D, H, 0)


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_ngpt_float64_forward_backward(backend):
    """NGPTBlock(...).double() runs forward and backward in float64 (the nGPT ops used to refuse float64), matches
    the float64 oracle far below fp32 precision, and renormalises its float64 weights."""
    block = make("ngpt", backend=backend).double()
    h, mask = padded_batch()
    h = torch.nn.functional.normalize(h.double(), dim=-1).requires_grad_()
    out = block(h, mask)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, oracle.ngpt_block(block, h.detach(), mask), atol=1e-12, rtol=1e-12)
    out.sum().backward()
    grads = [h.grad] + [p.grad for p in block.parameters()]
    assert all(g is not None and g.dtype == torch.float64 and torch.isfinite(g).all() for g in grads)
    block.renormalize_weights_()
    for w, dim in block.unit_norm_weights():
        assert w.dtype == torch.float64
        torch.testing.assert_close(w.detach().norm(dim=dim), torch.ones(w.shape[1 - dim], dtype=torch.float64))


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_ngpt_block_under_cpu_autocast(backend):
    """Under torch.autocast("cpu", bf16) (what a mixed-precision loop runs) the block trains: the fp32 residual
    stream stays fp32 (the bf16 attention / MLP outputs are promoted by geodesic_residual), within bf16 error of the
    fp32 block, every gradient finite and reaching every parameter."""
    block = make("ngpt", backend=backend)
    h, mask = padded_batch()
    h = torch.nn.functional.normalize(h, dim=-1).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = block(h, mask)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, block(h, mask), atol=3e-2, rtol=3e-2)
    (out * torch.randn_like(out)).sum().backward()
    assert torch.isfinite(h.grad).all()
    for name, p in block.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_ngpt_block_compiles_fullgraph():
    """torch.compile(NGPTBlock, fullgraph=True): the nGPT ops trace without a graph break, forward and backward
    match eager."""
    torch._dynamo.reset()
    block = make("ngpt")
    h, mask = padded_batch()
    h = torch.nn.functional.normalize(h, dim=-1)
    compiled = torch.compile(block, fullgraph=True)
    results = []
    for fn in (block, compiled):
        x = h.clone().requires_grad_()
        out = fn(x, mask)
        results.append((out, *torch.autograd.grad(out.sum(), (x, block.alpha_attn.raw))))
    for e, c in zip(*results):
        torch.testing.assert_close(c, e, atol=1e-5, rtol=1e-5)
