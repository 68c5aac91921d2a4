"""The public functional API: fused ops registered as torch.library custom ops."""

from .circular_cse import circular_cse
from .info_nce import info_nce
from .sincere import sincere

__all__ = ["info_nce", "sincere", "circular_cse"]
