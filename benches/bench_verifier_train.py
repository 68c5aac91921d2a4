"""F4 end-to-end training throughput, spherekit vs the paper's approach, and the largest batch within a memory
limit: `python benches/bench_verifier_train.py --preset gpu [--mem-limit-gib 24] [--max-batch 4096]`.

The same as `spherekit bench verifier-train ...` (the harness ships in spherekit.bench so the installed command
works); see `--help` for presets, providers and the columns. Rows are appended to
benches/results/verifier_train.csv.
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "verifier-train", *sys.argv[1:]]))
