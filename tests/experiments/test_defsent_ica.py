"""ICA of an entry bank (DefSent+ appendix A): the two whitening variants' scales; the non-convergence warning."""

import math

import pytest
import torch

from spherekit.experiments.defsent.ica import ICANotConvergedWarning, ica_transform


def _bank(n=2000, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    sources = torch.rand(n, d, generator=g) - 0.5            # independent, non-Gaussian
    return sources @ torch.randn(d, d, generator=g) + 3.0    # mixed, not centred


def test_whitening_variants_scale():
    x = _bank()
    n = x.shape[0]
    old, info_old = ica_transform(x, whiten="arbitrary-variance")
    unit, info_unit = ica_transform(x, whiten="unit-variance")
    # old default: sources of std 1/sqrt(n), times 100; the released script: std 1, times 100
    assert old.std(0).mean().item() == pytest.approx(100 / math.sqrt(n), rel=0.01)
    assert unit.std(0).mean().item() == pytest.approx(100.0, rel=0.01)
    assert info_old["converged"] and info_old["n_iter"] < 1000
    assert info_old["std"] == pytest.approx(100 / math.sqrt(n), rel=0.01)
    # independent components recovered: each output is (up to sign and scale) one uniform source
    corr = torch.corrcoef(torch.cat([old, unit], 1).T)[:8, 8:].abs()
    assert (corr.max(1).values > 0.99).all()


def test_prescale_and_fit_rows():
    x = _bank()
    y, info = ica_transform(x, prescale=True, fit_rows=500)
    assert info["fit_rows"] == 500 and y.shape == x.shape and torch.isfinite(y).all()


@pytest.mark.parametrize("whiten, std", [("arbitrary-variance", 100 / math.sqrt(2000)), ("unit-variance", 100.0)])
def test_fit_rows_keeps_the_scale_of_a_fit_on_every_row(whiten, std):
    x = _bank()  # 2000 rows: a fit on 500 of them has the scale of a fit on all 2000, not 100 / sqrt(500)
    full, _ = ica_transform(x, whiten=whiten)
    subset, info = ica_transform(x, whiten=whiten, fit_rows=500)
    assert info["std"] == pytest.approx(std, rel=0.05) and subset.std(0).mean().item() == pytest.approx(std, rel=0.05)
    corr = torch.corrcoef(torch.cat([full, subset], 1).T)[:8, 8:].abs()  # the same components, from fewer rows
    assert (corr.max(1).values > 0.98).all()


def test_non_convergence_warns_with_the_iteration_count():
    with pytest.warns(ICANotConvergedWarning, match="did not converge in 1 iterations"):
        _, info = ica_transform(_bank(), max_iter=1, tol=1e-12)
    assert info["converged"] is False and info["n_iter"] == 1


def test_bad_input():
    with pytest.raises(ValueError, match="whiten must be one of"):
        ica_transform(_bank(), whiten=True)
    with pytest.raises(ValueError, match="more entries than dimensions"):
        ica_transform(torch.randn(4, 8))
