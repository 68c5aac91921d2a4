"""Pure-torch oracles: plain, materialising, fp32 math. They define what every kernel must compute.

They are the test oracle, not a fast fallback (``backend="reference"`` runs them for comparison).
This package imports only torch.
"""

from .contrastive import circular_cse, info_nce, sincere

__all__ = ["info_nce", "sincere", "circular_cse"]
