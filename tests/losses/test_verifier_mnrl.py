"""Verifier MNRL: the loss equals a hand-computed cross-entropy; the candidate grid layout; frozen vs
end-to-end gradients; the trainer."""

import math

import pytest
import torch
import torch.nn.functional as F

from spherekit.training.verifier import TokenTriplets, train_verifier
from spherekit.losses import VerifierMNRLLoss, verifier_mnrl_loss
from spherekit.nn import GlobalAverageVerifier, MaxSimVerifier, PatchTransformerVerifier, SoftAlignVerifier


def _maxsim_by_hand(q, d):
    """(1/m) sum_i max_j cos(q_i, d_j) with plain Python loops over tokens."""
    total = 0.0
    for qi in q:
        total += max(float(F.cosine_similarity(qi, dj, dim=0)) for dj in d)
    return total / len(q)


def test_loss_equals_hand_computed_cross_entropy():
    g = torch.Generator().manual_seed(0)
    q, p, n = torch.randn(2, 3, 4, generator=g), torch.randn(2, 2, 4, generator=g), torch.randn(2, 1, 2, 4, generator=g)
    scale = 7.0
    loss = verifier_mnrl_loss(MaxSimVerifier(), q, None, p, None, n, None, scale=scale)
    total = 0.0
    for i in range(2):
        cands = [p[0], p[1], n[i, 0]]  # both positives (one in-batch negative) and the query's own near-miss
        logits = [scale * _maxsim_by_hand(q[i], c) for c in cands]
        total += math.log(sum(math.exp(x) for x in logits)) - logits[i]
    assert float(loss) == pytest.approx(total / 2, rel=1e-5, abs=1e-6)


