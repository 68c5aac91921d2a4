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
"""

from __future__ import annotations

import os

CHUNK_ELEMENTS = int(os.environ.get("SPHEREKIT_CPU_CHUNK_ELEMENTS", 1 << 21))
