"""The verifier-MNRL grid of F3 / F4 from the all-pairs layout of sim_map (spherekit.losses._verifier_grid) equals
the flattened path of Verifier.score_grid (every query and positive copied once per pair): scores, the loss and
the gradients of the tokens and of every verifier parameter; F3 in training mode (BatchNorm statistics over the
whole grid, near-misses included) and eval mode; F4 with H = 0, 1, 2 near-miss columns and ragged masks."""

from __future__ import annotations

import pytest
import torch

from spherekit.losses import verifier_mnrl_loss
from spherekit.losses.verifier_mnrl import score_grid
from spherekit.nn import CNNVerifier, MaxSimVerifier, PatchTransformerVerifier


def _batch(B, m, n, h, H, seed):
    g = torch.Generator().manual_seed(seed)
    q, p = torch.randn(B, m, h, generator=g), torch.randn(B, n, h, generator=g)
    qm, pm = torch.rand(B, m, generator=g) > 0.3, torch.rand(B, n, generator=g) > 0.3
    qm[:, 0] = pm[:, 0] = True
    if H == 0:
        return q, qm, p, pm, None, None
    neg, nm = torch.randn(B, H, n + 2, h, generator=g), torch.rand(B, H, n + 2, generator=g) > 0.3
    nm[..., 0] = True
    return q, qm, p, pm, neg, nm


def _verifier(kind, seed):
    torch.manual_seed(seed)
    if kind == "F3":
        return CNNVerifier(channels=4, num_layers=2, mlp_hidden=8, dropout=0.0, map_size=16, backend="cpu")
    return PatchTransformerVerifier(patch=4, width=16, num_layers=1, num_heads=2, ff_dim=8, dropout=0.0,
                                    map_size=16, backend="cpu")


def _leaves(batch):
    return [None if t is None or not t.is_floating_point() else t.clone().requires_grad_() for t in batch]


