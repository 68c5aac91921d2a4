"""What "Pooling Matters for Frozen Encoders" prints, its claims as checks, and where a run departs from it."""

from __future__ import annotations

from spherekit.experiments.api.claims import Claim, Measured, difference
from spherekit.experiments.api.printed import Printed

from .spec import MRR, R1

PRINTED = [
    Printed("Table 1", "frozen-mean", MRR, 0.62),
    Printed("Table 1", "frozen-cls", MRR, 0.48),
    Printed("Table 1", "frozen-max", MRR, 0.55),
    Printed("Table 2", "tuned-mean", MRR, 0.70),
    Printed("Table 2", "tuned-cls", MRR, 0.67),
]

GAP = 0.05  # P2: "narrows the gap to within 0.05 MRR"


def _difference(scope, a: str, b: str, op: str, margin: float) -> Measured:
    """MRR(b) - MRR(a) op margin, with the two-level bootstrap over the seeds and the test terms (claims.difference
    of the runs' per-term reciprocal ranks)."""
    ma, mb = scope.metric(a, MRR), scope.metric(b, MRR)
    return difference(scope, a, b, MRR, op, margin, text=f"MRR {a} {ma:.3f} -> {b} {mb:.3f} ({mb - ma:+.3f})")


CLAIMS = [
    Claim("P1", "on term -> gloss retrieval, mean pooling of a frozen encoder beats CLS pooling (MRR 0.62 vs 0.48)",
          "Table 1", "frozen-mean's MRR minus frozen-cls's MRR > 0 (bootstrap over the test terms)",
          lambda s: _difference(s, "frozen-cls", "frozen-mean", ">", 0.0)),
    Claim("P2", "fine-tuning with MNRL for 20 steps narrows the gap between mean and CLS pooling to within 0.05 MRR "
          "(0.70 vs 0.67)", "Table 2",
          f"|tuned-mean's MRR minus tuned-cls's MRR| <= {GAP} (per-term reciprocal ranks averaged over seeds, "
          "bootstrap over the seeds and test terms)",
          lambda s: _difference(s, "tuned-cls", "tuned-mean", "within", GAP), rests_on=("tuned-cls", "tuned-mean")),
    Claim("P3", "max pooling is not better than mean pooling when frozen (MRR 0.55 vs 0.62)", "Table 1",
          "frozen-max's MRR minus frozen-mean's MRR <= 0 (bootstrap over the test terms)",
          lambda s: _difference(s, "frozen-mean", "frozen-max", "<=", 0.0)),
    Claim("S1", "MRR is at least R@1", "definition", "MRR >= R@1 for every condition that ran",
          lambda s: Measured.decided(all(s.metric(c, MRR) >= s.metric(c, R1) for c in s.units),
                                     ", ".join(f"{c} {s.metric(c, MRR):.3f} >= {s.metric(c, R1):.3f}"
                                               for c in s.units)),
          sanity=True),
]


def departures(results: dict) -> list[str]:
    data = results.get("data", {})
    return [
        f"data: {data.get('test_pairs', '?')} test and {data.get('train_pairs', '?')} training pairs of 30 (term, "
        "gloss) pairs written for this reproduction, split by the data seed (the paper's own list is not "
        "published); absolute numbers are not comparable",
        "backbone: the paper does not name its encoder; the pooling of ours is set by replacing its "
        "sentence-transformers Pooling module (mean, CLS or max over the last layer's token embeddings)",
        "training: batch size, learning rate and MNRL scale are our choices (the paper gives MNRL and 20 steps only)",
        "claims: P2 is checked on the tuned runs' per-term reciprocal ranks averaged over seeds; its 'narrows' part "
        "(the frozen gap being larger) is shown by Table 1 and P1, not tested apart",
    ]
