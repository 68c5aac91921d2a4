"""What "Principles of Concept Representation in Sentence Encoders" prints, and its claims as checks.

The paper's tables (1-6, 9-11, 13) are missing from the text we have; the numbers below are the ones its
prose states (sections 1, 5.2-5.6, appendices F and H), all for all-mpnet-base-v2. Values marked derived are
computed from a stated difference ("M2 ... +0.005 t2d R@10" over B1's 0.654). Mapping of the paper's columns
to our metric keys: "pair ROC-AUC" is read as the pair ROC-AUC against the rule-based hard negatives (B3's
0.769 vs M1's 0.961 only make sense against hard negatives; our random-negative pair ROC-AUC is reported too).
"""

from __future__ import annotations

# label -> metric key in a unit's metrics
METRICS = {
    "t2d R@10": "in-domain/R@10 (term to definition)",
    "t2d MRR": "in-domain/MRR (term to definition)",
    "d2t R@10": "in-domain/R@10 (definition to term)",
    "d2t MRR": "in-domain/MRR (definition to term)",
    "HH t2d R@10": "head-holdout/R@10 (term to definition)",
    "HH d2t R@10": "head-holdout/R@10 (definition to term)",
    "pair ROC-AUC (hard negatives)": "in-domain/pair ROC-AUC (hard negatives)",
    "pair ROC-AUC (random negative)": "in-domain/pair ROC-AUC (random negative)",
    "negation ROC-AUC": "in-domain/ROC-AUC (lexical negation)",
    "antonym ROC-AUC": "in-domain/ROC-AUC (antonym flip)",
    "POS-swap ROC-AUC": "in-domain/ROC-AUC (same-POS random swap)",
    "prefix-swap ROC-AUC": "in-domain/ROC-AUC (same-POS prefix swap)",
    "type-swap ROC-AUC": "in-domain/ROC-AUC (ontological type swap)",
    "anisotropy": "in-domain/anisotropy",
    "effective rank": "in-domain/effective rank",
    "NP R@10": "np/R@10 (NP paraphrase)",
    "DBpedia R@10": "dbpedia/R@10",
}

PAPER_BACKBONE = "all-mpnet-base-v2"
# condition -> {label: (value, note)}; note "" = printed as is
PAPER = {
    "B0": {"t2d R@10": (0.552, ""), "negation ROC-AUC": (0.470, ""), "anisotropy": (0.126, ""),
           "effective rank": (247.0, ""), "NP R@10": (0.704, ""), "DBpedia R@10": (0.608, "")},
    "B0-WM": {"t2d R@10": (0.392, ""), "anisotropy": (0.303, ""), "effective rank": (177.0, "")},
    "B1": {"t2d R@10": (0.654, ""), "negation ROC-AUC": (0.980, ""), "anisotropy": (0.012, ""),
           "effective rank": (247.2, ""), "NP R@10": (0.656, ""), "DBpedia R@10": (0.649, "")},
    "B3": {"t2d R@10": (0.657, ""), "pair ROC-AUC (hard negatives)": (0.769, ""), "negation ROC-AUC": (0.528, ""),
           "type-swap ROC-AUC": (0.472, ""), "anisotropy": (0.166, ""), "effective rank": (193.9, ""),
           "NP R@10": (0.655, "")},
    "M1": {"t2d R@10": (0.651, ""), "pair ROC-AUC (hard negatives)": (0.961, ""), "negation ROC-AUC": (0.984, ""),
           "type-swap ROC-AUC": (0.976, ""), "anisotropy": (0.015, ""), "effective rank": (239.4, "")},
    "M2": {"t2d R@10": (0.659, "derived: B1 + 0.005")},
    "B1-unified": {"t2d R@10": (0.666, "derived: B1 + 0.012"), "negation ROC-AUC": (0.798, "derived: B1 - 0.182")},
}
PAPER_LAYER_ANISOTROPY = {"B0": {"final layer": 0.146, "layers 5-11": (0.45, 0.50)}}

# thresholds of the claim checks (documented in the card)
SMALL_RANKING_CHANGE = 0.02      # |delta R@10| counted as "ranking unchanged"
LARGE_CALIBRATION_GAIN = 0.10    # ROC-AUC gain counted as "discrimination improves"
RANK_UNCHANGED = 0.10            # relative change of effective rank counted as "unchanged"
NO_BENEFIT = 0.01                # a readout "beats B1" only by more than this t2d R@10