@pytest.mark.parametrize("kind,train", [("F3", True), ("F3", False), ("F4", True)])
@pytest.mark.parametrize("H", [0, 1, 2])
def test_all_pairs_grid_equals_the_flattened_grid(kind, train, H, one_thread):
    batch = _batch(4, 7, 9, 12, H, seed=H + 10)
    masks = (batch[1], batch[3], batch[5])
    results = []
    for path in ("all-pairs", "flattened"):
        verifier = _verifier(kind, seed=3).train(train)
        q, _, p, _, neg, _ = _leaves(batch)
        args = (q, masks[0], p, masks[1], neg, masks[2])
        scores = score_grid(verifier, *args) if path == "all-pairs" else verifier.score_grid(*args)
        loss = torch.nn.functional.cross_entropy(scores * 10.0, torch.arange(4))
        tensors = [t for t in (q, p, neg) if t is not None] + list(verifier.parameters())
        *grads, d_scores = torch.autograd.grad(loss, tensors + [scores])
        results.append((scores, loss, grads, d_scores))
    (s1, l1, g1, d_scores), (s2, l2, g2, _) = results
    assert s1.shape == (4, 4 + H)
    torch.testing.assert_close(s1, s2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(l1, l2, atol=1e-5, rtol=1e-5)
    # a conv bias right before BatchNorm (training mode) has gradient 0 in exact arithmetic: only rounding noise is
    # left in it, on both paths; it is checked to be noise, every other gradient to match. The output bias (the
    # last parameter) shifts every score of a row alike up to tanh's slope, so its gradient, a sum over the grid of
    # dL/d(score) that nearly cancels row by row, carries rounding at the scale of those terms, not of its value
    scale = max(float(b.abs().max()) for b in g2)
    fresh = _verifier(kind, seed=3)
    n_params = len(list(fresh.parameters()))
    assert list(fresh.parameters())[-1].shape == (1,)  # the output bias
    zero = _zero_gradient_params(fresh) if train else set()
    for i, (a, b) in enumerate(zip(g1, g2)):
        param = i - (len(g1) - n_params)
        if param in zero:
            assert float(a.abs().max()) <= 1e-3 * scale and float(b.abs().max()) <= 1e-3 * scale
        elif param == n_params - 1:  # summation's typical rounding: sqrt(terms) x eps x the sum of |terms|
            bound = d_scores.numel() ** 0.5 * torch.finfo(torch.float32).eps * float(d_scores.abs().sum())
            torch.testing.assert_close(a, b, atol=bound, rtol=1e-4)
        else:
            torch.testing.assert_close(a, b, atol=1e-5 * scale, rtol=1e-4)


def _zero_gradient_params(verifier) -> set[int]:
    """Indices (in verifier.parameters()) of the biases of convolutions followed by BatchNorm."""
    names = [n for n, _ in verifier.named_parameters()]
    layers = list(getattr(verifier, "conv", []))
    out = set()
    for i, layer in enumerate(layers[:-1]):
        if isinstance(layer, torch.nn.Conv2d) and isinstance(layers[i + 1], torch.nn.BatchNorm2d):
            out.add(names.index(f"conv.{i}.bias"))
    return out

def test_the_loss_uses_the_all_pairs_layout(monkeypatch, one_thread):
    """verifier_mnrl_loss reaches sim_map with all_pairs=True for the in-batch block of F4 (and never the
    flattened Verifier.score_grid)."""
    from spherekit import ops

    calls = []
    real = ops.sim_map
    monkeypatch.setattr(ops, "sim_map", lambda *a, **k: calls.append(k.get("all_pairs", False)) or real(*a, **k))
    verifier = _verifier("F4", seed=1)
    monkeypatch.setattr(type(verifier), "score_grid", lambda *a, **k: pytest.fail("flattened path used"))
    q, qm, p, pm, neg, nm = _batch(3, 5, 6, 12, 1, seed=2)
    loss = verifier_mnrl_loss(verifier, q, qm, p, pm, neg, nm)
    assert torch.isfinite(loss) and calls == [True, False]


def test_map_size_is_checked_on_every_column():
    verifier = _verifier("F4", seed=0)
    q, qm, p, pm, _, _ = _batch(2, 5, 6, 12, 0, seed=0)
    neg, nm = torch.randn(2, 1, 17, 12), torch.ones(2, 1, 17, dtype=torch.bool)
    with pytest.raises(ValueError, match="exceed map_size=16"):
        score_grid(verifier, q, qm, p, pm, neg, nm)
    with pytest.raises(ValueError, match="neg_mask was given without neg_tokens"):
        score_grid(verifier, q, qm, p, pm, None, nm)


def _grid_and_grads(verifier, batch, chunk_rows):
    q, qm, p, pm, neg, nm = batch
    q, p = q.clone().requires_grad_(), p.clone().requires_grad_()
    loss, scores = verifier_mnrl_loss(verifier, q, qm, p, pm, neg, nm, return_scores=True, chunk_rows=chunk_rows)
    return scores, loss, torch.autograd.grad(loss, [q, p, *verifier.parameters()])


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 5])
@pytest.mark.parametrize("H", [0, 1])
def test_chunked_f4_grid_equals_the_whole_grid(chunk_rows, H, one_thread):
    """chunk_rows scores the in-batch block a few query rows at a time under checkpointing: same scores, loss and
    gradients (tokens and every parameter); chunk_rows >= B is the whole block."""
    batch = _batch(5, 6, 7, 12, H, seed=H + 20)
    verifier = _verifier("F4", seed=4).train()
    s1, l1, g1 = _grid_and_grads(verifier, batch, None)
    s2, l2, g2 = _grid_and_grads(verifier, batch, chunk_rows)
    torch.testing.assert_close(s2, s1, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(l2, l1, atol=1e-6, rtol=1e-5)
    for a, b in zip(g2, g1):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_chunked_f4_recomputes_with_the_same_dropout(monkeypatch, one_thread):
    """With dropout on, the checkpointed chunks recompute with the forward's random masks: the gradients equal
    those of the same chunks computed without checkpointing (the same random stream)."""
    from spherekit.losses import _verifier_grid

    batch = _batch(4, 5, 6, 12, 1, seed=30)
    torch.manual_seed(4)
    verifier = PatchTransformerVerifier(patch=4, width=16, num_layers=1, num_heads=2, ff_dim=8, dropout=0.3,
                                        map_size=16, backend="cpu").train()
    torch.manual_seed(0)
    s1, l1, g1 = _grid_and_grads(verifier, batch, 2)
    monkeypatch.setattr(_verifier_grid, "checkpoint", lambda fn, *args, **kwargs: fn(*args))
    torch.manual_seed(0)
    s2, l2, g2 = _grid_and_grads(verifier, batch, 2)
    torch.testing.assert_close(s1, s2)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)
    torch.manual_seed(1)
    assert not torch.equal(_grid_and_grads(verifier, batch, 2)[0], s1)  # dropout is on: another stream differs


def test_chunk_rows_is_checked():
    from spherekit.losses import VerifierMNRLLoss

    batch = _batch(2, 5, 6, 12, 0, seed=0)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="chunk_rows must be a positive int"):
            verifier_mnrl_loss(_verifier("F4", seed=0), *batch, chunk_rows=bad)
    with pytest.raises(ValueError, match=r"map verifiers F3 and F4 .*MaxSimVerifier \(F1\)"):
        verifier_mnrl_loss(MaxSimVerifier(), *batch, chunk_rows=2)
    with pytest.raises(ValueError, match=r"map verifiers F3 and F4 .*MaxSimVerifier"):
        VerifierMNRLLoss(None, MaxSimVerifier(), chunk_rows=2)


