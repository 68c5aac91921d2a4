"""gradcheck of the info_nce oracle in float64: the oracle itself must be right."""

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference


@pytest.mark.parametrize("mode", ["bce", "softmax", "both"])
def test_gradcheck_info_nce_reference(mode):
    g = torch.Generator().manual_seed(0)
    q = F.normalize(torch.randn(5, 7, generator=g, dtype=torch.float64), dim=-1).requires_grad_()
    c = F.normalize(torch.randn(8, 7, generator=g, dtype=torch.float64), dim=-1).requires_grad_()
    h = F.normalize(torch.randn(5, 2, 7, generator=g, dtype=torch.float64), dim=-1).requires_grad_()
    tau = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 3, -100, 7, 1])
    ql = torch.tensor([0, 1, 2, 0, 1])
    cl = torch.tensor([0, 2, 1, 1, 0, 2, 1, 0])
    bias = torch.randn(3, 3, generator=g, dtype=torch.float64)

    def fn(q_, c_, h_, tau_):
        return reference.info_nce(q_, c_, t, h_, temperature=tau_, hard_negative_mode=mode, query_labels=ql,
                                  candidate_labels=cl, label_bias=bias, reduction="none",
                                  compute_dtype=torch.float64)

    assert torch.autograd.gradcheck(fn, (q, c, h, tau))
