"""The paper's claims, each checked on the measured numbers of one backbone (never hard-coded values).

check(units) takes {condition: unit result} of one backbone and returns [(claim, measured, holds)], holds None
when a unit the claim needs did not run. Rules:
- C1 / C2 Table 1: mean_B < mean_A (nDCG@10, Acc@1); reported with Delta = B - A, its propagated std
  sqrt(std_A^2 + std_B^2) and the relative drop (A - B) / A.
- C3 Figure 1: under Model A every family's mean near-miss cosine lies above the midpoint of the reference
  positives' and negatives' means ("near the positive regime").
- C4 Figure 1: Model B lowers the mean cosine of negation and spatial near-misses (Delta < 0, more than half of
  the pairs lowered by > 0.01, the released code's "B wins"); C4b: binding's drop is the smallest of the three.
- C5 / C5b Figure 2: F1 has the highest frozen nDCG@10, F2 the lowest (among the verifiers that ran).
- C6 Figure 2: F4 has the highest end-to-end nDCG@10.
- C7 Figure 3: frozen MaxSim (F1) scores near-misses at least as high as Model B's pooled cosine (overall mean).
- C8 Figure 3: the best separation (ROC-AUC, positives vs near-misses) of F3/F4 exceeds that of F0-F2.
- C9 Figure 3: end-to-end F4 separates spatial flips best (highest spatial AUC of all verifier runs).
"""

from __future__ import annotations

import math

import numpy as np

from .data import FAMILIES


def _seeds(unit, key):
    return [s[key] for s in unit["seeds"]] if unit else []


def _fig1_means(unit) -> dict:
    figs = _seeds(unit, "figure1")
    return {k: float(np.mean([np.mean(f[k]) for f in figs])) for k in figs[0]} if figs else {}


def _lowered_share(a, b, fam) -> float:
    pairs = [(x, y) for fa, fb in zip(_seeds(a, "figure1"), _seeds(b, "figure1")) for x, y in zip(fa[fam], fb[fam])]
    return sum(y < x - 0.01 for x, y in pairs) / max(1, len(pairs))


def _table1(units, metric):
    a, b = units.get("model_a"), units.get("model_b")
    if not (a and b):
        return None, "Model A or B did not run"
    ma, mb = a["metrics"][metric], b["metrics"][metric]
    sd = math.sqrt(a["metrics"][f"{metric}_std"] ** 2 + b["metrics"][f"{metric}_std"] ** 2)
    rel = 100 * (ma - mb) / ma if ma else float("nan")
    return mb < ma, f"A {ma:.3f}, B {mb:.3f}, B - A = {mb - ma:+.3f} +- {sd:.3f} (relative drop {rel:.1f}%)"


def _verifier_metric(units, regime, metric="nDCG@10") -> dict:
    return {c.split("_")[1]: u["metrics"][metric] for c, u in units.items() if c.startswith(regime + "_")}


def _fig3(units) -> dict:
    """{condition: {family: {"mean", "auc"}}} averaged over seeds."""
    out = {}
    for c, u in units.items():
        figs = _seeds(u, "figure3") if "_F" in c else []
        if figs:
            out[c] = {fam: {k: float(np.mean([f[fam][k] for f in figs])) for k in ("mean", "auc")}
                      for fam in figs[0]}
    return out


def _best(scores: dict, name: str, highest=True):
    if len(scores) < 2 or name not in scores:
        return None, "needs two or more verifiers including " + name
    ordered = sorted(scores, key=scores.get, reverse=highest)
    text = ", ".join(f"{k} {scores[k]:.3f}" for k in ordered)
    return ordered[0] == name, text


