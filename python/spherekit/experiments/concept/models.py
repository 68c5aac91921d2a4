"""The encoder and the training objective of each condition (paper sections 4.1-4.3, appendix F).

Encoder: the backbone's Transformer with the condition's readout: sentence-transformers Pooling ("mean" or
"cls") of the final layer, or spherekit.nn.LayerMixPooling over the last K layers ("uniform", "learned",
"gated"; M3 adds training-only per-layer heads). max_seq_length is set for every condition, B0 included. A learned
mix starts at the uniform mix (LayerMixPooling's zero logits) or, for readout_init "last" (M1-last), with logits
w_last = log(p (K - 1) / (1 - p)), the others 0, so that softmax(w) puts p = LAST_LAYER_INIT on the last layer. A
paced readout (M1-last-paced) sets the mix's lr_multiplier (spherekit.training.optim) to head_multiplier x max(1,
PAPER_STEPS / steps): the sum of its per-step rates, and so how far Adam can move its logits, is the paper's.

Objective, one ConceptEquivalenceLoss per view, summed per step (spherekit.training.trainer.MultiViewLoss):

    L = L_syn + L_t2d + 0.7 L_d2d + 0.5 L_BCE

L_BCE sits in the t2d view (the view whose definitions the five rules perturb): with t2d weight w its
bce_weight is 0.5 / w, so the BCE coefficient stays 0.5 absolute. B3 has no hard-negative columns (plain
InfoNCE); B1-unified puts the hard negatives into the t2d InfoNCE denominator instead (no BCE); B1-biased and
B1-negonly change the BCE logit's bias and drop its positive term (Setup.bce_bias / bce_positive), B1-bce5 and
B1-bce1 its scale (Setup.bce_scale), B1-nearest trains on the nearest swaps' negatives (Setup.swaps); the
source-holdout regime trains the t2d view alone (see data.py). M3 wraps every
view in DeepSupervisionLoss (an InfoNCE per supervised layer). With cached_mini_batch the views are the
gradient-cached losses (GradCache), which bound activation memory by the mini-batch.
"""

from __future__ import annotations

import math

from ...training.trainer import MultiViewLoss, distributed_world_size
from .spec import LAST_LAYER_INIT, Setup, paced_multiplier


def build_model(backbone, condition: Setup, cfg):
    """A SentenceTransformer for `condition` on a loaded backbone (its Transformer module is reused)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = backbone[0]
    transformer.max_seq_length = cfg.max_seq_length
    if condition.readout in ("mean", "cls"):
        pooling = Pooling(transformer.get_embedding_dimension(), condition.readout)
        return SentenceTransformer(modules=[transformer, pooling], device=str(backbone.device))
    import torch

    from ...nn.readouts import layer_mix_model

    model = layer_mix_model(backbone, condition.readout, num_layers=condition.layers,
                            deep_supervision=condition.deep_supervision,
                            gate_hidden=cfg.gate_hidden if condition.readout == "gated" else None)
    if condition.readout_init == "last":
        readout = readout_module(model)
        if readout.w is None:
            raise ValueError(f"readout_init 'last' needs a learned layer mix, got readout {condition.readout!r}")
        with torch.no_grad():
            readout.w.zero_()
            readout.w[-1] = math.log(LAST_LAYER_INIT * (condition.layers - 1) / (1 - LAST_LAYER_INIT))
    if condition.readout_paced:  # a learned mix (Setup checks)
        readout_module(model).lr_multiplier = paced_multiplier(cfg.head_multiplier, cfg.steps)
    return model


def _view_loss(model, cfg, weight: float, mode: str = "bce", bce_weight: float = 0.0, bce_bias: float = 0.0,
               bce_positive: bool = True, bce_scale: float | None = None):
    from ...losses import CachedConceptEquivalenceLoss, ConceptEquivalenceLoss

    kw = dict(scale=cfg.scale, hard_negative_mode=mode, bce_weight=bce_weight,
              bce_scale=cfg.bce_scale if bce_scale is None else bce_scale,
              bce_bias=bce_bias, bce_positive=bce_positive, weight=weight,
              gather_across_devices=distributed_world_size() > 1)
    if cfg.cached_mini_batch:
        return CachedConceptEquivalenceLoss(model, mini_batch_size=cfg.cached_mini_batch, **kw)
    return ConceptEquivalenceLoss(model, **kw)


def build_loss(model, condition: Setup, cfg, k: int, source_holdout: bool = False) -> MultiViewLoss:
    """The condition's MultiViewLoss over the columns of ConceptData.columns(training_swaps(condition, cfg),
    source_holdout): the t2d view takes the rows' counts of real negatives (the "label" column) as its labels; the
    source-holdout regime has the t2d view only."""
    if condition.deep_supervision and cfg.cached_mini_batch:
        raise ValueError("M3 (deep supervision) needs the per-layer embeddings of one forward pass; it cannot "
                         "use the gradient-cached losses: set cached_mini_batch=None")
    hn = condition.hard_negatives
    t2d_kw = {"mode": "bce" if hn in (None, "bce") else hn,
              "bce_weight": cfg.bce_weight / cfg.t2d_weight if hn == "bce" else 0.0,
              "bce_bias": cfg.bce_bias if condition.bce_bias is None else condition.bce_bias,
              "bce_positive": cfg.bce_positive if condition.bce_positive is None else condition.bce_positive,
              "bce_scale": condition.bce_scale}
    views = {
        "syn": (_view_loss(model, cfg, cfg.syn_weight), 2),
        "t2d": (_view_loss(model, cfg, cfg.t2d_weight, **t2d_kw), 2 + (k if hn else 0)),
        "d2d": (_view_loss(model, cfg, cfg.d2d_weight), 2),
    }
    if source_holdout:
        views = {"t2d": views["t2d"]}
    if condition.deep_supervision:
        from ...losses.deep_supervision import DeepSupervisionLoss

        views = {name: (DeepSupervisionLoss(model, loss, cfg.deep_weight), n) for name, (loss, n) in views.items()}
    return MultiViewLoss(model, views, labels_to="t2d" if hn else None)


def training_swaps(condition: Setup, cfg) -> str | None:
    """The swap construction of the condition's training negatives (None: it trains without hard negatives)."""
    if condition.hard_negatives is None:
        return None
    return condition.swaps or cfg.swap_negatives


def readout_module(model):
    """The LayerMixPooling of a model, or None."""
    from ...nn.readouts import LayerMixPooling

    return next((m for m in model if isinstance(m, LayerMixPooling)), None)
