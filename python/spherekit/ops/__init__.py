"""The public functional API: fused ops registered as torch.library custom ops."""

from .info_nce import info_nce

__all__ = ["info_nce"]
