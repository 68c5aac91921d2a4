"""Deprecated name of :mod:`spherekit.reference.sim_map` (the token-similarity-map oracles; one spelling, sim_map)."""

import warnings

from .sim_map import (CHANNELS, EPS, global_avg_sim, maxsim, maxsim_ragged, patchify, sim_map, sim_map_patch_mask,
                      soft_align)

__all__ = ["CHANNELS", "EPS", "global_avg_sim", "maxsim", "maxsim_ragged", "patchify", "sim_map", "sim_map_patch_mask",
           "soft_align"]

warnings.warn("spherekit.reference.simmap was renamed spherekit.reference.sim_map", DeprecationWarning, stacklevel=2)
