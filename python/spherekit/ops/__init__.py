"""The public functional API: fused ops registered as torch.library custom ops."""

from .circular_cse import circular_cse
from .info_nce import info_nce
from .ngpt import geodesic_residual, l2_normalize, renormalize_
from .sincere import sincere
from .global_avg_sim import global_avg_sim
from .maxsim import maxsim
from .maxsim_ragged import maxsim_ragged
from .sim_map import sim_map, sim_map_patch_mask
from .soft_align import soft_align

__all__ = ["info_nce", "sincere", "circular_cse", "geodesic_residual", "l2_normalize", "renormalize_"]
__all__ += ["maxsim", "maxsim_ragged", "soft_align", "sim_map", "sim_map_patch_mask", "global_avg_sim"]
