"""Whether a training learned, decided from its own record (the logged training losses): a claim that rests on a
training that did not learn is "inconclusive" by rule (paper.py), whatever its numbers say.

    learned([2.1, 2.0, 1.9, 1.8])     # True: the last quarter's mean is >= 2% below the first quarter's
"""

from __future__ import annotations

LEARNED_DROP = 0.02  # relative fall of the loss, last quarter of the logged values against the first quarter


def learned(losses) -> bool | None:
    """True when the mean of the last quarter of the logged losses is at least LEARNED_DROP (relative) below the
    mean of the first quarter (a quarter: at least one value); None when fewer than two values were logged."""
    values = [float(x) for x in losses or () if x is not None]
    if len(values) < 2:
        return None
    n = max(1, len(values) // 4)
    first, last = sum(values[:n]) / n, sum(values[-n:]) / n
    return last <= (1 - LEARNED_DROP) * first
