"""Plots of benches/results/contrastive.csv: `python benches/plot_contrastive.py [--out benches/results]`.

The same as `spherekit bench plot contrastive ...`: writes contrastive_time.png and
contrastive_memory.png next to the CSV (newest machine's rows only).
"""

import sys

from spherekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "plot", "contrastive", *sys.argv[1:]]))
