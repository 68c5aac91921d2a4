"""ScaledParameter: value = raw * init_value / init_scaling; the gradient and the Adam step scale with it."""

import pytest
import torch

from spherekit.nn import ScaledParameter


@pytest.mark.parametrize("init_value,init_scaling", [(0.05, 30 ** -0.5), (1.0, 1.0), (-2.0, 0.25)])
def test_value_is_init_value_at_init(init_value, init_scaling):
    p = ScaledParameter(7, init_value, init_scaling)
    assert p.raw.shape == (7,) and p.raw.dtype == torch.float32
    torch.testing.assert_close(p.raw.detach(), torch.full((7,), init_scaling))
    torch.testing.assert_close(p().detach(), torch.full((7,), init_value))


def test_gradient_is_scaled_by_ratio():
    p = ScaledParameter(5, 0.05, 0.01)
    c = torch.randn(5)
    (p() * c).sum().backward()
    torch.testing.assert_close(p.raw.grad, c * 5.0)


def test_adam_step_on_value_is_lr_times_ratio():
    """Adam's first step moves raw by lr (sign of the gradient): the effective value moves by lr * ratio."""
    p = ScaledParameter(4, 0.05, 0.05 / 8)  # ratio 8
    opt = torch.optim.Adam(p.parameters(), lr=1e-3)
    before = p().detach().clone()
    (p() * torch.tensor([1.0, -1.0, 2.0, -3.0])).sum().backward()
    opt.step()
    torch.testing.assert_close((p().detach() - before).abs(), torch.full((4,), 8e-3), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("kwargs,match", [
    (dict(size=0, init_value=1.0, init_scaling=1.0), "size"),
    (dict(size=3, init_value=1.0, init_scaling=0.0), "init_scaling"),
    (dict(size=3, init_value=1.0, init_scaling=-1.0), "init_scaling"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ScaledParameter(**kwargs)
