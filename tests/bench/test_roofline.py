"""The roofline table of the GPU goal rows (spherekit.bench.roofline): the committed CSV and docs section match the
module, and its rows count what the docstring says (hand-computed here for the goal shapes)."""

from __future__ import annotations

import pytest

from spherekit.bench import roofline as R

H200 = R.LAST_H200


def test_committed_table_and_docs_section_are_current():
    assert R.check() == []


def test_info_nce_chunked_row():
    B = N = 16384
    d, es, rows = 768, 2, 1024  # the goal row: a 32 MiB bf16 chunk of 1,024 query rows
    r = R.row("info_nce ws=32MiB dc=input")
    assert r.kind == "goal" and r.useful_flops == 3 * 2 * B * N * d == r.flops  # 3 x 2BNd, no recompute
    chunks = B // rows
    chunk = rows * N * es
    logits = chunks * (chunk + 3 * chunk + 2 * chunk)  # written by S = QC^T, read twice + written by the row kernel,
    # read by dq = GC and dc += G^T Q
    q_c = chunks * (2 * rows * d * es + 2 * N * d * es + rows * d * es)  # q rows twice, c twice, dq rows once
    dc = chunks * 2 * N * d * es  # read + written once per chunk
    other = 16 * B + 2 * (B + N) * d * es  # per-row statistics; the backward's scaling of dq and dc
    assert r.bytes == pytest.approx(logits + q_c + dc + other)
    assert r.compute_ms(H200) == pytest.approx(3 * 2 * B * N * d / 764.2e12 * 1e3)
    assert r.predicted_ms(H200) >= max(r.compute_ms(H200), r.memory_ms(H200))  # kernels run one after the other
    assert r.extra_bytes == B * d * es + N * d * es + chunk  # dq, dc, the chunk: 80 MiB, under 2% of 4,241 MiB
    fp32 = R.row("info_nce ws=32MiB dc=fp32")
    assert fp32.bytes > r.bytes and fp32.extra_bytes > r.extra_bytes and fp32.kind == "sweep"


def test_maxsim_and_ngpt_rows_are_memory_bound():
    m = R.row("maxsim rerank")
    assert m.bytes == 10000 * 180 * (128 * 2 + 1) + 32 * 128 * 2 + 32 + 10000 * 4  # docs, mask, query, scores
    assert m.bound(H200) == "memory" and m.predicted_ms(H200) == pytest.approx(m.memory_ms(H200))
    assert R.row("maxsim rerank einsum").predicted_ms(H200) > m.predicted_ms(H200)
    n = R.row("ngpt fwd+bwd")
    x = 65536 * 4096 * 2
    assert 8 * x < n.bytes < 8.05 * x  # h, f, out; grad_out, h, f, grad_h, grad_f; norms and partials
    assert n.goal_ms == pytest.approx(8 * x / (0.8 * H200.copy_gbps * 1e9) * 1e3)


def test_predict_at_other_ceilings_and_unknown_rows():
    twice = R.Ceilings(2 * H200.copy_gbps, 2 * H200.triad_gbps, 2 * H200.matmul_tflops)
    assert R.predict("info_nce ws=32MiB dc=input", twice) == pytest.approx(R.predict("info_nce ws=32MiB dc=input") / 2)
    with pytest.raises(KeyError, match="no roofline row"):
        R.row("nope")
