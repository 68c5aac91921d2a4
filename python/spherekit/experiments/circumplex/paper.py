"""What "Mapping the Circumplex of Affect" prints (Table 1), its claims as checks, and where a run departs from it.

Table 1: V-measure and CD-r averaged over its four datasets (Emolit, Empathetic Dialogue, SuperEmotion, PersonaGen)
for three of its backbones: multilingual-e5-large fine-tuned (our "@unfrozen" conditions), Qwen3-Embedding-4B and
Llama-3.2-3B frozen (our "@frozen" ones). None of those backbones or datasets is available offline, so the
comparison is of directions (which loss gives the higher V, which the higher CD-r, nGPT vs GPT), not of values.

The claims are checked per group of the main grid (spec.GroupScope: one backbone in one regime, with Pretrained);
paper_claims_hold() checks them on the paper's own Table 1, a test that the rules can hold.
"""

from __future__ import annotations

from ..claims import Claim, Measured, evaluate
from ..printed import Printed
from .spec import CD_R, PRETRAINED, TRAINED_RUNS, V, GroupScope, Run

# the paper's backbone whose Table 1 row sits next to ours, per regime (its fine-tuned and its frozen example)
NEXT_TO = {"unfrozen": "multilingual-e5-large", "frozen": "Qwen3-Embedding-4B"}

SOURCE = "Table 1 (average over four datasets)"
# the paper's backbones in Table 1, the regime they ran in, and their (V-measure, CD-r) per run
TABLE1 = {
    ("multilingual-e5-large", "unfrozen"): {
        PRETRAINED: (0.342, 0.574), "SINCERE-GPT": (0.760, 0.317), "SINCERE-nGPT": (0.744, 0.221),
        "SoftCSE-GPT": (0.755, 0.477), "SoftCSE-nGPT": (0.753, 0.499), "CircularCSE-GPT": (0.717, 0.757),
        "CircularCSE-nGPT": (0.720, 0.764)},
    ("Qwen3-Embedding-4B", "frozen"): {
        PRETRAINED: (0.495, 0.522), "SINCERE-GPT": (0.756, 0.305), "SINCERE-nGPT": (0.739, 0.545),
        "SoftCSE-GPT": (0.751, 0.552), "SoftCSE-nGPT": (0.723, 0.708), "CircularCSE-GPT": (0.643, 0.747),
        "CircularCSE-nGPT": (0.659, 0.753)},
    ("Llama-3.2-3B", "frozen"): {
        PRETRAINED: (0.094, 0.217), "SINCERE-GPT": (0.725, 0.358), "SINCERE-nGPT": (0.577, 0.425),
        "SoftCSE-GPT": (0.710, 0.548), "SoftCSE-nGPT": (0.516, 0.728), "CircularCSE-GPT": (0.579, 0.728),
        "CircularCSE-nGPT": (0.382, 0.708)},
}

PRINTED = [Printed(SOURCE, Run(run, None if run == PRETRAINED else regime).name, key, value, setting=backbone)
           for (backbone, regime), rows in TABLE1.items() for run, pair in rows.items()
           for key, value in zip((V, CD_R), pair)]


def paper_scopes() -> list[GroupScope]:
    """The paper's Table 1 as groups of units (one per backbone), to check the claims on the paper's own numbers."""
    out = []
    for backbone, regime in TABLE1:
        units: dict[str, dict] = {}
        for p in PRINTED:
            if p.setting == backbone:
                units.setdefault(p.condition, {"metrics": {}})["metrics"][p.metric] = p.value
        out.append(GroupScope(backbone, regime, units))
    return out


def _values(s, key: str, runs=TRAINED_RUNS) -> dict[str, float]:
    return {run: s.metric(s.condition(run), key) for run in runs}


def _f(x: float) -> str:
    return f"{x:.3f}"


def _v_order(s):
    v = _values(s, V)
    gaps = [min(v[f"SINCERE-{h}"], v[f"SoftCSE-{h}"]) - v[f"CircularCSE-{h}"] for h in ("GPT", "nGPT")]
    return Measured.compare(min(gaps), ">", 0.0, "; ".join(
        f"{h}: SINCERE {_f(v[f'SINCERE-{h}'])}, SoftCSE {_f(v[f'SoftCSE-{h}'])}, CircularCSE "
        f"{_f(v[f'CircularCSE-{h}'])}" for h in ("GPT", "nGPT")))


def _cd_order(s):
    c = _values(s, CD_R, [f"{loss}-{h}" for loss in ("SINCERE", "CircularCSE") for h in ("GPT", "nGPT")])
    gaps = [c[f"CircularCSE-{h}"] - c[f"SINCERE-{h}"] for h in ("GPT", "nGPT")]
    return Measured.compare(min(gaps), ">", 0.0, "; ".join(
        f"{h}: CircularCSE {_f(c[f'CircularCSE-{h}'])} vs SINCERE {_f(c[f'SINCERE-{h}'])}" for h in ("GPT", "nGPT")))