def check(units: dict) -> list[tuple[str, str, bool | None]]:
    out = []
    for metric, cid in (("nDCG@10", "C1"), ("Acc@1", "C2")):
        holds, text = _table1(units, metric)
        out.append((f"{cid} Table 1: structural negatives (Model B) lower mean {metric} vs Model A", text, holds))
    a, b = _fig1_means(units.get("model_a")), _fig1_means(units.get("model_b"))
    fams = [f for f in FAMILIES if f in a]
    if a:
        mid = (a["positive"] + a["negative"]) / 2
        text = ", ".join(f"{f} {a[f]:.3f}" for f in fams) + f"; positives {a['positive']:.3f}, negatives " \
               f"{a['negative']:.3f} (midpoint {mid:.3f})"
        out.append(("C3 Figure 1: under Model A near-misses stay near the positive regime", text,
                    all(a[f] > mid for f in fams)))
    else:
        out.append(("C3 Figure 1: under Model A near-misses stay near the positive regime", "Model A did not run", None))
    if a and b:
        share = {f: _lowered_share(units["model_a"], units["model_b"], f) for f in fams}
        delta = {f: b[f] - a[f] for f in fams}
        text = ", ".join(f"{f} {delta[f]:+.3f} ({100 * share[f]:.0f}% of pairs lowered)" for f in fams)
        ok = all(delta.get(f, 0) < 0 and share.get(f, 0) > 0.5 for f in ("negation", "spatial") if f in fams)
        out.append(("C4 Figure 1: Model B lowers the cosine of negation and spatial near-misses", text, ok))
        drops = {f: -delta[f] for f in fams}
        out.append(("C4b Figure 1: the binding gain is the least definitive (smallest drop)", text,
                    min(drops, key=drops.get) == "binding" if "binding" in drops else None))
    else:
        for claim in ("C4 Figure 1: Model B lowers the cosine of negation and spatial near-misses",
                      "C4b Figure 1: the binding gain is the least definitive (smallest drop)"):
            out.append((claim, "Model A or B did not run", None))
    frozen, e2e = _verifier_metric(units, "frozen"), _verifier_metric(units, "e2e")
    holds, text = _best(frozen, "F1")
    out.append(("C5 Figure 2: MaxSim (F1) is the strongest frozen reranker (nDCG@10)", text, holds))
    holds, text = _best(frozen, "F2", highest=False)
    out.append(("C5b Figure 2: soft alignment (F2) is the weakest frozen reranker", text, holds))
    holds, text = _best(e2e, "F4")
    out.append(("C6 Figure 2: end-to-end F4 gives the largest gains", text, holds))
    f3 = _fig3(units)
    bcos = float(np.mean([b[f] for f in fams])) if b and fams else None
    if "frozen_F1" in f3 and bcos:
        m = f3["frozen_F1"]["overall"]["mean"]
        out.append(("C7 Figure 3: MaxSim (F1) scores near-misses as near-identical (>= Model B's pooled cosine)",
                    f"frozen F1 {m:.3f} vs Model B cosine {bcos:.3f}", m >= bcos))
    else:
        out.append(("C7 Figure 3: MaxSim (F1) scores near-misses as near-identical (>= Model B's pooled cosine)",
                    "frozen F1 or Model B did not run", None))
    learned = {c: v["overall"]["auc"] for c, v in f3.items() if c[-2:] in ("F3", "F4")}
    simple = {c: v["overall"]["auc"] for c, v in f3.items() if c[-2:] in ("F0", "F1", "F2")}
    if learned and simple:
        text = ", ".join(f"{c} {v:.3f}" for c, v in sorted({**simple, **learned}.items()))
        out.append(("C8 Figure 3: F3/F4 separate near-misses where F0-F2 do not (ROC-AUC)", text,
                    max(learned.values()) > max(simple.values())))
    else:
        out.append(("C8 Figure 3: F3/F4 separate near-misses where F0-F2 do not (ROC-AUC)",
                    "needs a learned and a parameter-free verifier", None))
    spatial = {c: v["spatial"]["auc"] for c, v in f3.items() if "spatial" in v}
    holds, text = _best(spatial, "e2e_F4")
    out.append(("C9 Figure 3: end-to-end F4 is strongest on spatial flips (spatial ROC-AUC)", text, holds))
    return out
