"""Bad input to maxsim (all pairs, pairwise and the per-query layout) gets a clear error naming the argument, the
expected and the actual value: the token checks shared with the other token-similarity ops (_errors_cases.COMMON),
pairwise / normalize / backend, the 4-D per-query documents, float64 on triton."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import maxsim
from tests.ops._errors_cases import COMMON, apply_case, call, good, ids

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")

VARIANTS = {
    "maxsim": maxsim,
    "maxsim_pairwise": lambda *a, **k: maxsim(*a, pairwise=True, **k),
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("override, error, match", COMMON, ids=ids(COMMON))
def test_common_errors(variant, override, error, match):
    with pytest.raises(error, match=match):
        call(VARIANTS[variant], apply_case(override))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(pairwise=True), ValueError, r"pairwise=True needs as many documents as queries: Bq=2, Bd=3"),
    (dict(pairwise=1), TypeError, "pairwise must be a bool"),
    (dict(normalize="yes"), TypeError, "normalize must be a bool"),
    (dict(backend="cuda"), ValueError, "backend 'cuda' is not implemented"),
])
def test_maxsim_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        call(maxsim, good(), **kwargs)


def test_maxsim_per_query_layout_errors():
    x = good()
    d4, dm4 = torch.randn(2, 3, 5, 8), torch.ones(2, 3, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"d.shape\[0\] must equal the number of queries Bq \(2\)"):
        maxsim(x["q"], torch.randn(3, 3, 5, 8), q_mask=x["q_mask"], d_mask=torch.ones(3, 3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="pairwise=True needs d of shape"):
        maxsim(x["q"], d4, q_mask=x["q_mask"], d_mask=dm4, pairwise=True)
    with pytest.raises(ValueError, match=r"d_mask must have shape \(2, 3, 5\), got \(2, 5\)"):
        maxsim(x["q"], d4, q_mask=x["q_mask"], d_mask=dm4[:, 0])
    bad = dm4.clone()
    bad[1, 2] = False
    with pytest.raises(ValueError, match=r"d_mask: document \(1, 2\) has no valid token"):
        maxsim(x["q"], d4, q_mask=x["q_mask"], d_mask=bad)
    with pytest.raises(ValueError, match="d must have 3 or 4 dimensions"):
        maxsim(x["q"], torch.randn(5, 8), q_mask=x["q_mask"])


def test_triton_rejects_float64():
    x = good(Bd=2)
    x["q"], x["d"] = x["q"].double(), x["d"].double()
    with pytest.raises(TypeError, match="backend 'triton' takes float32 / float16 / bfloat16 tokens"):
        call(maxsim, x, backend="triton")
