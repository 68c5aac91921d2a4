"""Each verifier on a synthetic structural near-miss task (tests/nn/_nearmiss.py): pooled cosine and MaxSim
cannot separate a positive from its role-swapped near-miss; trained map verifiers (F2, F3, F4) can."""

import pytest
import torch

from spherekit.training.verifier import train_verifier
from spherekit.nn import (CNNVerifier, GlobalAverageVerifier, MaxSimVerifier, PatchTransformerVerifier,
                          SoftAlignVerifier)
from tests.nn._nearmiss import make_task, pair_accuracy


@pytest.fixture(scope="module")
def task():
    return make_task(256, seed=1), make_task(400, seed=2)


def test_pooled_average_and_maxsim_are_at_chance(task):
    _, test = task
    for verifier in (GlobalAverageVerifier(), MaxSimVerifier()):
        assert abs(pair_accuracy(verifier, test) - 0.5) < 0.08, type(verifier).__name__


def test_without_noise_f0_and_f1_tie_exactly():
    data = make_task(64, seed=3, noise=0.0)
    for verifier in (GlobalAverageVerifier(), MaxSimVerifier()):
        sp = verifier.score(data.anchors, data.anchor_mask, data.positives, data.positive_mask)
        sn = verifier.score(data.anchors, data.anchor_mask, data.negatives[:, 0], data.negative_mask[:, 0])
        torch.testing.assert_close(sp, sn, atol=1e-5, rtol=0)


TRAINABLE = {
    "F2": (lambda: SoftAlignVerifier(learn_lam=True, learn_tau=True), 3e-2),
    "F3": (lambda: CNNVerifier(channels=8, num_layers=2, mlp_hidden=16, dropout=0.0, map_size=8), 1e-2),
    "F4": (lambda: PatchTransformerVerifier(patch=2, width=16, num_layers=1, num_heads=2, ff_dim=32, dropout=0.0,
                                            map_size=8), 3e-3),
}


@pytest.mark.parametrize("kind", sorted(TRAINABLE))
def test_trained_map_verifiers_beat_chance(kind, task, one_thread):
    train, test = task
    build, lr = TRAINABLE[kind]
    torch.manual_seed(0)
    verifier = build()
    before = pair_accuracy(verifier, test)
    result = train_verifier(verifier, train, batch_size=16, epochs=3, lr=lr, seed=0, progress=False)
    after = pair_accuracy(verifier, test)
    assert result.steps == 48
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert after > 0.85, (before, after)
    assert after > before + 0.2, (before, after)
