"""The numbers a paper prints, as data (declared in its `paper.py`), and ours next to them.

    PRINTED = [Printed("Table 1", "B1", "in-domain/R@10 (term to definition)", 0.654, setting="all-mpnet-base-v2"),
               Printed("section 5.3", "M2", "in-domain/R@10 (term to definition)", 0.659,
                       setting="all-mpnet-base-v2", note="derived: B1 + 0.005")]

`comparison(PRINTED, scopes)` gives the "comparison" records of results.json (the paper's value and ours per
scope, on the same metric key); `grid(...)` renders ours next to the paper's for a table of conditions x metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import fmt


@dataclass(frozen=True)
class Printed:
    """`value` of `metric` (a key of our vocabulary) for the paper's `condition`, printed in `source`.
    setting: what the paper measured it on (backbone, dataset) where ours differs. std: the printed spread.
    note: how it was obtained when not printed as is ("derived: B1 + 0.005")."""

    source: str
    condition: str
    metric: str
    value: float
    setting: str = ""
    std: float | None = None
    note: str = ""


def find(printed: Sequence[Printed], condition: str, metric: str, setting: str | None = None) -> Printed | None:
    """The paper's number for (condition, metric) (in `setting` when given), or None."""
    for p in printed:
        if p.condition == condition and p.metric == metric and (setting is None or p.setting == setting):
            return p
    return None


def comparison(printed: Sequence[Printed], scopes) -> list[dict]:
    """JSON-able records: each printed number with ours on the same condition and metric in every scope (None
    where that unit or metric did not run)."""
    return [{"source": p.source, "condition": p.condition, "metric": p.metric, "setting": p.setting,
             "paper": p.value, "paper_std": p.std, "note": p.note,
             "ours": {s.name: s.get(p.condition, p.metric) for s in scopes}} for p in printed]


def grid(scope, conditions: Sequence[str], columns: Sequence[tuple], printed: Sequence[Printed] = (), *,
         setting: str | None = None, spread: bool = False, row_label: str = "condition") -> str:
    """A Markdown table: one row per condition of `scope` that has one of the columns, one column per (metric key,
    label[, digits]) that some row has; each cell ours, followed by "(paper)" when `printed` holds the paper's
    number ("*" marks a derived one; "(-)" where the paper prints none, if any column has one). spread: "mean ± std"
    over seeds where a unit has several. row_label: the header of the first column."""
    columns = [(c[0], c[1], c[2] if len(c) > 2 else 3) for c in columns]
    rows = [c for c in conditions if scope.has(c) and any(scope.get(c, key) is not None for key, _, _ in columns)]
    used = [c for c in columns if any(scope.get(cond, c[0]) is not None for cond in rows)]
    with_paper = {key for key, _, _ in used if any(find(printed, cond, key, setting) for cond in conditions)}
    lines = [f"| {row_label} | " + " | ".join(label for _, label, _ in used) + " |", "|---" * (len(used) + 1) + "|"]
    for cond in rows:
        cells = []
        for key, _, digits in used:
            std = scope.unit(cond).get("spread", {}).get("std", {}).get(key) if spread else None
            cell = fmt.pm(scope.get(cond, key), std, digits)
            if key in with_paper:
                p = find(printed, cond, key, setting)
                cell += f" ({fmt.num(p.value, digits)}{'*' if p.note else ''})" if p else f" ({fmt.MISSING})"
            cells.append(cell)
        lines.append(f"| {cond} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(printed: Sequence[Printed]) -> list[str]:
    """"condition metric: note" for every derived number (the "*" of grid)."""
    return [f"{p.condition} {p.metric}: {p.note}" for p in printed if p.note]


__all__ = ["Printed", "comparison", "find", "grid", "notes"]
