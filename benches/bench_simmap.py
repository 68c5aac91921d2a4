"""Token-similarity-map (MaxSim) benchmark: `python benches/bench_simmap.py --preset cpu [options]`.

The same as `spherekit bench simmap ...` (the harness ships in spherekit.bench so the installed command
works); see `--help` for presets, workloads, providers and what each column means. Rows are appended to
benches/results/simmap.csv.
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "simmap", *sys.argv[1:]]))
