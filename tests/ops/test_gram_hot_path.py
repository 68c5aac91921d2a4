"""The Gram-matrix losses' one-pass path on the CPU side of the proof: SINCERE / SoftCSE do 3 x 2B^2 d matmul FLOPs
forward plus backward, CircularCSE (symmetric residuals) 2 x 2B^2 d, over one chunk or several; neither syncs the
host in the default check mode."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.ops import _chunked_gemm, circular_cse, sincere
from tests.ops._harness import backends
from tests.ops._hot_path import no_host_sync
from tests.ops.test_info_nce_hot_path import _matmul_flops

B, D = 256, 32
LABELS = torch.arange(B) % 7
ANGLES = torch.linspace(0.0, 5.0, 7)


def _embeddings():
    return F.normalize(torch.randn(B, D, generator=torch.Generator().manual_seed(0)), dim=-1).requires_grad_()


LOSSES = {  # name -> (loss of the embeddings on a backend, GEMMs of 2 B^2 d each)
    "sincere": (lambda e, backend: sincere(e, LABELS, temperature=0.1, backend=backend), 3),
    "softcse": (lambda e, backend: sincere(e, LABELS, temperature=0.1, backend=backend,
                                           label_bias=torch.randn(7, 7, generator=torch.Generator().manual_seed(1))),
                3),
    "circular_cse": (lambda e, backend: circular_cse(e, LABELS, ANGLES, margin=0.1, backend=backend), 2),
}


@pytest.mark.parametrize("backend", backends("sincere"))
@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("chunks", [1, 4])
def test_products_are_k_times_2B2d(backend, name, chunks, monkeypatch):
    """The products over the embedding size (not CircularCSE's B x 2 cos/sin table) sum to k x 2B^2 d."""
    monkeypatch.setattr(_chunked_gemm, "MIN_ROWS", 1)
    monkeypatch.setitem(_chunked_gemm.DEFAULT_WORKSPACE_BYTES, "cpu", B // chunks * B * 4)
    loss, products = LOSSES[name]
    e = _embeddings()
    flops, _ = _matmul_flops(lambda: loss(e, backend).backward(), skip_inner=2)
    assert flops == products * 2 * B * B * D


@pytest.mark.parametrize("backend", backends("sincere"))
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_no_host_sync_in_the_default_check_mode(backend, name):
    loss, _ = LOSSES[name]
    e = _embeddings()
    with no_host_sync():
        value = loss(e, backend)
        value.backward()
        with torch.no_grad():
            loss(e, backend)
    assert torch.isfinite(value.detach()) and torch.isfinite(e.grad).all()