def test_grid_layout_and_masks():
    g = torch.Generator().manual_seed(1)
    q, p, n = torch.randn(3, 4, 6, generator=g), torch.randn(3, 5, 6, generator=g), torch.randn(3, 2, 3, 6, generator=g)
    qm = torch.ones(3, 4, dtype=torch.bool)
    qm[1, 2:] = False
    pm = torch.ones(3, 5, dtype=torch.bool)
    pm[2, 1:] = False
    nm = torch.ones(3, 2, 3, dtype=torch.bool)
    nm[0, 1, 2] = False
    v = SoftAlignVerifier()
    loss, grid = verifier_mnrl_loss(v, q, qm, p, pm, n, nm, scale=3.0, return_scores=True)
    assert grid.shape == (3, 5)
    for i in range(3):
        for j in range(3):
            want = v.score(q[i:i + 1], qm[i:i + 1], p[j:j + 1], pm[j:j + 1])[0]
            torch.testing.assert_close(grid[i, j], want, atol=1e-6, rtol=1e-5)
        for k in range(2):
            want = v.score(q[i:i + 1], qm[i:i + 1], n[i, k][None], nm[i, k][None])[0]
            torch.testing.assert_close(grid[i, 3 + k], want, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(loss, F.cross_entropy(3.0 * grid, torch.arange(3)))
    # no near-misses: in-batch negatives only
    loss0, grid0 = verifier_mnrl_loss(v, q, qm, p, pm, scale=3.0, return_scores=True)
    torch.testing.assert_close(grid0, grid[:, :3])


def test_learnable_scale_and_validation():
    g = torch.Generator().manual_seed(2)
    q, p = torch.randn(3, 4, 6, generator=g), torch.randn(3, 4, 6, generator=g)
    loss_fn = VerifierMNRLLoss(None, GlobalAverageVerifier(), scale=5.0, learn_scale=True)
    assert float(loss_fn.scale.detach()) == pytest.approx(5.0)
    loss_fn.compute_loss_from_token_embeddings([q, p], [torch.ones(3, 4, dtype=torch.bool)] * 2).backward()
    assert loss_fn.log_scale.grad is not None and loss_fn.log_scale.grad != 0
    assert VerifierMNRLLoss(None, GlobalAverageVerifier()).get_config_dict()["learn_scale"] is False
    for bad in (0.0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="scale"):
            verifier_mnrl_loss(GlobalAverageVerifier(), q, None, p, None, scale=bad)
    with pytest.raises(ValueError, match="neg_mask"):
        verifier_mnrl_loss(GlobalAverageVerifier(), q, None, p, None, None, torch.ones(3, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="model=None"):
        loss_fn([{}, {}])


def _small_f4():
    torch.manual_seed(0)
    return PatchTransformerVerifier(patch=2, width=16, num_layers=1, num_heads=2, ff_dim=16, dropout=0.0, map_size=32)


TEXTS = [
    ("the cup is dirty", "the cup is dirty", "the cup is not dirty"),
    ("she drove to work", "she drove to work", "work drove to she"),
    ("prices rise", "prices rise", "prices decrease"),
    ("a warm blooded animal", "a warm blooded animal", "a cold blooded animal"),
]


@pytest.mark.parametrize("freeze", (True, False))
def test_end_to_end_gradients_reach_the_encoder_only_when_unfrozen(tiny_model, freeze, one_thread):
    verifier = _small_f4()
    loss_fn = VerifierMNRLLoss(tiny_model, verifier, freeze_encoder=freeze)
    features = [tiny_model.preprocess([row[c] for row in TEXTS]) for c in range(3)]
    loss_fn(features).backward()
    assert all(p.grad is not None for p in verifier.parameters())
    enc_grads = [p.grad for p in tiny_model.parameters() if p.grad is not None]
    if freeze:
        assert enc_grads == []
    else:
        assert enc_grads and sum(float(gr.abs().sum()) for gr in enc_grads) > 0


def test_train_verifier_end_to_end_and_frozen(tiny_model, one_thread):
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    verifier = _small_f4()
    v_before = {k: v.clone() for k, v in verifier.state_dict().items()}
    result = train_verifier(verifier, TEXTS, encoder=tiny_model, freeze_encoder=False, batch_size=2, epochs=1,
                            encoder_lr=1e-3, progress=False)
    assert result.steps == 2 and all(math.isfinite(h["loss"]) for h in result.history)
    assert any(not torch.equal(before[k], v) for k, v in tiny_model.state_dict().items())
    assert any(not torch.equal(v_before[k], v) for k, v in verifier.state_dict().items())
    # frozen with texts: encoded once up front, the encoder never changes
    frozen_before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    result = train_verifier(_small_f4(), TEXTS, encoder=tiny_model, freeze_encoder=True, batch_size=2, progress=False)
    assert result.steps == 2
    assert all(torch.equal(frozen_before[k], v) for k, v in tiny_model.state_dict().items())


def test_train_verifier_with_chunked_rows_trains_the_same(tiny_model, monkeypatch, one_thread):
    from spherekit.losses import _verifier_grid

    rows, real = [], _verifier_grid._f4_all_pairs
    monkeypatch.setattr(_verifier_grid, "_f4_all_pairs", lambda v, q, *a: rows.append(q.shape[0]) or real(v, q, *a))
    data = TokenTriplets.from_texts(tiny_model, [r[0] for r in TEXTS], [r[1] for r in TEXTS], [r[2:] for r in TEXTS])
    runs = []
    for chunk_rows in (None, 1):
        verifier = _small_f4()
        result = train_verifier(verifier, data, batch_size=4, epochs=3, progress=False, chunk_rows=chunk_rows)
        runs.append(([h["loss"] for h in result.history], verifier.state_dict()))
    assert rows == [4] * 3 + [1] * 4 * 2 * 3  # whole blocks, then one-row chunks (forward and recompute) per step
    assert runs[0][0] == pytest.approx(runs[1][0], rel=1e-5) and len(runs[0][0]) == 3
    # AdamW turns a gradient that is 0 up to rounding (masked patches' positions) into a step of up to lr in an
    # arbitrary direction, so the weights agree to 3 steps x lr 1e-4, not to rounding
    for k, v in runs[0][1].items():
        torch.testing.assert_close(runs[1][1][k], v, atol=3e-4, rtol=0)


def test_token_triplets_from_texts_and_trainer_errors(tiny_model):
    data = TokenTriplets.from_texts(tiny_model, [r[0] for r in TEXTS], [r[1] for r in TEXTS], [r[2:] for r in TEXTS])
    assert len(data) == 4 and data.negatives.shape[:2] == (4, 1) and data.negatives.shape[-1] == 32
    q, qm, p, pm, n, nm = data.batch(torch.tensor([0, 2]))
    assert q.shape[1] == int(qm.sum(1).max()) and n.shape[:2] == (2, 1)  # trimmed to the longest text
    # nothing to learn: parameter-free verifier, frozen encoder
    assert train_verifier(MaxSimVerifier(), data, progress=False).steps == 0
    with pytest.raises(ValueError, match="needs an encoder"):
        train_verifier(_small_f4(), TEXTS)
    with pytest.raises(ValueError, match="end-to-end"):
        train_verifier(_small_f4(), data, freeze_encoder=False)
    with pytest.raises(ValueError, match="same number"):
        TokenTriplets.from_texts(tiny_model, ["a", "b"], ["a", "b"], [["x"], ["y", "z"]])
