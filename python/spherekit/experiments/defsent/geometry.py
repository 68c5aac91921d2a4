"""The numbers behind DefSent+'s Figures 1-7 (arXiv:2405.16153; the figures show, the paper prints no numbers).

For a bank X (E x d):

    svd_corr         Pearson correlation of the coordinates on the top-2 right singular vectors of the
                     NON-centred X (Fig. 1's 2-D SVD; the paper's "regression line": negative = rotated ellipse)
    svd_top1_share   s_1^2 / sum_k s_k^2 (a narrow cone: one direction holds almost all the energy)
    mean_cosine      mean cosine of BANK_PAIRS = 10,000 random pairs of rows (anisotropy; seed 0, so banks of the
                     same size average the same pairs)
    outside_2d       share of rows outside radius 3 of the whitened 2-D PCA (Figs. 2, 5, 6: entries "protruding
                     from the centred sphere"); a 2-D standard Gaussian has exp(-4.5) = 1.1%
    outside_full     share of rows whose whitened squared norm (all d PCs) exceeds the chi^2_d 99% quantile
                     (Gaussian: 1%)
    abs_skew, excess_kurtosis   means over the d axes (Fig. 2: ICA axes have "big skewness and kurtosis")

plus 1,000 sampled points of both 2-D views for the plots, and GEOMETRY_RESAMPLES bootstrap replicates of
mean_cosine (the random pairs resampled, spherekit.evaluation.geometry.resampled_anisotropy) and of svd_top1_share
(the entries resampled with counts w_i: sum_i w_i (x_i . v_1)^2 / sum_i w_i |x_i|^2, the top direction v_1 held at
the bank's: the Rayleigh quotient, the top eigenvalue's first-order change under the reweighting; exact at w = 1).
The resamples depend on (E, seed) alone, so banks of the same entries (the steps of a PST chain) share them: a
step-to-step difference taken replicate by replicate is a paired bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
import torch

GAUSS_OUTSIDE_2D = math.exp(-4.5)
BANK_PAIRS = 10_000  # the random pairs of entries mean_cosine averages


def top1_share_replicates(x: torch.Tensor, v: torch.Tensor, n_resamples: int, seed: int = 0) -> list[float]:
    """Bootstrap replicates of s_1^2 / sum_k s_k^2 of x (E, d) over its rows, v the top right singular vector of x
    (module docstring: the Rayleigh quotient at v)."""
    x = x.double()
    along = ((x @ v.double()) ** 2).numpy()
    energy = (x * x).sum(1).numpy()
    n = x.shape[0]
    rng = np.random.default_rng([int(seed), 3])
    out = []
    for _ in range(n_resamples):
        w = np.bincount(rng.integers(0, n, n), minlength=n)
        out.append(float(w @ along / (w @ energy)))
    return out


def bank_geometry(bank: torch.Tensor, *, n_points: int = 1000, seed: int = 0,
                  n_resamples: int | None = None) -> dict:
    from scipy.stats import chi2, kurtosis, pearsonr, skew

    from ...evaluation.geometry import GEOMETRY_RESAMPLES, anisotropy, resampled_anisotropy

    x = bank.double()
    _, s, vt = torch.linalg.svd(x, full_matrices=False)
    svd2 = x @ vt[:2].T
    xc = x - x.mean(0)
    cov = xc.T @ xc / (x.shape[0] - 1)
    evals, evecs = torch.linalg.eigh(cov)
    evals, evecs = evals.flip(0).clamp_min(1e-12), evecs.flip(1)
    white = xc @ evecs / evals.sqrt()
    r2 = (white[:, :2] ** 2).sum(1)
    full = (white ** 2).sum(1)
    xn = x.numpy()
    rng = np.random.default_rng(seed)
    idx = rng.choice(x.shape[0], min(n_points, x.shape[0]), replace=False)
    resamples = GEOMETRY_RESAMPLES if n_resamples is None else n_resamples
    replicates = {"mean_cosine": resampled_anisotropy(bank.float(), resamples, n_pairs=BANK_PAIRS, seed=seed),
                  "svd_top1_share": top1_share_replicates(x, vt[0], resamples, seed)}
    return {
        "entries": int(x.shape[0]), "dim": int(x.shape[1]),
        "svd_corr": float(pearsonr(svd2[:, 0].numpy(), svd2[:, 1].numpy()).statistic),
        "svd_top1_share": float(s[0] ** 2 / (s ** 2).sum()),
        "mean_cosine": float(anisotropy(bank.float(), n_pairs=BANK_PAIRS, seed=seed)),
        "outside_2d": float((r2 > 9).double().mean()), "outside_2d_gaussian": GAUSS_OUTSIDE_2D,
        "outside_full": float((full > chi2.ppf(0.99, x.shape[1])).double().mean()),
        "abs_skew": float(np.abs(skew(xn, axis=0)).mean()), "excess_kurtosis": float(kurtosis(xn, axis=0).mean()),
        "row_norm": float(x.norm(dim=1).mean()), "value_std": float(x.std(0).mean()),
        "points_svd": svd2[idx].float().tolist(), "points_white": white[idx, :2].float().tolist(),
        "replicates": {k: [round(r, 6) for r in v] for k, v in replicates.items()},
    }
