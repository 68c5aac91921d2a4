"""What the toy paper prints, its claims as checks, and where a run departs from it."""

from __future__ import annotations

from ..api.claims import Claim, Measured, difference
from ..api.printed import Printed
from .spec import MRR, R1

PRINTED = [
    Printed("Table 1", "frozen", R1, 0.40, setting="all-MiniLM-L6-v2"),
    Printed("Table 1", "tuned", R1, 0.55, setting="all-MiniLM-L6-v2", std=0.03),
    Printed("Table 1", "tuned", MRR, 0.70, setting="all-MiniLM-L6-v2"),
]

SMALL = 0.05  # "a second round adds little": |MRR difference| within this

CLAIMS = [
    Claim("T1", "fine-tuning improves term retrieval over the frozen encoder (R@1 0.40 -> 0.55)", "Table 1",
          "tuned's MRR above frozen's (per-query reciprocal ranks, mean over seeds)",
          lambda s: difference(s, "frozen", "tuned", MRR, ">", 0.0), rests_on=("tuned",)),
    Claim("T2", "a second round of fine-tuning adds little", "section 4",
          f"tuned-more's MRR within {SMALL} of tuned's",
          lambda s: difference(s, "tuned", "tuned-more", MRR, "within", SMALL), rests_on=("tuned", "tuned-more")),
    Claim("S1", "MRR is at least R@1", "definition", "MRR >= R@1 for every condition that ran",
          lambda s: Measured.decided(all(s.metric(c, MRR) >= s.metric(c, R1) for c in s.units),
                                     ", ".join(f"{c} {s.metric(c, MRR):.3f} >= {s.metric(c, R1):.3f}" for c in s.units)),
          sanity=True),
]


def departures(results: dict) -> list[str]:
    return [f"data: {results.get('data', {}).get('test_pairs', '?')} embedded test pairs (the toy paper: a held-out "
            "dictionary); absolute numbers are not comparable"]
