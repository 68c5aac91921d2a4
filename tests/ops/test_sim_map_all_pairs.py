"""sim_map(..., all_pairs=True), the B_q x B_d grid of maps of a verifier MNRL loss, against the fp64 oracle
(spherekit.reference.sim_map.sim_map(all_pairs=True)): maps and patch sequences, channel combinations, ragged masks,
sizes off the block and patch grids, Bq != Bd, Bd = 1, fp32 / fp16 (cpu and the triton interpreter), bf16 and fp64
on cpu, values and both gradients under the project rule (<= 2x the same-precision torch error); the grid equals
the paired op on explicitly repeated inputs; the all-pairs patch mask; the cpu backend's chunks hold whole query
rows and no token sequence is copied per pair.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch

from spherekit.ops import _sim_map_cpu, sim_map, sim_map_patch_mask
from spherekit.reference import sim_map as ref
from tests.ops._harness import backends, compare
from tests.ops._sim_map_cases import need_triton, ragged_mask, small_cpu_chunks, tokens  # noqa: F401

ALL = ("sim", "rowmax", "colmax")
CASES = [  # (Bq, Bd, m, n, h), patch, channels
    ((3, 4, 13, 11, 24), None, ("sim",)),
    ((3, 2, 9, 17, 16), 4, ALL),
    ((2, 1, 1, 9, 8), 2, ("colmax", "sim")),
    ((1, 3, 6, 1, 8), None, ALL),
    ((2, 3, 8, 8, 16), 8, ("rowmax",)),
]


@pytest.fixture(autouse=True)
def _chunks(small_cpu_chunks):  # noqa: F811
    pass


def _grid_case(shape, seed, *, unit_dtype=None):
    Bq, Bd, m, n, h = shape
    q, d = tokens(Bq, m, h, seed=seed), tokens(Bd, n, h, seed=seed + 2)
    if unit_dtype is not None:  # unit tokens exactly representable in unit_dtype (the argmax of both sides agree)
        q = torch.nn.functional.normalize(q, dim=-1).to(unit_dtype).double()
        d = torch.nn.functional.normalize(d, dim=-1).to(unit_dtype).double()
    return dict(q=q, q_mask=ragged_mask(Bq, m, seed=seed + 1), d=d, d_mask=ragged_mask(Bd, n, seed=seed + 3))


def _oracle(**kw):
    def fn(*args, **kwargs):
        out = ref.sim_map(*args, **kw, all_pairs=True, **kwargs)
        return out.squeeze(-1) if kw.get("patch") is None and len(kw["channels"]) == 1 else out
    return fn


@pytest.mark.parametrize("backend,dtype", [("cpu", torch.float32), ("cpu", torch.float16), ("cpu", torch.bfloat16),
                                           ("triton", torch.float32), ("triton", torch.float16),
                                           ("reference", torch.float32)])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-p{c[1]}-{'+'.join(c[2])}")
def test_all_pairs_values_and_grads(backend, dtype, case):
    if backend == "triton":
        need_triton("sim_map")
    shape, patch, channels = case
    kw = dict(patch=patch, channels=channels, clip=True)
    seed = 3 * shape[2] + shape[3]
    has_max = any(c != "sim" for c in channels)
    half = dtype in (torch.float16, torch.bfloat16)
    op = partial(sim_map, **kw, all_pairs=True, backend=backend)
    out = compare(op, _oracle(**kw), _grid_case(shape, seed), dtype, ("q", "d"), check_grads=not (half and has_max))
    Bq, Bd, m, n, _ = shape
    C = len(channels)
    if patch is None:
        assert out.shape == ((Bq, Bd, m, n) if C == 1 else (Bq, Bd, m, n, C))
    else:
        assert out.shape == (Bq, Bd, -(-m // patch) * -(-n // patch), patch * patch * C)
    assert out.dtype == dtype
    if half and has_max:  # the argmax of a row must be the oracle's: unit tokens exact in this dtype
        compare(partial(sim_map, **kw, normalize=False, all_pairs=True, backend=backend),
                _oracle(**kw, normalize=False), _grid_case(shape, seed, unit_dtype=dtype), dtype, ("q", "d"))


@pytest.mark.parametrize("backend", backends("sim_map"))
def test_all_pairs_equals_the_paired_op_on_repeated_inputs(backend):
    """grid[a, b] == sim_map(q[a], d[b]) paired: the layout, not only the values, is the paired op's."""
    if backend == "triton":
        need_triton("sim_map")
    x = _grid_case((3, 4, 7, 10, 16), seed=21)
    q, qm, d, dm = x["q"].float(), x["q_mask"], x["d"].float(), x["d_mask"]
    for patch in (None, 3):
        grid = sim_map(q, d, q_mask=qm, d_mask=dm, patch=patch, channels=ALL, all_pairs=True, backend=backend)
        qq, qqm = q.repeat_interleave(4, 0), qm.repeat_interleave(4, 0)
        dd, ddm = d.repeat(3, 1, 1), dm.repeat(3, 1)
        paired = sim_map(qq, dd, q_mask=qqm, d_mask=ddm, patch=patch, channels=ALL, backend=backend)
        torch.testing.assert_close(grid.flatten(0, 1), paired, atol=1e-6, rtol=0)


def test_all_pairs_float64_gradcheck():
    x = _grid_case((2, 3, 4, 5, 6), seed=11)
    q, d = x["q"].requires_grad_(), x["d"].requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q_, d_: sim_map(q_, d_, q_mask=x["q_mask"], d_mask=x["d_mask"], patch=3, channels=ALL, all_pairs=True,
                               backend="cpu"), (q, d))


def test_all_pairs_patch_mask():
    qm = torch.tensor([[True, True, False, False, False], [True, False, False, False, True]])
    dm = torch.tensor([[True, False, False], [False, False, True], [True, True, True]])
    got = sim_map_patch_mask(qm, dm, 2, all_pairs=True)  # (2, 3, 3 x 2 patches)
    assert got.shape == (2, 3, 6)
    for a in range(2):
        for b in range(3):
            assert torch.equal(got[a, b], sim_map_patch_mask(qm[a:a + 1], dm[b:b + 1], 2)[0])
    assert torch.equal(got, ref.sim_map_patch_mask(qm, dm, 2, all_pairs=True))


def test_all_pairs_cpu_chunks_hold_whole_query_rows_and_copy_no_sequence():
    """Each chunk is (query rows a0..a1) x (every document): pairs a0*Bd..a1*Bd; its q / d slices are views of
    the inputs (no per-pair copy)."""
    Bq, Bd, m, n, h = 5, 3, 4, 6, 8
    q, d = torch.randn(Bq, m, h), torch.randn(Bd, n, h)
    qm, dm = torch.ones(Bq, m, dtype=torch.bool), torch.ones(Bd, n, dtype=torch.bool)
    chunks = list(_sim_map_cpu._pair_chunks(q, qm, d, dm, True, 2 * Bd, torch.float32))
    assert [(c[0], c[1], c[2], c[3]) for c in chunks] == [(0, 6, 0, 2), (6, 12, 2, 4), (12, 15, 4, 5)]
    for p0, p1, a0, a1, qc, dc, sims, valid in chunks:
        assert qc.data_ptr() == q[a0].data_ptr() and dc.data_ptr() == d.data_ptr()
        assert sims.shape == (p1 - p0, m, n) and valid.shape == (p1 - p0, m, n)