def test_chunks_are_scored_and_recomputed_chunk_by_chunk(monkeypatch, one_thread):
    from spherekit.losses import _verifier_grid

    rows, real = [], _verifier_grid._f4_all_pairs
    monkeypatch.setattr(_verifier_grid, "_f4_all_pairs", lambda v, q, *a: rows.append(q.shape[0]) or real(v, q, *a))
    verifier = _verifier("F4", seed=5).train()
    _grid_and_grads(verifier, _batch(5, 6, 7, 12, 1, seed=3), 2)
    assert rows == [2, 2, 1] + [1, 2, 2]  # forward, then each chunk recomputed in backward (last chunk first)
    rows.clear()
    with torch.no_grad():
        verifier_mnrl_loss(verifier, *_batch(5, 6, 7, 12, 1, seed=3), chunk_rows=2)
    assert rows == [2, 2, 1]  # no gradients: no checkpointing, nothing recomputed


def _running_stats(verifier):
    return [b.clone() for b in verifier.buffers()]


def test_f3_with_one_row_chunks_is_the_released_per_query_loop(one_thread):
    """F3 in training mode with chunk_rows = 1: each query row and the near-miss column are separate CNN calls with
    their own BatchNorm statistics, as the released code's loop: the same loss, gradients and running statistics
    (updated once per call: checkpointing does not count the recomputation)."""
    from spherekit.experiments.compositional.bench import _released_loss
    from spherekit.reference.paper_verifier import PaperStyleF3

    q, qm, p, pm, neg, nm = _batch(4, 5, 6, 12, 1, seed=40)
    neg, nm = neg[:, 0, :6], nm[:, 0, :6]
    results = []
    for path in ("chunked", "released"):
        verifier = _verifier("F3", seed=6).train()
        qq, pp = q.clone().requires_grad_(), p.clone().requires_grad_()
        if path == "chunked":
            loss = verifier_mnrl_loss(verifier, qq, qm, pp, pm, neg[:, None], nm[:, None], chunk_rows=1)
        else:
            loss = _released_loss(PaperStyleF3.from_verifier(verifier), qq, qm, pp, pm, neg, nm)
        results.append((loss, torch.autograd.grad(loss, [qq, pp, *verifier.parameters()]), _running_stats(verifier)))
    (l1, g1, r1), (l2, g2, r2) = results
    torch.testing.assert_close(l1, l2, atol=1e-5, rtol=1e-5)
    scale = max(float(g.abs().max()) for g in g2)
    zero = {2 + i for i in _zero_gradient_params(_verifier("F3", seed=6))}
    for i, (a, b) in enumerate(zip(g1, g2)):
        if i not in zero:
            torch.testing.assert_close(a, b, atol=1e-5 * scale, rtol=1e-4)
    for a, b in zip(r1, r2):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert int(r1[-1]) == 4 + 1  # num_batches_tracked of the last BatchNorm: B row calls + the near-miss call


@pytest.mark.parametrize("train", [True, False])
def test_f3_chunks_recompute_without_counting_twice(train, monkeypatch, one_thread):
    """Checkpointed F3 chunks equal the same chunks computed without checkpointing (scores, gradients, running
    statistics); in eval mode (running statistics) they also equal the whole grid in one call."""
    from spherekit.losses import _verifier_grid

    batch = _batch(5, 6, 7, 12, 1, seed=41)
    runs = []
    for mode in ("checkpointed", "plain", "whole"):
        if mode == "plain":
            monkeypatch.setattr(_verifier_grid, "checkpoint", lambda fn, *args, **kwargs: fn(*args))
        verifier = _verifier("F3", seed=7).train(train)
        torch.manual_seed(0)
        scores, loss, grads = _grid_and_grads(verifier, batch, None if mode == "whole" else 2)
        runs.append((scores, grads, _running_stats(verifier)))
    (s1, g1, r1), (s2, g2, r2), (s3, g3, r3) = runs
    torch.testing.assert_close(s1, s2)
    for a, b in zip([*g1, *r1], [*g2, *r2]):
        torch.testing.assert_close(a, b)
    if not train:
        torch.testing.assert_close(s1, s3, atol=1e-6, rtol=1e-5)
    else:  # per-chunk statistics: other scores than one call over the whole grid, and 3 + 1 calls counted
        assert not torch.allclose(s1, s3, atol=1e-4) and int(r1[-1]) == 4 and int(r3[-1]) == 1
