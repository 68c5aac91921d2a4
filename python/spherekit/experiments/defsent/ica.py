"""ICA of an entry bank: DefSent+ (arXiv:2405.16153), appendix A, after Yamagiwa et al. 2023 (EMNLP).

    Y = scale * FastICA(n_components=d, whiten=W, max_iter, tol, fun="logcosh", random_state).fit_transform(X')

with X' = X (the paper) or StandardScaler(X) (the released script's prescale). The whitening W decides the
scale of the sources S (n x d):

    "arbitrary-variance"  scikit-learn's old default (whiten=True before 1.1): std(S[:, k]) = 1/sqrt(n), so
                          scale 100 gives about 100/sqrt(n) (~0.26 at the paper's n = 150,518: "the dimensional
                          values are approximately 1% of original scale", hence x100). The paper's text.
    "unit-variance"       the released script: std(S[:, k]) = 1, so scale 100 gives std 100, ~400x larger at
                          n = 150k; with eq. 1's temperature-free softmax that changes the logit scale.

FastICA centres X; eq. 1 is invariant to adding a constant vector to every bank row, so that is harmless.
When FastICA stops at max_iter without converging, a RuntimeWarning with the iteration count is issued and
the info dict says so (the card records it). `fit_rows` > 0 fits on a random subset of m rows, then
transforms every row; with "arbitrary-variance" the output is then multiplied by sqrt(m / n), so that its scale
is that of a fit on all n rows (1/sqrt(n) per source, not 1/sqrt(m)): the subset estimates the unmixing only.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

WHITENINGS = ("arbitrary-variance", "unit-variance")


class ICANotConvergedWarning(RuntimeWarning):
    pass


def ica_transform(bank: Tensor, *, whiten: str = "arbitrary-variance", prescale: bool = False, max_iter: int = 1000,
                  tol: float = 1e-4, random_state: int = 42, scale: float = 100.0,
                  fit_rows: int = 0) -> tuple[Tensor, dict]:
    """(the transformed (E, d) bank as float32, info) (see the module docstring)."""
    from sklearn.decomposition import FastICA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    if whiten not in WHITENINGS:
        raise ValueError(f"whiten must be one of {WHITENINGS}, got {whiten!r}")
    x = bank.detach().double().cpu().numpy()
    if x.ndim != 2 or x.shape[0] <= x.shape[1]:
        raise ValueError(f"ICA needs more entries than dimensions, got a bank of shape {x.shape}")
    if prescale:
        x = StandardScaler().fit_transform(x)
    ica = FastICA(n_components=x.shape[1], whiten=whiten, max_iter=max_iter, tol=tol, fun="logcosh",
                  random_state=random_state)
    fit = x
    if fit_rows and fit_rows < x.shape[0]:
        fit = x[np.random.default_rng(random_state).choice(x.shape[0], fit_rows, replace=False)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        ica.fit(fit)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    info = {"whiten": whiten, "prescale": prescale, "max_iter": max_iter, "n_iter": int(ica.n_iter_),
            "converged": converged, "scale": scale, "fit_rows": int(fit.shape[0])}
    if not converged:
        warnings.warn(f"FastICA did not converge in {ica.n_iter_} iterations (max_iter={max_iter}, tol={tol}); "
                      "the bank is the last iterate", ICANotConvergedWarning, stacklevel=2)
    y = ica.transform(x) * scale
    if whiten == "arbitrary-variance":  # the scale of a fit on every row (see the module docstring)
        y *= np.sqrt(fit.shape[0] / x.shape[0])
    info["std"] = float(y.std(axis=0).mean())
    return torch.from_numpy(y).float(), info
