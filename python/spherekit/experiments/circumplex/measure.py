"""Everything measured on one unit's test split (the JSON a unit's metrics.json holds).

    metrics   V-measure, CD-r, ring MAE, the mean off-diagonal label-pair cosine and the PC1+PC2 variance
              (evaluate.evaluate_embeddings, under the keys of spec.py); for nGPT heads also the mean and max of
              the trained geodesic step sizes |alpha_A|, |alpha_M|
    details   label_order, label_cosine (E x E), circumplex_distance (E x E) and cd_pairs (CD-r's pairs),
              pca_explained_variance_ratio, the PCA-dimension sweep (paper Fig. 5a), and 2-D PCA and MDS coordinates
              of the test texts for the card's plots (only when `projections`: the card draws its first seed's)
    per_item  what the claims' bootstrap over the test texts needs (noise.record_of)
"""

from __future__ import annotations

import numpy as np

from .spec import ALPHA_MAX, ALPHA_MEAN, CD_R, OFFDIAG, PC12, RING_MAE, V

# metric key <- the evaluate_embeddings entry it reports
SCALARS = {V: "v_measure", CD_R: "cd_r", OFFDIAG: "offdiag_mean_cosine", RING_MAE: "ring_mae", PC12: "pc12_explained"}


def polarity_of(angles: dict) -> dict[str, str]:
    """Polarity per label: the circumplex's own classes (spherekit.data.emotion.POLARITY) and, for a label
    outside it (angles_file), the same valence rule: cos(angle) > 0 positive, < 0 negative, 0 neutral."""
    import math

    from ...data.emotion import POLARITY

    def by_angle(a: float) -> str:
        c = math.cos(math.radians(a))
        return "neutral" if abs(c) < 1e-9 else ("positive" if c > 0 else "negative")

    return {lab: POLARITY.get(lab) or by_angle(a) for lab, a in angles.items()}


def ngpt_step_sizes(model) -> dict[str, float]:
    """{ALPHA_MEAN, ALPHA_MAX} (metric keys) over the |alpha_A| and |alpha_M| entries of every nGPT block in
    `model` (empty when it has none). The step sizes bound how far a block can move its input: each residual
    Norm(Norm(h) + alpha (Norm(f) - Norm(h))) turns h by at most about alpha * |Norm(f) - Norm(h)| <= 2 alpha,
    so a head whose alphas stay near their init (0.05) stays close to its normalised input."""
    import torch

    from ...nn.ngpt import NGPTBlock

    alphas = [a().detach().abs().float().flatten() for block in model.modules() if isinstance(block, NGPTBlock)
              for a in (block.alpha_attn, block.alpha_mlp)]
    if not alphas:
        return {}
    flat = torch.cat(alphas)
    return {ALPHA_MEAN: float(flat.mean()), ALPHA_MAX: float(flat.max())}


def _rounded(points) -> list:
    return np.round(np.asarray(points, dtype=np.float64), 4).tolist()


def _embed(model, items, cfg, progress: bool):
    texts = [it.text for it in items]
    emb = model.encode(texts, batch_size=cfg.eval_batch_size, convert_to_tensor=True, show_progress_bar=progress)
    return emb.float().cpu()


def _common(angles: dict, cfg) -> dict:
    return dict(n_init=cfg.n_init, seed=cfg.data_seed, cd_pairs=cfg.cd_pairs, polarity=polarity_of(angles))


def evaluate_unit(model, items, angles: dict, cfg, *, progress: bool = False,
                  projections: bool = True) -> tuple[dict, dict, dict]:
    """(metrics, details, per_item) of `model` on the test `items` (EmotionItem: text, label)."""
    from .evaluate import evaluate_embeddings, pca_dimension_sweep
    from .evaluate import projections as project
    from .noise import CD, PAIRS, record_of

    labels = [it.label for it in items]
    emb = _embed(model, items, cfg, progress)
    common = _common(angles, cfg)
    full = evaluate_embeddings(emb, labels, angles, **common)
    sweep = pca_dimension_sweep(emb, labels, angles, dims=cfg.pca_dims, **common)
    sweep.append({"dim": full["dim"], "reduced": False, "explained": 1.0, "v_measure": full["v_measure"],
                  "cd_r": full["cd_r"]})  # the unreduced embeddings: the headline metrics, not computed again
    metrics = {**{key: full[name] for key, name in SCALARS.items()}, **ngpt_step_sizes(model)}
    details = {"label_order": full["label_order"], "label_cosine": full["label_cosine"],
               CD: full["circumplex_distance"], PAIRS: cfg.cd_pairs,
               "pca_explained_variance_ratio": full["pca_explained_variance_ratio"], "pca_sweep": sweep,
               "n_test": len(items)}
    if projections:
        proj = project(emb, labels, angles, max_points=cfg.mds_points, seed=cfg.data_seed)
        details.update({"pca_points": _rounded(proj["pca"]), "pca_labels": list(proj["pca_labels"]),
                        "mds_points": _rounded(proj["mds"]), "mds_labels": list(proj["mds_labels"])})
    return metrics, details, record_of(full["per_item"], full["label_order"])


def evaluate_second(model, items, angles: dict, cfg, scope: str, *, progress: bool = False) -> tuple[dict, dict]:
    """(metrics under "<scope>/V-measure" and "<scope>/CD-r", per-item record under "<scope>/...") of a second
    embedding of the same test texts (the Pretrained run's: the backbone's own sentence embedding)."""
    from .evaluate import evaluate_embeddings
    from .noise import record_of

    full = evaluate_embeddings(_embed(model, items, cfg, progress), [it.label for it in items], angles,
                               **_common(angles, cfg))
    metrics = {f"{scope}/{V}": full["v_measure"], f"{scope}/{CD_R}": full["cd_r"]}
    return metrics, record_of(full["per_item"], full["label_order"], prefix=f"{scope}/")
