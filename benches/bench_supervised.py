"""Supervised-contrastive benchmark (SINCERE / SoftCSE / CircularCSE, oracle vs spherekit's chunked CPU path):
`python benches/bench_supervised.py [--preset cpu] [--sizes 4096 8192] [--d 384] [options]`.

The same as `spherekit bench supervised ...` (the harness ships in spherekit.bench so the installed command
works); see `--help` for presets, providers and the columns. Rows are appended to benches/results/supervised.csv.
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "supervised", *sys.argv[1:]]))
