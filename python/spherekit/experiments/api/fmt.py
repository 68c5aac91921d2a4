"""The number formats of every result card, summary and generated docs table (one spelling each).

    num(0.12345)        "0.123"        num(None) "-"     num(float("nan")) "nan"
    pm(0.5, 0.01)       "0.500 ± 0.010"                  pm(0.5, None) "0.500"
    signed(0.012)       "+0.012"
    pct(0.4567)         "45.7%"
    count(12345)        "12,345"
    duration(372)       "6.2 min"      duration(45) "45 s"   duration(9000) "2.5 h"
    interval(-0.01, 0.02) "[-0.010, +0.020]"               interval(None, 0.02) "(-inf, +0.020]"
"""

from __future__ import annotations

import math

MISSING = "-"


def _missing(x) -> bool:
    return x is None


def num(x, digits: int = 3) -> str:
    """x with `digits` decimals; "-" when missing, "nan" when not a number."""
    if _missing(x):
        return MISSING
    x = float(x)
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def signed(x, digits: int = 3) -> str:
    """x with its sign ("+0.012", "-0.300"); "-" when missing."""
    if _missing(x):
        return MISSING
    x = float(x)
    return "nan" if math.isnan(x) else f"{x:+.{digits}f}"


def pm(mean, std, digits: int = 3) -> str:
    """"mean ± std"; the mean alone when std is missing; "-" when the mean is missing."""
    if _missing(mean):
        return MISSING
    return num(mean, digits) if _missing(std) else f"{num(mean, digits)} ± {num(std, digits)}"


def pct(x, digits: int = 1) -> str:
    """A fraction as a percentage ("45.7%"); "-" when missing."""
    return MISSING if _missing(x) else f"{num(100 * float(x), digits)}%"


def count(n) -> str:
    """An integer with thousands separators; "-" when missing."""
    return MISSING if _missing(n) else f"{int(n):,}"


def duration(seconds) -> str:
    """Seconds as "45 s", "6.2 min" or "2.5 h"; "-" when missing."""
    if _missing(seconds):
        return MISSING
    s = float(seconds)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600 * 2:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def interval(lo, hi, digits: int = 3) -> str:
    """"[lo, hi]" (signed, for differences); a one-sided bound with its open end as infinity ("(-inf, +0.020]");
    "-" when both ends are missing."""
    if _missing(lo) and _missing(hi):
        return MISSING
    return (f"{'(-inf' if _missing(lo) else '[' + signed(lo, digits)}, "
            f"{'+inf)' if _missing(hi) else signed(hi, digits) + ']'}")


__all__ = ["MISSING", "count", "duration", "interval", "num", "pct", "pm", "signed"]
