"""Modules renamed to one spelling stay importable under the old name, with a DeprecationWarning."""

import importlib
import sys

import pytest


def test_reference_simmap_is_reference_sim_map():
    from spherekit.reference import sim_map

    sys.modules.pop("spherekit.reference.simmap", None)
    with pytest.warns(DeprecationWarning, match="spherekit.reference.sim_map"):
        old = importlib.import_module("spherekit.reference.simmap")
    for name in ("maxsim", "soft_align", "sim_map", "sim_map_patch_mask", "global_avg_sim", "maxsim_ragged"):
        assert getattr(old, name) is getattr(sim_map, name)
