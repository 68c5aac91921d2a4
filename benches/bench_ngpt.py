"""nGPT-family benchmark: `python benches/bench_ngpt.py --preset cpu [options]`.

The same as `spherekit bench ngpt ...` (the harness ships in spherekit.bench so the installed command works);
see `--help` for presets, providers and the columns. Rows are appended to benches/results/ngpt.csv.
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "ngpt", *sys.argv[1:]]))