def value(units: dict, backbone: str, condition: str, label: str):
    unit = units.get(f"{backbone}/{condition}")
    if unit is None:
        return None
    return unit.get("metrics", {}).get(METRICS[label])


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def claims(units: dict, backbone: str) -> list[tuple[str, str, str]]:
    """[(claim, what we measured, verdict)] for one backbone; verdict "holds" | "does not hold" | "not run"."""

    def v(cond, label):
        return value(units, backbone, cond, label)

    out = []

    def check(claim, needed, needs: str, measured, holds):
        if any(x is None for x in needed):
            out.append((claim, f"needs {needs}", "not run"))
        else:
            out.append((claim, measured(), "holds" if holds() else "does not hold"))

    r0, r1, r3 = v("B0", "t2d R@10"), v("B1", "t2d R@10"), v("B3", "t2d R@10")
    check("H1/P1: concept-equivalence fine-tuning improves t2d R@10 over the frozen encoder (0.552 -> 0.654)",
          [r0, r1], "B0 and B1", lambda: f"B0 {_fmt(r0)} -> B1 {_fmt(r1)}", lambda: r1 > r0)
    a0, a1, a3 = v("B0", "anisotropy"), v("B1", "anisotropy"), v("B3", "anisotropy")
    check("P1: fine-tuning collapses anisotropy (0.126 -> 0.012)", [a0, a1], "B0 and B1",
          lambda: f"B0 {_fmt(a0)} -> B1 {_fmt(a1)}", lambda: a1 < 0.5 * a0)
    e0, e1 = v("B0", "effective rank"), v("B1", "effective rank")
    check(f"P1: ... while effective rank stays unchanged (247.0 -> 247.2; here: within {RANK_UNCHANGED:.0%})",
          [e0, e1], "B0 and B1", lambda: f"B0 {e0:.1f} -> B1 {e1:.1f} ({(e1 - e0) / e0:+.1%})",
          lambda: abs(e1 - e0) <= RANK_UNCHANGED * e0)
    n0, n1, n3 = v("B0", "negation ROC-AUC"), v("B1", "negation ROC-AUC"), v("B3", "negation ROC-AUC")
    check("H1: the frozen encoder fails negation (0.470) and fine-tuning with hard negatives fixes it (0.980)",
          [n0, n1], "B0 and B1", lambda: f"B0 {_fmt(n0)} -> B1 {_fmt(n1)}", lambda: n0 < 0.6 and n1 > n0 + 0.2)
    p1, p3 = v("B1", "pair ROC-AUC (hard negatives)"), v("B3", "pair ROC-AUC (hard negatives)")
    t1, t3 = v("B1", "type-swap ROC-AUC"), v("B3", "type-swap ROC-AUC")
    check(f"P3: hard negatives do not improve ranking (B3 0.657 vs M1 0.651; here B1's t2d R@10 is not above B3's "
          f"by more than {SMALL_RANKING_CHANGE})", [r1, r3], "B1 and B3",
          lambda: f"t2d R@10 B3 {_fmt(r3)}, B1 {_fmt(r1)} ({r1 - r3:+.3f})", lambda: r1 - r3 <= SMALL_RANKING_CHANGE)
    check(f"P3: ... but improve discrimination: negation ROC-AUC up by >= {LARGE_CALIBRATION_GAIN} with hard "
          "negatives (B3 0.528 -> M1 0.984)", [n1, n3], "B1 and B3",
          lambda: f"negation B3 {_fmt(n3)} -> B1 {_fmt(n1)}; type swap B3 {_fmt(t3)} -> B1 {_fmt(t1)}",
          lambda: n1 - n3 >= LARGE_CALIBRATION_GAIN)
    check(f"P3: ... and calibration: pair ROC-AUC against rule negatives up by >= {LARGE_CALIBRATION_GAIN} "
          "(B3 0.769 -> M1 0.961)", [p1, p3], "B1 and B3", lambda: f"B3 {_fmt(p3)} -> B1 {_fmt(p1)}",
          lambda: p1 - p3 >= LARGE_CALIBRATION_GAIN)
    check("Hard negatives are the dominant geometric factor: B3 keeps a higher anisotropy than B1 (0.166 vs 0.012)",
          [a1, a3], "B1 and B3", lambda: f"B3 {_fmt(a3)} vs B1 {_fmt(a1)}", lambda: a3 > 2 * a1)
    rw, aw = v("B0-WM", "t2d R@10"), v("B0-WM", "anisotropy")
    check("The frozen uniform mean of the last 4 layers (B0-WM) is worse than B0 in retrieval and anisotropy",
          [rw, r0, aw, a0], "B0 and B0-WM", lambda: f"t2d R@10 {_fmt(rw)} vs {_fmt(r0)}; anisotropy {_fmt(aw)} vs "
          f"{_fmt(a0)}", lambda: rw < r0 and aw > a0)
    variants = {c: v(c, "t2d R@10") for c in ("B2", "M1", "M1-K6", "M2", "M3")}
    ran = {c: x for c, x in variants.items() if x is not None}
    check(f"H2/P2: no readout variant beats fine-tuned mean pooling (B1) by more than {NO_BENEFIT} t2d R@10",
          [r1] + ([None] if not ran else []), "B1 and at least one of B2, M1, M1-K6, M2, M3",
          lambda: "; ".join(f"{c} {x - r1:+.3f}" for c, x in ran.items()),
          lambda: all(x - r1 <= NO_BENEFIT for x in ran.values()))
    rm1, rm3 = variants["M1"], variants["M3"]
    check("Deep supervision (M3) improves over M1 but does not reach B1", [rm1, rm3, r1], "B1, M1 and M3",
          lambda: f"M1 {_fmt(rm1)}, M3 {_fmt(rm3)}, B1 {_fmt(r1)}", lambda: rm1 < rm3 < r1)
    ru, nu = v("B1-unified", "t2d R@10"), v("B1-unified", "negation ROC-AUC")
    pu = v("B1-unified", "pair ROC-AUC (hard negatives)")
    check("Appendix F: B1-unified ranks better than B1 (+0.012 t2d R@10) but is less calibrated (pair ROC-AUC "
          "-0.058, negation -0.182)", [ru, r1, nu, n1, pu, p1], "B1 and B1-unified",
          lambda: f"t2d R@10 {ru - r1:+.3f}, pair ROC-AUC {pu - p1:+.3f}, negation {nu - n1:+.3f}",
          lambda: ru > r1 and pu < p1 and nu < n1)
    _layer_claim(out, units, backbone)
    np0, np1 = v("B0", "NP R@10"), v("B1", "NP R@10")
    check("NP paraphrase: the frozen encoder beats every fine-tuned one (B0 0.704 > B1 0.656)", [np0, np1],
          "the NP paraphrase file (--data-dir)", lambda: f"B0 {_fmt(np0)} vs B1 {_fmt(np1)}", lambda: np0 > np1)
    d0, d1 = v("B0", "DBpedia R@10"), v("B1", "DBpedia R@10")
    check("DBpedia: generic fine-tuning transfers partially (0.608 -> 0.649)", [d0, d1],
          "the DBpedia files (--data-dir)", lambda: f"B0 {_fmt(d0)} -> B1 {_fmt(d1)}", lambda: d1 > d0)
    return out


