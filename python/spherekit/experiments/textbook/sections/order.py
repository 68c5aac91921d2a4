"""Section 8: order sensitivity. The chapter's pair ("the patient was treated by the doctor" vs "the doctor was
treated by the patient") and two more role swaps, each with a same-meaning passage (our choice): does pooled
cosine (stage 1 of spherekit.retrieval.TwoStageRetriever) rank the same-meaning passage above the role swap,
and does a verifier re-rank (stage 2) fix it? The verifier (cfg.verifier, a small CNN over the token similarity
map) is trained on the frozen backbone's tokens with spherekit.training.verifier.train_verifier on structural
near-misses (spherekit.data.nearmiss: negation, binding, spatial), and both stages are also scored on the held-out
near-misses: the fraction of items where the positive outscores the near-miss. Per item (the held-out
near-misses, then the chapter's examples) whether each stage puts the right passage first is kept (per_item) for
the claim's bootstrap, and the verifier's logged training losses as the run's training "order verifier"
(ctx.record_training: the claim's gate reads it). The chapter's point that role swaps "may embed similarly" is
measured on a set too: the frozen backbone's cosine of every sentence of the near-miss set (train and test parts)
and its subject-object swap, then of the chapter's three pairs, kept per item (ROLE_SWAPS). The near-miss set is
data (built with cfg.data_seed, shared by every seed); the verifier's initialisation and training order follow
ctx.seed."""

from __future__ import annotations

import torch

from ...api.uncertainty import per_item
from ..chapter import ORDER_EXAMPLES

RIGHT = "near-misses and examples/correct ({})"  # per_item keys, per stage
ROLE_SWAPS = "role swaps/cosine"  # per_item key: cos(sentence, its subject-object swap)
SWAP_EDIT = "subject-object swap"


def build_verifier(cfg, seed: int):
    from ....nn.verifiers import build_verifier as build

    torch.manual_seed(seed)
    kwargs = {"channels": 16, "mlp_hidden": 32, "map_size": cfg.max_seq_length} if cfg.verifier == "F3" else {}
    return build(cfg.verifier, **kwargs)


def verifier_record(history: list[dict]) -> dict:
    """The verifier's training record (api.learning): its steps and logged loss curve {"step", "loss"}."""
    return {"steps": len(history), "curve": {"step": list(range(1, len(history) + 1)),
                                             "loss": [round(float(h["loss"]), 5) for h in history]}}


def _pairwise(model, verifier, anchors, positives, negatives, cfg) -> tuple[torch.Tensor, torch.Tensor]:
    """(pooled cosine, verifier score) of (anchor, positive) minus that of (anchor, negative), per item."""
    from ....losses.verifier_mnrl import stack_columns
    from ....nn.token_encoder import encode_tokens

    enc = [encode_tokens(model, list(t), batch_size=cfg.eval_batch_size) for t in (anchors, positives, negatives)]
    a, p, n = (torch.nn.functional.normalize(e.pooled.float(), dim=1) for e in enc)
    cos_margin = (a * p).sum(1) - (a * n).sum(1)
    d, dm = stack_columns([enc[1].tokens, enc[2].tokens], [enc[1].mask, enc[2].mask])
    verifier.eval()
    with torch.no_grad():
        s = verifier.score_candidates(enc[0].tokens, enc[0].mask, d, dm)
    return cos_margin, s[:, 0] - s[:, 1]


def run(ctx) -> dict:
    from ....data.nearmiss import FAMILIES, build_nearmiss
    from ....training.verifier import train_verifier
    from ....retrieval import TwoStageRetriever
    from ..models import load

    cfg = ctx.cfg
    model = load(ctx.backbone, cfg)
    model.eval()
    near = build_nearmiss(n_per_family=cfg.nearmiss_per_family, seed=cfg.data_seed,
                          cache=ctx.data.root / "data" / "nearmiss")
    verifier = build_verifier(cfg, ctx.seed)
    history = train_verifier(verifier, [(x.anchor, x.positive, x.near_miss) for x in near.train], encoder=model,
                             batch_size=min(cfg.batch_size, len(near.train)), epochs=cfg.verifier_epochs,
                             seed=ctx.seed, progress=ctx.progress).history
    verifier.eval()
    examples = []
    for anchor, same, swap in ORDER_EXAMPLES:
        retriever = TwoStageRetriever.from_texts(model, [same, swap], verifier, k=2, index_device="cpu")
        res = retriever.search_texts(model, [anchor])
        examples.append({"query": anchor, "same_meaning": same, "role_swap": swap,
                         "cosine": {"same_meaning": float(res.stage1_scores[0][res.stage1_ids[0].tolist().index(0)]),
                                    "role_swap": float(res.stage1_scores[0][res.stage1_ids[0].tolist().index(1)])},
                         "verifier": {"same_meaning": float(res.scores[0][res.ids[0].tolist().index(0)]),
                                      "role_swap": float(res.scores[0][res.ids[0].tolist().index(1)])},
                         "stage1_first": "same_meaning" if int(res.stage1_ids[0, 0]) == 0 else "role_swap",
                         "stage2_first": "same_meaning" if int(res.ids[0, 0]) == 0 else "role_swap"})
    test = near.test
    cos_m, ver_m = _pairwise(model, verifier, [x.anchor for x in test], [x.positive for x in test],
                             [x.near_miss for x in test], cfg)
    per_family = {}
    for fam in FAMILIES:
        idx = torch.tensor([i for i, x in enumerate(test) if x.family == fam], dtype=torch.long)
        if len(idx):
            per_family[fam] = {"n": len(idx), "cosine": round(float((cos_m[idx] > 0).float().mean()), 4),
                               "verifier": round(float((ver_m[idx] > 0).float().mean()), 4)}
    swaps = [x for x in (*near.train, *near.test) if x.edit == SWAP_EDIT]
    swap_cos = [e["cosine"]["role_swap"] for e in examples]
    if swaps:
        a, n = (model.encode(texts, normalize_embeddings=True) for texts in ([x.anchor for x in swaps],
                                                                            [x.near_miss for x in swaps]))
        swap_cos = (a * n).sum(1).tolist() + swap_cos
    chapter = examples[0]
    metrics = {
        "chapter pair/cosine (role swap)": round(chapter["cosine"]["role_swap"], 4),
        "chapter pair/cosine (same meaning)": round(chapter["cosine"]["same_meaning"], 4),
        "examples/correct (pooled cosine)": sum(e["stage1_first"] == "same_meaning" for e in examples),
        "examples/correct (verifier re-rank)": sum(e["stage2_first"] == "same_meaning" for e in examples),
        "examples/count": len(examples),
        "near-misses/Acc (pooled cosine)": round(float((cos_m > 0).float().mean()), 4),
        "near-misses/Acc (verifier re-rank)": round(float((ver_m > 0).float().mean()), 4),
        "role swaps/count": len(swap_cos), "role swaps/cosine (mean)": round(float(sum(swap_cos) / len(swap_cos)), 4),
    }
    items = {RIGHT.format(stage): per_item([float(x > 0) for x in margins.tolist()]
                                           + [float(e[key] == "same_meaning") for e in examples])
             for stage, margins, key in (("pooled cosine", cos_m, "stage1_first"),
                                         ("verifier re-rank", ver_m, "stage2_first"))}
    items[ROLE_SWAPS] = per_item(swap_cos)
    ctx.record_training("order verifier", verifier_record(history))
    details = {"examples": examples, "nearmiss": per_family, "nearmiss_info": near.info}
    return {"metrics": metrics, "per_item": items, "details": details}
