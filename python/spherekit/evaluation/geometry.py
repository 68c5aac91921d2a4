"""Geometry of an embedding set X (n, d): anisotropy, effective rank, 2-D projections ("Principles of Concept
Representation in Sentence Encoders" (arXiv:2606.06994) App. H, "Mapping the Circumplex of Affect"
(arXiv:2601.06575)).

    anisotropy(X)      = mean over P seeded random pairs (i, j), i != j, of cos(x_i, x_j)   (P = 10,000)
    effective_rank(X)  = exp(H(p)),  p_k = s_k / sum_k s_k,  H(p) = -sum_k p_k log p_k,
                         s the singular values of X (Roy & Vetterli 2007; rows L2-normalised first
                         when normalize=True, mean-centred first when center=True)
    resampled_geometry(X) -> bootstrap replicates of both (below)
    resampled_anisotropy(X) -> bootstrap replicates of anisotropy alone (the pairs resampled)
    pca_project(X)     -> (n, 2) coordinates and the explained variance ratio of each component
    mds_project(X)     -> (n, 2) metric MDS of the cosine distances 1 - cos(x_i, x_j)

The paper does not say whether the singular values are taken of centred embeddings; the default
(center=False, normalize=True: the cosine geometry the encoder is scored with) is configurable.

Neither statistic is a mean over items that a paired bootstrap could resample later, so resampled_geometry keeps
their bootstrap replicates: replicate b of anisotropy is the mean over the P pairs resampled with replacement; of
effective rank, that of the rows resampled with replacement (counts w_i), whose singular values are those of
diag(sqrt w) X, i.e. sqrt(eig(X^T diag(w) X)). The resampled indices depend on (n, P, seed) alone (common random
numbers), so two embedding sets of the same texts (two models, two seeds) see the same resamples, and a function of
their replicates taken replicate by replicate is a paired bootstrap of that function of the statistics.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

ANISOTROPY_PAIRS = 10_000  # random pairs anisotropy averages (the concept paper's appendix H)
GEOMETRY_RESAMPLES = 500    # bootstrap replicates resampled_geometry keeps (an SVD-sized step each for the rank)


def check_embeddings(name: str, x, min_rows: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        x = torch.as_tensor(x)
    if x.dim() != 2:
        raise ValueError(f"{name} must have 2 dimensions (n, d), got shape {tuple(x.shape)}")
    if x.shape[0] < min_rows or x.shape[1] == 0:
        raise ValueError(f"{name} needs at least {min_rows} rows and 1 column, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a float tensor, got {x.dtype}")
    x = x.detach().to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or Inf")
    return x


def random_pairs(n: int, n_pairs: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """n_pairs index pairs (i, j), i != j, uniform over ordered pairs, from a seeded generator."""
    if n < 2:
        raise ValueError(f"random pairs need at least 2 items, got n={n}")
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    gen = torch.Generator().manual_seed(int(seed))
    i = torch.randint(0, n, (n_pairs,), generator=gen)
    j = torch.randint(0, n - 1, (n_pairs,), generator=gen)
    j = j + (j >= i).long()  # skip i: uniform over the n - 1 other items
    return i, j


def anisotropy(x, n_pairs: int = ANISOTROPY_PAIRS, seed: int = 0) -> float:
    """Mean cosine similarity over `n_pairs` seeded random pairs of distinct rows of x (n, d)."""
    x = check_embeddings("x", x, min_rows=2)
    i, j = random_pairs(x.shape[0], n_pairs, seed)
    xn = torch.nn.functional.normalize(x.double(), dim=1)
    return float((xn[i] * xn[j]).sum(1).mean())


def cosine_pairs(x, n_pairs: int = ANISOTROPY_PAIRS, seed: int = 0) -> Tensor:
    """The cosines of the random pairs anisotropy averages (for distribution plots)."""
    x = check_embeddings("x", x, min_rows=2)
    i, j = random_pairs(x.shape[0], n_pairs, seed)
    xn = torch.nn.functional.normalize(x.double(), dim=1)
    return (xn[i] * xn[j]).sum(1)


def effective_rank(x, *, normalize: bool = True, center: bool = False) -> float:
    """exp of the Shannon entropy of the L1-normalised singular values of x (see the module docstring)."""
    x = check_embeddings("x", x).double()
    if normalize:
        x = torch.nn.functional.normalize(x, dim=1)
    if center:
        x = x - x.mean(0, keepdim=True)
    return _entropy_rank(torch.linalg.svdvals(x))


def _entropy_rank(s: Tensor) -> float:
    """exp of the Shannon entropy of the L1-normalised singular values s."""
    total = s.sum()
    if total <= 0:
        raise ValueError("effective rank is undefined for an all-zero matrix")
    p = s / total
    p = p[p > 0]
    return float(math.exp(float(-(p * p.log()).sum())))


def resampled_geometry(x, n_resamples: int = GEOMETRY_RESAMPLES, *, n_pairs: int = ANISOTROPY_PAIRS, seed: int = 0,
                       center: bool = False) -> dict[str, list[float]]:
    """{"anisotropy": [...], "effective rank": [...]}: n_resamples bootstrap replicates of anisotropy(x, n_pairs,
    seed) and effective_rank(x, center=center), under common random numbers (module docstring)."""
    import numpy as np

    x = check_embeddings("x", x, min_rows=2)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    n = x.shape[0]
    cosines = cosine_pairs(x, n_pairs, seed).numpy()
    xn = torch.nn.functional.normalize(x.double(), dim=1)
    rng = np.random.default_rng([int(seed), 1])  # not the pairs' generator: the resamples are their own stream
    aniso, rank = [], []
    for _ in range(n_resamples):
        aniso.append(float(cosines[rng.integers(0, n_pairs, n_pairs)].mean()))
        w = torch.from_numpy(np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64))
        gram = (xn * w[:, None]).T @ xn
        if center:
            mean = (w @ xn) / w.sum()
            gram = gram - w.sum() * torch.outer(mean, mean)
        rank.append(_entropy_rank(torch.linalg.eigvalsh(gram).clamp(min=0).sqrt()))
    return {"anisotropy": aniso, "effective rank": rank}


def resampled_anisotropy(x, n_resamples: int = GEOMETRY_RESAMPLES, *, n_pairs: int = ANISOTROPY_PAIRS,
                         seed: int = 0) -> list[float]:
    """n_resamples bootstrap replicates of anisotropy(x, n_pairs, seed): replicate b is the mean cosine of the P
    random pairs resampled with replacement. The resampled indices depend on (P, seed) alone, so sets of the same
    size (one model's layers, two models on the same texts) share both the pairs and their resamples (common random
    numbers: a difference taken replicate by replicate is a paired bootstrap)."""
    import numpy as np

    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    cosines = cosine_pairs(x, n_pairs, seed).numpy()
    rng = np.random.default_rng([int(seed), 2])  # the pairs' and resampled_geometry's streams are others
    return [float(cosines[rng.integers(0, n_pairs, n_pairs)].mean()) for _ in range(n_resamples)]


def pca_project(x, n_components: int = 2, seed: int = 0):
    """-> (coords (n, n_components) float64 numpy, explained_variance_ratio (n_components,))."""
    from sklearn.decomposition import PCA

    x = check_embeddings("x", x, min_rows=2)
    if not 1 <= n_components <= min(x.shape):
        raise ValueError(f"n_components must be in [1, {min(x.shape)}] for x of shape {tuple(x.shape)}, got {n_components}")
    pca = PCA(n_components=n_components, random_state=seed)
    coords = pca.fit_transform(x.double().numpy())
    return coords, pca.explained_variance_ratio_


def mds_project(x, n_components: int = 2, seed: int = 0, max_iter: int = 300):
    """Metric MDS of the cosine distance matrix 1 - cos(x_i, x_j) -> coords (n, n_components) numpy.
    O(n^2) memory: subsample large sets first."""
    import inspect

    from sklearn.manifold import MDS

    x = check_embeddings("x", x, min_rows=2)
    xn = torch.nn.functional.normalize(x.double(), dim=1)
    dist = (1.0 - xn @ xn.T).clamp_(min=0.0)
    dist.fill_diagonal_(0.0)
    dist = 0.5 * (dist + dist.T)
    params = inspect.signature(MDS.__init__).parameters
    if "metric_mds" in params:  # scikit-learn >= 1.8
        mds = MDS(n_components=n_components, metric_mds=True, metric="precomputed", init="random", n_init=1,
                  max_iter=max_iter, random_state=seed)
    else:
        mds = MDS(n_components=n_components, metric=True, dissimilarity="precomputed", n_init=1,
                  max_iter=max_iter, random_state=seed)
    return mds.fit_transform(dist.numpy())

