"""info_nce's CPU path over every tiling it chooses (spherekit.ops._info_nce_cpu.tile_shape): whole-row chunks and
column blocks of a row chunk (the large-bank case), uneven last blocks and targets in the last block, against the
fp64 oracle with every flag (labels, bias, ignored rows, hard negatives in each mode, the temperature gradient). The
tilings shape the streaming path (reduction "none": forward + recomputing backward); with "mean" the same cases run
the chunked one-pass path, which cuts whole rows only."""

from __future__ import annotations


import pytest
import torch

from spherekit.ops import cpu_budget, _info_nce_cpu, info_nce
from tests.ops.test_info_nce import _case, _run_and_compare

# (elements per tile, MIN_ROWS) -> the (rows, columns) tiles they give for B = 23 rows, N = 45 candidates
TILINGS = {"whole-rows": ((1 << 21, 8), (23, 45)), "row-chunks": ((400, 8), (8, 45)),
           "column-blocks": ((23 * 7, 32), (23, 7)), "blocks-of-row-chunks": ((161, 8), (12, 13)),
           "two-columns": ((23 * 2, 32), (23, 2))}


@pytest.fixture(params=sorted(TILINGS))
def tiling(request, monkeypatch):
    (elements, min_rows), _ = TILINGS[request.param]
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", elements)
    monkeypatch.setattr(cpu_budget, "MIN_TILE_ELEMENTS", 0)
    monkeypatch.setattr(_info_nce_cpu, "MIN_ROWS", min_rows)
    return request.param


def test_the_budgets_give_the_tilings_they_are_named_after(tiling):
    assert _info_nce_cpu.tile_shape(23, 45) == TILINGS[tiling][1]


@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_every_tiling_matches_the_oracle(tiling, mode, reduction):
    case = _case(23, 45, 41, 2, seed=3, labels=True, bias=True, ignore=True, targets=True)
    case["targets"][1] = 44  # a target in the last (uneven) block
    _run_and_compare(case, torch.float32, "cpu", hard_negative_mode=mode, reduction=reduction, tau_grad=True)


@pytest.mark.parametrize("reduction", ["none"])
def test_a_wide_frozen_bank_is_read_in_column_blocks(monkeypatch, reduction):
    """A bank too wide for MIN_ROWS whole rows is cut into column blocks that hold every row (B <= MIN_ROWS), on the
    streaming path (reduction "none" or no gradient); a scalar loss with a gradient takes the chunked one-pass path
    instead, whole rows of at least spherekit.ops._chunked_gemm.MIN_ROWS (tests/ops/test_info_nce.py)."""
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", 4096)
    monkeypatch.setattr(cpu_budget, "MIN_TILE_ELEMENTS", 0)
    assert _info_nce_cpu.tile_shape(16, 5000) == (16, 256)
    widths = []
    real = _info_nce_cpu._tile_logits

    def spy(p, r, c0, cb, clb):
        widths.append((r.q.shape[0], cb.shape[0]))
        return real(p, r, c0, cb, clb)

    monkeypatch.setattr(_info_nce_cpu, "_tile_logits", spy)
    case = _case(16, 5000, 24, None, seed=7, targets=True)
    _run_and_compare(case, torch.float32, "cpu", reduction=reduction)
    assert widths and all(rows == 16 and cols <= 256 for rows, cols in widths)


def test_chunked_path_agrees_with_the_streaming_one_over_column_blocks(monkeypatch):
    monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", 29 * 5)
    monkeypatch.setattr(cpu_budget, "MIN_TILE_ELEMENTS", 0)
    monkeypatch.setattr(_info_nce_cpu, "MIN_ROWS", 8)
    case = _case(29, 31, 24, 2, seed=9, ignore=True, labels=True, bias=True)
    q, c, h = (case[k].float().requires_grad_() for k in ("queries", "candidates", "hard_negatives"))
    kw = dict(hard_negative_mode="both", query_labels=case["query_labels"], candidate_labels=case["candidate_labels"],
              label_bias=case["label_bias"].float(), backend="cpu")
    fused = info_nce(q, c, case["targets"], h, **kw)
    g1 = torch.autograd.grad(fused * 0.7, (q, c, h))
    two_pass = info_nce(q, c, case["targets"], h, reduction="none", **kw).sum() / (case["targets"] != -100).sum()
    g2 = torch.autograd.grad(two_pass * 0.7, (q, c, h))
    torch.testing.assert_close(fused, two_pass, atol=1e-6, rtol=1e-6)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_default_tiles_are_large_enough_to_outlast_a_busy_machines_barriers():
    """At the default budgets a B = N = 16,384 problem runs in 16 tiles of 1,024 whole rows (2^24 logits each), not
    128 tiles of 128 rows: each pass over a tile must outlast a scheduler time slice (cpu_budget.MIN_TILE_ELEMENTS)."""
    assert _info_nce_cpu.tile_shape(16384, 16384) == (1024, 16384)
    assert _info_nce_cpu.tile_shape(64, 220_000) == (64, 220_000)  # a DefSent+-size bank: one whole-row tile
