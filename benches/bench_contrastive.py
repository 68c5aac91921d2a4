"""Contrastive-family benchmark: `python benches/bench_contrastive.py --preset cpu-small [options]`.

The same as `spherekit bench contrastive ...` (the harness ships in spherekit.bench so the installed
command works); see `--help` for presets, providers and what each column means. Rows are appended to
benches/results/contrastive.csv; the plots are made by benches/plot_contrastive.py (also run at the end).
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "contrastive", *sys.argv[1:]]))
