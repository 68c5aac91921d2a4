"""Bad input to sim_map (paired and all_pairs) and sim_map_patch_mask gets a clear error naming the argument, the
expected and the actual value: the token checks shared with the other token-similarity ops (_errors_cases.PAIRED),
patch, channels, clip, out_dtype, all_pairs."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import sim_map, sim_map_patch_mask
from tests.ops._errors_cases import PAIRED, apply_case, call, good, ids

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


@pytest.mark.parametrize("override, error, match", PAIRED, ids=ids(PAIRED))
def test_common_errors(override, error, match):
    with pytest.raises(error, match=match):
        call(sim_map, apply_case(override))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(patch=0), ValueError, "patch must be None or an int >= 1, got 0"),
    (dict(patch=-2), ValueError, "patch must be None or an int >= 1, got -2"),
    (dict(patch=2.0), TypeError, "patch must be None or an int >= 1, got float"),
    (dict(patch=True), TypeError, "patch must be None or an int >= 1, got bool"),
    (dict(channels=("sim", "diag")), ValueError, "channels: unknown channel 'diag'"),
    (dict(channels=()), ValueError, "channels must be a non-empty tuple"),
    (dict(channels=("sim", "sim")), ValueError, "channels must not repeat a name"),
    (dict(clip=None), TypeError, "clip must be a bool"),
    (dict(out_dtype=torch.int32), TypeError, "out_dtype must be None or one of"),
])
def test_sim_map_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        call(sim_map, good(Bd=2), **kwargs)


def test_all_pairs_errors():
    q, d = torch.randn(2, 5, 8), torch.randn(3, 6, 8)
    with pytest.raises(ValueError, match="batch size"):
        sim_map(q, d, backend="cpu")  # paired needs Bq == Bd
    with pytest.raises(ValueError, match="d_mask"):
        sim_map(q, d, d_mask=torch.ones(2, 6, dtype=torch.bool), all_pairs=True, backend="cpu")
    with pytest.raises((TypeError, ValueError), match="all_pairs"):
        sim_map(q, d, all_pairs=1, backend="cpu")


def test_patch_mask_errors():
    qm = torch.tensor([[True, True, False, False, False], [True, False, False, False, True]])
    dm = torch.tensor([[True, False, False], [False, False, True]])
    with pytest.raises(ValueError, match="patch must be None or an int >= 1"):
        sim_map_patch_mask(qm, dm, 0)
