"""Bad input to maxsim_ragged gets a clear error naming the argument, the expected and the actual value: the query,
its mask, the packed documents, offsets, NaN / Inf, backends."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import maxsim_ragged
from tests.ops._errors_cases import NAN

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


def _ragged():
    gen = torch.Generator().manual_seed(0)
    return dict(q=torch.randn(4, 8, generator=gen), q_mask=None, docs=torch.randn(9, 8, generator=gen),
                offsets=torch.tensor([0, 2, 7, 9]))


@pytest.mark.parametrize("override, error, match", [
    (dict(q=torch.randn(1, 4, 8)), ValueError, "q must have 2 dimensions"),
    (dict(docs=torch.randn(9, 6)), ValueError, r"docs.shape\[-1\] must equal the hidden size h of q \(8\)"),
    (dict(docs=torch.randn(9, 8).double()), TypeError, "docs must have the dtype of q"),
    (dict(q_mask=torch.zeros(4, dtype=torch.bool)), ValueError, "q_mask: the query has no valid token"),
    (dict(q_mask=torch.full((4,), 3.0)), ValueError, "q_mask must be bool or hold only 0/1 values"),
    (dict(q_mask=torch.ones(3, dtype=torch.bool)), ValueError, r"q_mask must have shape \(4,\)"),
    (dict(offsets=torch.tensor([0, 2, 7, 9], dtype=torch.int32)), TypeError, "offsets must be a 1-D int64 tensor"),
    (dict(offsets=torch.tensor([[0, 9]])), TypeError, "offsets must be a 1-D int64 tensor"),
    (dict(offsets=torch.tensor([0])), ValueError, "offsets must hold N \\+ 1 >= 2 entries"),
    (dict(offsets=torch.tensor([1, 2, 9])), ValueError, "offsets must start at 0 and end at the number of packed"),
    (dict(offsets=torch.tensor([0, 2, 8])), ValueError, "offsets\\[-1\\]=8"),
    (dict(offsets=torch.tensor([0, 2, 2, 9])), ValueError, "document 1 has no valid token"),
    (dict(offsets=torch.tensor([0, 5, 2, 9])), ValueError, "offsets must be strictly increasing"),
    ("nan_docs", ValueError, "NaN or Inf found in docs"),
    (dict(backend="triton"), ValueError, "backend 'triton' is not implemented"),
    (dict(backend="cuda"), RuntimeError, "backend 'cuda' cannot run here"),
])
def test_maxsim_ragged_errors(override, error, match):
    x = _ragged()
    if override == "nan_docs":
        x["docs"][3, 1] = NAN
    else:
        x.update(override)
    with pytest.raises(error, match=match):
        maxsim_ragged(x.pop("q"), x.pop("docs"), x.pop("offsets"), **x)


def test_the_old_positional_mask_form_names_the_new_one():
    x = _ragged()
    with pytest.raises(TypeError, match=r"maxsim_ragged\(q, docs, offsets, q_mask=q_mask\); the positional form "
                                        r"maxsim_ragged\(q, q_mask, docs, offsets\) was removed"):
        maxsim_ragged(x["q"], None, x["docs"], x["offsets"])
