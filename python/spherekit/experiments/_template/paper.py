"""What the toy paper prints, its claims as checks, and where a run departs from it."""

from __future__ import annotations

from ..claims import Claim, Measured
from ..printed import Printed
from ..uncertainty import paired_bootstrap
from .spec import MRR, R1

PRINTED = [
    Printed("Table 1", "frozen", R1, 0.40, setting="all-MiniLM-L6-v2"),
    Printed("Table 1", "tuned", R1, 0.55, setting="all-MiniLM-L6-v2", std=0.03),
    Printed("Table 1", "tuned", MRR, 0.70, setting="all-MiniLM-L6-v2"),
]

SMALL = 0.05  # "a second round adds little": |MRR difference| within this


def _per_query(scope, condition) -> list[float]:
    """The per-query reciprocal ranks of a condition, averaged over its seeds (same queries in every run)."""
    runs = [r["details"]["reciprocal_ranks"] for r in scope.runs(condition)]
    return [sum(col) / len(col) for col in zip(*runs)]


def _difference(scope, a: str, b: str, op: str, margin: float) -> Measured:
    """Measured.compare of MRR(b) - MRR(a) with a paired bootstrap over the test queries."""
    ma, mb = scope.metric(a, MRR), scope.metric(b, MRR)
    lo, hi, how = paired_bootstrap(_per_query(scope, a), _per_query(scope, b))
    return Measured.compare(mb - ma, op, margin, f"MRR {a} {ma:.3f} -> {b} {mb:.3f} ({mb - ma:+.3f})",
                            interval=(lo, hi), uncertainty=how)


CLAIMS = [
    Claim("T1", "fine-tuning improves term retrieval over the frozen encoder (R@1 0.40 -> 0.55)", "Table 1",
          "tuned's MRR above frozen's (per-query reciprocal ranks, mean over seeds)",
          lambda s: _difference(s, "frozen", "tuned", ">", 0.0)),
    Claim("T2", "a second round of fine-tuning adds little", "section 4",
          f"tuned-more's MRR within {SMALL} of tuned's", lambda s: _difference(s, "tuned", "tuned-more", "within",
                                                                                SMALL)),
    Claim("S1", "MRR is at least R@1", "definition", "MRR >= R@1 for every condition that ran",
          lambda s: Measured.decided(all(s.metric(c, MRR) >= s.metric(c, R1) for c in s.units),
                                     ", ".join(f"{c} {s.metric(c, MRR):.3f} >= {s.metric(c, R1):.3f}" for c in s.units)),
          sanity=True),
]


def departures(results: dict) -> list[str]:
    return [f"data: {results.get('data', {}).get('test_pairs', '?')} embedded test pairs (the toy paper: a held-out "
            "dictionary); absolute numbers are not comparable"]
