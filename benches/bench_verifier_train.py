"""F4 end-to-end training throughput, spherekit vs the paper's approach, and the largest batch within a memory
limit: `python benches/bench_verifier_train.py --preset gpu [--mem-limit-gib 24] [--max-batch 4096]`.

The same as `python -m spherekit.bench.verifier_throughput ...`; see `--help` for presets, providers and what
each column means. Rows are appended to benches/results/verifier_train.csv.
"""

import sys

from spherekit.bench.verifier_throughput import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
