"""What "Mapping the Circumplex of Affect" prints (Table 1), and its claims as checks on our runs.

Table 1: V-measure and CD-r averaged over its four datasets, for three of its backbones. None of those
backbones or datasets is available offline, so the comparison is of directions (which loss gives the
higher V, which the higher CD-r, nGPT vs GPT), not of values.
"""

from __future__ import annotations

CITATION = """@inproceedings{yamauchi2026circumplex,
  title     = {Mapping the Circumplex of Affect: Geometric Analysis of Emotion Representations via
               Hyperspherical Contrastive Learning},
  author    = {Yamauchi, Yusuke and Aizawa, Akiko},
  booktitle = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics},
  year      = {2026}
}"""

# Table 1 (average over Emolit, Empathetic Dialogue, SuperEmotion, PersonaGen): run -> (V, CD-r)
TABLE1 = {
    "multilingual-e5-large (fine-tuned)": {
        "Pretrained": (0.342, 0.574), "SINCERE-GPT": (0.760, 0.317), "SINCERE-nGPT": (0.744, 0.221),
        "SoftCSE-GPT": (0.755, 0.477), "SoftCSE-nGPT": (0.753, 0.499), "CircularCSE-GPT": (0.717, 0.757),
        "CircularCSE-nGPT": (0.720, 0.764)},
    "Qwen3-Embedding-4B (frozen)": {
        "Pretrained": (0.495, 0.522), "SINCERE-GPT": (0.756, 0.305), "SINCERE-nGPT": (0.739, 0.545),
        "SoftCSE-GPT": (0.751, 0.552), "SoftCSE-nGPT": (0.723, 0.708), "CircularCSE-GPT": (0.643, 0.747),
        "CircularCSE-nGPT": (0.659, 0.753)},
    "Llama-3.2-3B (frozen)": {
        "Pretrained": (0.094, 0.217), "SINCERE-GPT": (0.725, 0.358), "SINCERE-nGPT": (0.577, 0.425),
        "SoftCSE-GPT": (0.710, 0.548), "SoftCSE-nGPT": (0.516, 0.728), "CircularCSE-GPT": (0.579, 0.728),
        "CircularCSE-nGPT": (0.382, 0.708)},
}
TRAINED = ("SINCERE-GPT", "SINCERE-nGPT", "SoftCSE-GPT", "SoftCSE-nGPT", "CircularCSE-GPT", "CircularCSE-nGPT")


def _pearson(xs, ys) -> float | None:
    """spherekit.evaluation.metrics.pearson, None where it is undefined (fewer than 3 runs, a constant column)."""
    from ...evaluation.metrics import pearson

    if len(xs) < 3:
        return None
    try:
        return pearson(xs, ys)
    except ValueError:
        return None


def _holds_v_order(t):
    return all(min(t[f"{lo}-{h}"][0] for lo in ("SINCERE", "SoftCSE")) > t[f"CircularCSE-{h}"][0]
               for h in ("GPT", "nGPT"))


def _holds_cd_order(t):
    return all(t[f"CircularCSE-{h}"][1] > t[f"SINCERE-{h}"][1] for h in ("GPT", "nGPT"))


def _best_cd_is_circular(t):
    best = max(TRAINED, key=lambda r: t[r][1])
    return best.startswith("CircularCSE")


def _tradeoff(t):
    r = _pearson([t[x][0] for x in TRAINED], [t[x][1] for x in TRAINED])
    return r is not None and r < 0


def _pretrained_lowest_v(t):
    return all(t[x][0] > t["Pretrained"][0] for x in TRAINED)


# (claim, paper's evidence, check on a {run: (V, CD-r)} table of the six trained runs (+ Pretrained))
CLAIMS = [
    ("V-measure: SINCERE and SoftCSE cluster the labels better than CircularCSE (both heads)",
     "Table 1, every backbone: e.g. multilingual-e5-large 0.760 / 0.744 / 0.755 / 0.753 vs 0.717 / 0.720",
     _holds_v_order),
    ("CD-r: CircularCSE orders the labels around the circle better than SINCERE (both heads)",
     "Table 1, every backbone: e.g. multilingual-e5-large 0.757 / 0.764 vs 0.317 / 0.221", _holds_cd_order),
    ("The highest CD-r of the six runs is a CircularCSE run",
     "Table 1: multilingual-e5-large 0.764 and Qwen3-Embedding-4B 0.753 (CircularCSE-nGPT); "
     "Llama-3.2-3B: SoftCSE-nGPT 0.728 ties CircularCSE-GPT", _best_cd_is_circular),
    ("Trade-off: V-measure and CD-r are negatively correlated across the six runs",
     "Pearson(V, CD-r) over Table 1's six runs: "
     + ", ".join(f"{name.split(' ')[0]} {_pearson([t[x][0] for x in TRAINED], [t[x][1] for x in TRAINED]):+.2f}"
                 for name, t in TABLE1.items()), _tradeoff),
    ("Every trained head clusters better than the pretrained embedding",
     "Table 1: Pretrained V 0.342 / 0.495 / 0.094", _pretrained_lowest_v),
]


def check_claims(table: dict) -> list[tuple[str, str, bool | None]]:
    """[(claim, paper's evidence, holds here)] for one backbone/regime table {run: (V, CD-r)}; None when the
    table lacks a run the claim needs."""
    out = []
    for claim, evidence, check in CLAIMS:
        try:
            holds = bool(check(table))
        except (KeyError, TypeError):
            holds = None
        out.append((claim, evidence, holds))
    return out


def paper_claims_hold() -> dict[str, list[bool]]:
    """Each claim checked on the paper's own Table 1 (a self-test of the checks)."""
    return {claim: [bool(check(t)) for t in TABLE1.values()] for claim, _, check in CLAIMS}
