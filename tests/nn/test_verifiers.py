"""Verifiers F0..F4: shapes, gradients, masks, equivalences with the ops / oracles / the paper's layout."""

import pytest
import spherekit
import torch
import torch.nn.functional as F

from spherekit import ops
from spherekit.reference.paper_verifier import PaperStyleF4
from spherekit.nn import (CNNVerifier, GlobalAverageVerifier, MaxSimVerifier, PatchTransformerVerifier,
                          SoftAlignVerifier, build_verifier)
from spherekit.reference import sim_map as ref

KINDS = ("F0", "F1", "F2", "F3", "F4")


def small(kind: str, **kw):
    """Small instances (non-power-of-two friendly: patch 4 over 5 x 7 maps leaves partial patches)."""
    torch.manual_seed(0)
    if kind == "F2":
        return SoftAlignVerifier(lam=0.2, tau=0.3, learn_lam=True, learn_tau=True, **kw)
    if kind == "F3":
        return CNNVerifier(channels=4, num_layers=2, mlp_hidden=8, map_size=12, **kw)
    if kind == "F4":
        return PatchTransformerVerifier(patch=4, width=16, num_layers=1, num_heads=2, ff_dim=32, map_size=12, **kw)
    return build_verifier(kind, **kw)


def inputs(B=3, m=5, n=7, h=8, seed=0, K=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, m, h, generator=g)
    qm = torch.ones(B, m, dtype=torch.bool)
    qm[0, 3:] = False
    qm[-1, 4:] = False
    shape = (B, n) if K is None else (B, K, n)
    d = torch.randn(*shape, h, generator=g)
    dm = torch.rand(*shape, generator=g) > 0.3
    dm[..., 0] = True
    return q, qm, d, dm


@pytest.mark.parametrize("kind", KINDS)
def test_shape_gradients_and_padding(kind):
    v = small(kind)
    q, qm, d, dm = inputs()
    q.requires_grad_(True)
    d.requires_grad_(True)
    s = v.score(q, qm, d, dm)
    assert s.shape == (3,) and s.dtype == torch.float32 and torch.isfinite(s).all()
    assert torch.equal(v(q, qm, d, dm), s) or kind in ("F3", "F4")  # train-mode dropout/BN may differ
    (s * torch.tensor([0.5, -1.0, 2.0])).sum().backward()
    for x, mask in ((q, qm), (d, dm)):
        assert torch.isfinite(x.grad).all()
        assert x.grad[mask].abs().sum() > 0
        assert torch.all(x.grad[~mask] == 0), "padding tokens must not influence the score"
    for name, p in v.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    if kind in ("F0", "F1"):
        assert v.num_parameters == 0


def test_f1_equals_maxsim():
    q, qm, d, dm = inputs(seed=1)
    got = MaxSimVerifier().score(q, qm, d, dm)
    # the paper's F1, passed explicitly (the op's defaults are ColBERT's sum of raw similarities)
    torch.testing.assert_close(got, ops.maxsim(q, d, q_mask=qm, d_mask=dm, pairwise=True, normalize=True,
                                               reduction="mean"))
    # by hand: mean over valid query tokens of the best valid document token
    qn, dn = F.normalize(q, dim=-1), F.normalize(d, dim=-1)
    for b in range(3):
        sims = qn[b][qm[b]] @ dn[b][dm[b]].T
        torch.testing.assert_close(got[b], sims.max(1).values.mean(), atol=1e-6, rtol=1e-5)


def test_f0_equals_global_avg_sim():
    q, qm, d, dm = inputs(seed=2)
    got = GlobalAverageVerifier().score(q, qm, d, dm)
    torch.testing.assert_close(got, ops.global_avg_sim(q, d, q_mask=qm, d_mask=dm))
    torch.testing.assert_close(got, ref.global_avg_sim(q, qm, d, dm), atol=1e-6, rtol=1e-5)


def test_f2_matches_oracle_and_learns_positive_tau():
    q, qm, d, dm = inputs(seed=3)
    v = SoftAlignVerifier(lam=0.2, tau=0.3, learn_lam=True, learn_tau=True)
    torch.testing.assert_close(v.score(q, qm, d, dm), ref.soft_align(q, qm, d, dm, lam=0.2, tau=0.3),
                               atol=1e-5, rtol=1e-5)
    assert {n for n, _ in v.named_parameters()} == {"lam", "log_tau"}
    with torch.no_grad():
        v.log_tau.fill_(-50.0)  # any real log_tau is a positive tau
    assert v.tau > 0
    fixed = SoftAlignVerifier()
    assert fixed.num_parameters == 0
    assert float(fixed.lam) == pytest.approx(0.1) and float(fixed.tau) == pytest.approx(0.1)