def _layer_claim(out, units, backbone):
    rows = []
    for cond in ("B0", "B1"):
        unit = units.get(f"{backbone}/{cond}")
        layers = (unit or {}).get("details", {}).get("layers")
        if not layers:
            continue
        mrr = {int(k): x for k, x in layers["MRR"].items()}
        aniso = {int(k): x for k, x in layers["anisotropy"].items()}
        last = max(mrr)
        if last > 1:  # compare with the transformer layers only (0 is the embedding output)
            mrr, aniso = ({k: x for k, x in d.items() if k > 0} for d in (mrr, aniso))
        rows.append((cond, mrr[last] == max(mrr.values()), aniso[last] < min(a for k, a in aniso.items() if k < last),
                     mrr[last], max(x for k, x in mrr.items() if k < last), aniso[last]))
    claim = "P2: the final layer dominates before and after fine-tuning (highest MRR, anisotropy dropping there)"
    if not rows:
        out.append((claim, "needs B0 and B1", "not run"))
        return
    measured = "; ".join(f"{c}: final-layer MRR {m:.3f} vs best earlier {e:.3f}, final anisotropy {a:.3f}"
                         for c, _, _, m, e, a in rows)
    out.append((claim, measured, "holds" if all(top and low for _, top, low, *_ in rows) else "does not hold"))
