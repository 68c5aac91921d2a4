"""Bad input to soft_align gets a clear error naming the argument, the expected and the actual value: the token
checks shared with the other token-similarity ops (_errors_cases.PAIRED), lam and tau."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import soft_align
from tests.ops._errors_cases import INF, NAN, PAIRED, apply_case, call, good, ids

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


@pytest.mark.parametrize("override, error, match", PAIRED, ids=ids(PAIRED))
def test_common_errors(override, error, match):
    with pytest.raises(error, match=match):
        call(soft_align, apply_case(override))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tau=0.0), ValueError, "tau must be a finite float > 0, got 0.0"),
    (dict(tau=-1.0), ValueError, "tau must be a finite float > 0"),
    (dict(tau=NAN), ValueError, "tau must be a finite float > 0"),
    (dict(tau=1e-39), ValueError, r"tau must be >= 0.0001 \(and finite\), got 1e-39"),
    (dict(tau=torch.tensor(5e-5, requires_grad=True)), ValueError, "tau must be >= 0.0001"),
    (dict(lam=INF), ValueError, "lam must be a finite float, got inf"),
    (dict(lam=torch.ones(2)), ValueError, "lam must be a float or a 0-dim floating tensor"),
    (dict(tau=torch.tensor(1)), ValueError, "tau must be a float or a 0-dim floating tensor"),
    (dict(lam="0.1"), TypeError, "lam must be a float or a 0-dim tensor"),
    (dict(tau=True), TypeError, "tau must be a float or a 0-dim tensor"),
    (dict(tau=torch.tensor(0.1, device="meta")), ValueError, "tau must be on the device of q"),
])
def test_soft_align_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        call(soft_align, good(Bd=2), **kwargs)