@pytest.mark.parametrize("kind", KINDS)
def test_score_candidates_equals_paired_calls(kind):
    v = small(kind).eval()
    q, qm, d, dm = inputs(B=3, K=4, seed=4)
    got = v.score_candidates(q, qm, d, dm)
    assert got.shape == (3, 4)
    want = torch.stack([v.score(q, qm, d[:, k], dm[:, k]) for k in range(4)], dim=1)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_score_all_pairs_and_grid(kind):
    v = small(kind).eval()
    q, qm, p, pm = inputs(B=3, seed=5)
    _, _, neg, nm = inputs(B=3, n=4, K=2, seed=6)
    pairs = v.score_all_pairs(q, qm, p, pm)
    want = torch.stack([torch.stack([v.score(q[i:i + 1], qm[i:i + 1], p[j:j + 1], pm[j:j + 1])[0]
                                     for j in range(3)]) for i in range(3)])
    torch.testing.assert_close(pairs, want, atol=1e-5, rtol=1e-5)
    grid = v.score_grid(q, qm, p, pm, neg, nm)
    assert grid.shape == (3, 5)
    torch.testing.assert_close(grid, torch.cat([want, v.score_candidates(q, qm, neg, nm)], 1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(v.score_grid(q, qm, p, pm), want, atol=1e-5, rtol=1e-5)


def test_f4_equals_the_papers_padded_conv_layout():
    v = PatchTransformerVerifier(patch=4, width=16, num_layers=2, num_heads=2, ff_dim=24, map_size=16).eval()
    paper = PaperStyleF4.from_verifier(v).eval()
    q, qm, d, dm = inputs(B=4, m=9, n=11, h=8, seed=7)
    torch.testing.assert_close(v.score(q, qm, d, dm), paper(q, qm, d, dm), atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ("F3", "F4"))
def test_extra_padding_changes_nothing(kind):
    v = small(kind).eval()
    q, qm, d, dm = inputs(seed=8)
    base = v.score(q, qm, d, dm)
    qp, qmp = F.pad(q, (0, 0, 0, 4), value=3.0), F.pad(qm, (0, 4), value=False)
    dp, dmp = F.pad(d, (0, 0, 0, 3), value=-2.0), F.pad(dm, (0, 3), value=False)
    torch.testing.assert_close(v.score(qp, qmp, dp, dmp), base, atol=1e-5, rtol=1e-5)


def test_paper_defaults():
    f4 = PatchTransformerVerifier()
    assert (f4.patch, f4.map_size, f4.embed.out_features, len(f4.encoder.layers)) == (8, 128, 256, 2)
    assert f4.pos_embed.shape == (1 + 16 * 16, 256) and f4.embed.in_features == 8 * 8 * 3
    layer = f4.encoder.layers[0]
    assert (layer.self_attn.num_heads, layer.linear1.out_features, layer.norm_first) == (8, 1024, True)
    f3 = CNNVerifier()
    convs = [m for m in f3.conv if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size) for c in convs] == [(3, 128, (3, 3)), (128, 256, (3, 3))]
    q, qm, d, dm = inputs(B=2, seed=9)
    for v in (f3.eval(), f4.eval()):
        s = v.score(q, qm, d, dm)
        assert s.shape == (2,) and bool((s.abs() < 1).all())  # tanh output


def test_integer_attention_masks_are_accepted():
    q, qm, d, dm = inputs(seed=10)
    v = MaxSimVerifier()
    torch.testing.assert_close(v.score(q, qm.long(), d, dm.int()), v.score(q, qm, d, dm))
    torch.testing.assert_close(v.score(q, None, d, None), v.score(q, torch.ones_like(qm), d, torch.ones_like(dm)))


def test_errors_name_the_argument():
    q, qm, d, dm = inputs()
    v = small("F4")
    with pytest.raises(ValueError, match="map_size=12"):
        v.score(torch.randn(3, 13, 8), None, d, dm)
    with pytest.raises(ValueError, match="q_mask must have shape"):
        v.score(q, qm[:, :2], d, dm)
    with pytest.raises(ValueError, match=r"d_tokens.shape\[-1\]"):
        v.score(q, qm, d[..., :4], dm)
    with pytest.raises(ValueError, match=r"d_tokens.shape\[0\]"):
        v.score(q, qm, d[:2], dm[:2])
    candidates, empty_second = d[:, None].expand(-1, 2, -1, -1), torch.stack([dm, dm & False], 1)
    with spherekit.checks("full"), pytest.raises(ValueError, match=r"d_mask: text \(0, 1\) has no valid token"):
        GlobalAverageVerifier().score_candidates(q, qm, candidates, empty_second)
    # without the full checks (the default: no value is read) an all-padding text scores 0, as in the ops
    fast = GlobalAverageVerifier().score_candidates(q, qm, candidates, empty_second)
    assert torch.equal(fast[:, 1], torch.zeros(3))
    with spherekit.checks("full"), pytest.raises(ValueError, match="0/1"):
        v.score(q, qm.long() * 2, d, dm)
    with pytest.raises(ValueError, match="d_tokens must have 4 dimensions"):
        v.score_candidates(q, qm, d, dm)
    with pytest.raises(ValueError, match="tau"):
        SoftAlignVerifier(tau=0.0)
    with pytest.raises(ValueError, match="kernel_size"):
        CNNVerifier(kernel_size=4)
    with pytest.raises(ValueError, match="multiple of patch"):
        PatchTransformerVerifier(patch=5, map_size=128)
    with pytest.raises(ValueError, match="kind must be one of"):
        build_verifier("F9")
    with pytest.raises(ValueError, match="output"):
        CNNVerifier(output="sigmoid")


@pytest.mark.parametrize("kind", ("F1", "F2", "F3", "F4"))
def test_backend_is_passed_to_the_ops(kind, monkeypatch):
    """backend="triton" (the interpreter on CPU here, the GPU path on CUDA) reaches the op and gives the cpu
    path's scores and gradients."""
    seen = []
    for name in ("maxsim", "soft_align", "sim_map"):
        real = getattr(ops, name)

        def spy(*args, _real=real, **kw):
            seen.append(kw.get("backend"))
            return _real(*args, **kw)

        monkeypatch.setattr(ops, name, spy)
    q, qm, d, dm = inputs(B=2, seed=11)
    out = {}
    for backend in ("cpu", "triton"):
        seen.clear()
        v = small(kind, backend=backend).eval()
        qq, dd = q.clone().requires_grad_(), d.clone().requires_grad_()
        s = v.score(qq, qm, dd, dm)
        s.sum().backward()
        out[backend] = (s, qq.grad, dd.grad)
        assert seen == [backend]
    for a, b in zip(out["cpu"], out["triton"]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
