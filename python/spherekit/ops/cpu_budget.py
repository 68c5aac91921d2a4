"""The working-memory budget of spherekit's chunked CPU paths: one knob for every op.

CHUNK_ELEMENTS is the number of elements of the largest work buffer a CPU path allocates at a time (a tile of
logits, a chunk of token-similarity maps, ...). A path keeps a few such buffers alive, so its peak extra memory is
a small multiple of 4 * CHUNK_ELEMENTS bytes (fp32) whatever the batch, bank or corpus size; each path says how
it cuts its work into buffers of this size.

Default 2^21 elements (8 MiB of fp32): below glibc's largest dynamic mmap threshold (32 MiB), so a freed buffer
goes back to the operating system instead of growing the heap (a 10k-document MaxSim rerank measured 33.5 MiB
peak at 2^22 vs 9.9 MiB at 2^21, at the same speed; benches/results/sim_map.csv). The environment variable
SPHEREKIT_CPU_CHUNK_ELEMENTS (read at import) trades memory for fewer, larger matrix products. The paths read
the value at call time, so tests can lower it with monkeypatch.setattr(cpu_budget, "CHUNK_ELEMENTS", n).

One exception: info_nce's tiles hold at least MIN_TILE_ELEMENTS (2^24) logits, since each of its dozen passes
over a tile must outlast a scheduler time slice when other work shares the cores (see below).

Every path cuts its work with the two helpers below: a chunk size (rows_per_chunk for a cost per row, or the
path's own rule where it tiles in two dimensions: info_nce's tile_shape, maxsim's plan) and row_chunks, the
slices of rows that size gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

CHUNK_ELEMENTS = int(os.environ.get("SPHEREKIT_CPU_CHUNK_ELEMENTS", 1 << 21))
# info_nce's logit tiles hold at least this many elements (64 MiB of fp32), whatever CHUNK_ELEMENTS says: each
# tile costs about a dozen passes (products, log-softmax, exp, scaling), each a parallel region that ends in a
# barrier, and on a machine whose cores are busy with other work a barrier waits out the scheduler's time slice
# of a descheduled thread. With 2^21-element tiles (about 1 ms per pass on 2 cores) InfoNCE fwd+bwd at
# B = N = 16,384, d = 384 took 12.4 s beside 2 spinning processes on 2 cores against 3.4 s quiet (eager
# cross-entropy: 9.5 s); with 2^24 it took 6.9 s, the 2x a fair share of the cores predicts, and the same 3.4 s
# quiet (Intel Xeon, 2 cores; docs/results.md). Tests set it to 0 to exercise small tiles.
MIN_TILE_ELEMENTS = 1 << 24


def tile_elements() -> int:
    """Elements of one info_nce logits tile: max(CHUNK_ELEMENTS, MIN_TILE_ELEMENTS), at least 1."""
    return max(1, CHUNK_ELEMENTS, MIN_TILE_ELEMENTS)


def rows_per_chunk(row_elements: int) -> int:
    """Rows per chunk for row_elements work-buffer elements per row: max(1, CHUNK_ELEMENTS // row_elements), the
    most rows whose buffers fit the budget (one row when a single row is over it)."""
    return max(1, CHUNK_ELEMENTS // max(1, row_elements))


def row_chunks(total: int, step: int) -> Iterator[slice]:
    """The chunks of a chunked loop over `total` rows: slice(r0, min(total, r0 + step)) for r0 = 0, step, 2 step,
    ... below total; each holds `step` rows except the last, which holds the rest."""
    for r0 in range(0, total, step):
        yield slice(r0, min(total, r0 + step))