def _best_cd(s):
    c = _values(s, CD_R)
    circular = {r: x for r, x in c.items() if r.startswith("CircularCSE")}
    others = {r: x for r, x in c.items() if r not in circular}
    best = max(c, key=c.get)  # the first of Table 1's order on a tie
    return Measured.compare(max(circular.values()) - max(others.values()), ">", 0.0,
                            f"highest: {best} {_f(c[best])}; best other than CircularCSE: "
                            f"{max(others, key=others.get)} {_f(max(others.values()))}")


def pearson_v_cd(s) -> float | None:
    """Pearson(V-measure, CD-r) over the six trained runs (spherekit.evaluation.metrics.pearson); None where it
    is undefined (a constant column)."""
    from ...evaluation.metrics import pearson

    v, c = _values(s, V), _values(s, CD_R)
    try:
        return pearson([v[r] for r in TRAINED_RUNS], [c[r] for r in TRAINED_RUNS])
    except ValueError:
        return None


def _tradeoff(s):
    r = pearson_v_cd(s)
    if r is None:
        return Measured.decided(False, "Pearson(V, CD-r) undefined (a constant column)")
    return Measured.compare(r, "<", 0.0, f"Pearson(V, CD-r) over the six runs {r:+.2f}")


def _pretrained_lowest(s):
    v, v0 = _values(s, V), s.metric(PRETRAINED, V)
    lowest = min(v, key=v.get)
    return Measured.compare(v[lowest] - v0, ">", 0.0, f"Pretrained {_f(v0)}; lowest trained: {lowest} "
                                                      f"{_f(v[lowest])}")


def _paper_pearsons() -> str:
    return ", ".join(f"{s.backbone} {pearson_v_cd(s):+.2f}" for s in paper_scopes())


CLAIMS = [
    Claim("C1", "V-measure: SINCERE and SoftCSE cluster the labels better than CircularCSE, with both heads (every "
          "backbone, e.g. multilingual-e5-large 0.760 / 0.744 / 0.755 / 0.753 vs 0.717 / 0.720)", "Table 1",
          "per head, the lower V-measure of SINCERE and SoftCSE above CircularCSE's (both heads: the smaller gap "
          "> 0)", _v_order),
    Claim("C2", "CD-r: CircularCSE orders the labels around the circle better than SINCERE, with both heads (every "
          "backbone, e.g. multilingual-e5-large 0.757 / 0.764 vs 0.317 / 0.221)", "Table 1",
          "per head, CircularCSE's CD-r above SINCERE's (both heads: the smaller gap > 0)", _cd_order),
    Claim("C3", "The highest CD-r of the six runs is a CircularCSE run (multilingual-e5-large 0.764 and "
          "Qwen3-Embedding-4B 0.753, CircularCSE-nGPT; Llama-3.2-3B: SoftCSE-nGPT 0.728 ties CircularCSE-GPT)",
          "Table 1", "the best CircularCSE CD-r above the best of the other four runs (> 0; a tie does not hold)",
          _best_cd),
    Claim("C4", "Trade-off: V-measure and CD-r are negatively correlated across the six runs (Pearson over Table "
          f"1's six runs: {_paper_pearsons()})", "Table 1",
          "Pearson(V-measure, CD-r) over the six trained runs < 0 (undefined: does not hold)", _tradeoff),
    Claim("C5", "Every trained head clusters better than the pretrained embedding (Pretrained V 0.342 / 0.495 / "
          "0.094)", "Table 1", "the lowest V-measure of the six trained runs above Pretrained's (> 0)",
          _pretrained_lowest),
]


def paper_claims_hold() -> dict[str, list[bool]]:
    """{claim id: [holds on each of Table 1's backbones]}: the claims checked on the paper's own numbers."""
    out: dict[str, list[bool]] = {}
    for record in evaluate(CLAIMS, paper_scopes()):
        out.setdefault(record["id"], []).append(record["verdict"] == "holds")
    return out


def departures(results: dict) -> list[str]:
    """Where the run departs from the paper (beyond the configuration table's marked values)."""
    cfg, data = results["config"], results.get("data", {})
    out = []
    if data.get("source") == "offline":
        per = data.get("train_per_label", {})
        out.append(f"data: the offline 12-label set (WordNet, GCIDE, NRC lexicon texts; "
                   f"{min(per.values()) if per else '?'} train and {cfg['n_test_per_label']} test texts per label) "
                   "instead of Emolit, Empathetic Dialogue, SuperEmotion and PersonaGen (500 / 100 per label); "
                   "one dataset, so no average over four")
    if results.get("device") != "cuda":
        out.append("precision: fp32 on a CPU (the paper: bf16)")
    out.append("frozen backbones stay in eval mode (no dropout inside them) so their states can be cached; the "
               "authors' trainer leaves them in train mode")
    out.append(f"CD-r over label pairs {cfg['cd_pairs']} and polarity classes by valence (surprise and calmness "
               "neutral): the paper's Fig. 3 and pair set are not in its text")
    return out


__all__ = ["CLAIMS", "PRINTED", "TABLE1", "departures", "paper_claims_hold", "paper_scopes"]
