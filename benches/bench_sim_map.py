"""Token-similarity-map (MaxSim) benchmark: `python benches/bench_sim_map.py --preset cpu [options]`.

The same as `spherekit bench sim-map ...` (the harness ships in spherekit.bench so the installed command
works); see `--help` for presets, workloads, providers and what each column means. Rows are appended to
benches/results/sim_map.csv.
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "sim-map", *sys.argv[1:]]))
