"""Bad input to global_avg_sim gets a clear error naming the argument, the expected and the actual value: the token
checks shared with the other token-similarity ops (_errors_cases.PAIRED)."""

from __future__ import annotations

import pytest

from spherekit.ops import global_avg_sim
from tests.ops._errors_cases import PAIRED, apply_case, call, ids

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


@pytest.mark.parametrize("override, error, match", PAIRED, ids=ids(PAIRED))
def test_common_errors(override, error, match):
    with pytest.raises(error, match=match):
        call(global_avg_sim, apply_case(override))
