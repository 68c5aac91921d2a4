"""A paper's claims as typed records: declared once in the paper's `paper.py`, checked by the core on every card,
written to results.json ("claims") and rendered by one renderer.

    CLAIMS = [
        Claim("P1", "fine-tuning collapses anisotropy (0.126 -> 0.012)", source="section 5.2",
              rule="B1's anisotropy below half of B0's",
              check=lambda s: Measured.compare(s.metric("B1", "in-domain/anisotropy")
                                               - 0.5 * s.metric("B0", "in-domain/anisotropy"), "<", 0.0,
                                               text=f"B0 {...} -> B1 {...}")),
    ]

A check gets a `Scope` (the units of one backbone, or of another group the paper defines) and returns what it
measured (`Measured`, or a list of them for a claim checked once per condition). Asking the scope for a unit or
metric that did not run raises `NotRun`: the claim's verdict is then "not run" and its record says what it needs.

Verdicts: "holds", "does not hold", "inconclusive", "not run". A comparison `Measured.compare(value, op, margin)`
holds when `value op margin` holds for the point estimate; with an `interval` (the uncertainty of `value`, e.g. a
paired bootstrap over evaluation items or the spread over seeds) it holds only when the whole interval does, does
not hold when the whole interval fails, and is "inconclusive" when the interval straddles the margin. An interval
may be one-sided (an open end None: a bound on one side only, e.g. a smallest difference bounded above by one of
its terms); its open end never passes a rule, so it can decide the closed end's way alone. "within"
(|value| <= margin) is the symmetric rule of "unchanged" claims. A measurement without an interval decides only
when it is `exact` (it has no sampling noise: one fixed example on a frozen encoder, a numerical identity, a count
of a deterministic procedure); otherwise its noise is unknown (e.g. runs measured before per-item values were
kept) and the claim is "inconclusive": a difference is never called real without knowing the noise it must beat.
A rule decided without a number (`Measured.decided`) follows the same rule. A claim marked `sanity=True` cannot
fail on the data it runs on: it is listed apart as a sanity check, decided on its point value, never counted as a
claim that holds.

The gate: a claim that reads trained conditions declares them (`rests_on`: condition names, or a function of the
scope and the record's label giving them); when a training of one of their runs did not learn (learning.gate), the
claim is "inconclusive" and says which training and by how much its loss moved.

Ours and uninformative: a record whose check read a condition the paper does not have (Condition.ours: an ablation
or probe of this reproduction) is marked "ours" and listed apart; a record whose measurement could not speak to the
claim (Measured.uninformative: the readout it compares never moved from its start, say) is "inconclusive" and listed
apart as uninformative. Neither counts in a card's headline (counts), and neither is a sanity check (a rule that
cannot fail).

Training noise at one seed: an interval from units with one run each covers the items only (uncertainty.two_level
says so). When the card of the paper's 3-seed preset (Experiment.noise_preset) measured the same claim, its seed_std
(the std over seeds of the claim's value) is the training noise of this value: a value within twice that of its
margin is "inconclusive" here (evaluate's seed_noise).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from . import fmt
from .learning import gate
from .uncertainty import PER_ITEM, two_level
from .units import unit_runs

HOLDS, FAILS, INCONCLUSIVE, NOT_RUN = "holds", "does not hold", "inconclusive", "not run"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_RUN)
OPS = (">", ">=", "<", "<=", "within")
NO_ITEMS = "none: these runs kept no per-item values (measured before they were)"
_UNMEASURED = " (the point value alone {} the rule; its noise was not measured, so the verdict is inconclusive)"


class NotRun(LookupError):
    """A unit or metric a claim needs did not run; the message says what is needed."""


@dataclass(frozen=True)
class Measured:
    """What a claim's check measured. text: the measurement for people. holds: the rule on the point estimate
    (None: undecidable, e.g. a NaN). value / op / margin: the number the rule compares (value op margin).
    interval: the uncertainty of value (low, high). uncertainty: how the interval was obtained (or why there is
    none). exact: the measurement decides without an interval: it has no sampling noise, or its rule already
    weighed the noise (a count of per-unit decisions, each with its own interval). label: which
    condition this record is about, when a claim is checked once per condition. seed_std: the training noise of value
    (the std over seeds of the value at one seed, uncertainty.Noise.seed_std), when the runs had several seeds.
    uninformative: why the measurement cannot speak to the claim (it is then inconclusive and listed apart)."""

    text: str
    holds: bool | None
    value: float | None = None
    op: str | None = None
    margin: float | None = None
    interval: tuple[float, float] | None = None
    uncertainty: str | None = None
    label: str | None = None
    exact: bool = False
    seed_std: float | None = None
    uninformative: str | None = None

    @classmethod
    def compare(cls, value, op: str, margin: float, text: str, *, interval=None, uncertainty=None, label=None,
                exact: bool = False, seed_std: float | None = None):
        """The rule `value op margin` (op ">", ">=", "<", "<=", or "within": |value| <= margin)."""
        if op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {op!r}")
        value = None if value is None else float(value)
        holds = None if value is None or math.isnan(value) else _passes(value, op, margin)
        if interval is not None:
            if interval[0] is None and interval[1] is None:
                raise ValueError("an interval needs at least one end (None for no interval)")
            interval = tuple(None if x is None else float(x) for x in interval)
        return cls(text, holds, value, op, float(margin), interval, uncertainty, label, exact,
                   None if seed_std is None else float(seed_std))

    @classmethod
    def decided(cls, holds, text: str, *, label=None, exact: bool = False, uncertainty=None):
        """A rule decided without a single compared number (an ordering of several runs, say)."""
        return cls(text, None if holds is None else bool(holds), uncertainty=uncertainty, label=label, exact=exact)


def _passes(value: float, op: str, margin: float) -> bool:
    return {">": value > margin, ">=": value >= margin, "<": value < margin, "<=": value <= margin,
            "within": abs(value) <= margin}[op]


def verdict(m: Measured, *, sanity: bool = False) -> str:
    """holds / does not hold / inconclusive of a measurement (see the module docstring); a sanity check is decided
    on its point value."""
    if m.holds is None or m.uninformative:
        return INCONCLUSIVE
    if m.interval is None or m.op is None:
        return (HOLDS if m.holds else FAILS) if m.exact or sanity else INCONCLUSIVE
    lo, hi = m.interval
    lo, hi = (-math.inf if lo is None else lo), (math.inf if hi is None else hi)  # an open end: a one-sided bound
    if any(math.isnan(x) for x in (lo, hi)):
        return INCONCLUSIVE
    if m.op == "within":
        if -m.margin <= lo and hi <= m.margin:
            return HOLDS
        return FAILS if lo > m.margin or hi < -m.margin else INCONCLUSIVE
    ends = [_passes(x, m.op, m.margin) for x in (lo, hi)]
    return HOLDS if all(ends) else FAILS if not any(ends) else INCONCLUSIVE


@dataclass(frozen=True)
class Claim:
    """A claim of the paper. id: the paper's or our short name ("P3", "C6"). statement: the claim in the paper's
    words (with its own numbers). source: table / figure / section. rule: how it is checked here, with its margin,
    in words. check: Scope -> Measured (or a list of Measured with labels). sanity: the rule cannot fail on this
    data (a sanity check, listed apart). rests_on: the trained conditions the claim reads (names, or a function
    (scope, label) -> names), gated on whether their trainings learned (module docstring)."""

    id: str
    statement: str
    source: str
    rule: str
    check: Callable[["Scope"], Measured | Sequence[Measured]]
    sanity: bool = False
    rests_on: Sequence[str] | Callable[["Scope", str | None], Sequence[str]] = ()

    def gated(self, scope: "Scope", measured: Measured, undertrained=None) -> Measured:
        """`measured` through the gate of the conditions this claim rests on (learning.gate; undertrained: the
        paper's test of a trained condition, Experiment.undertrained)."""
        rests = self.rests_on(scope, measured.label) if callable(self.rests_on) else self.rests_on
        return gate(measured, scope, rests, undertrained) if rests else measured


class Scope:
    """The units one claim is checked on: {condition: unit} of one backbone (or a group the paper defines).
    A unit is a card entry (spherekit.experiments.api.units.aggregate): "metrics" (the mean over its seeds),
    "spread", "runs" (one record per seed)."""

    def __init__(self, name: str, units: dict[str, dict], config: dict | None = None):
        self.name, self.units, self.config = name, units, config or {}
        self.read: set[str] = set()  # the conditions a check asked for (evaluate marks records that read ours)

    def has(self, *conditions: str) -> bool:
        return all(c in self.units for c in conditions)

    def unit(self, condition: str) -> dict:
        self.read.add(condition)
        if condition not in self.units:
            raise NotRun(condition)
        return self.units[condition]

    def metric(self, condition: str, key: str) -> float:
        """The unit's metric (mean over seeds); NotRun when the unit did not run or the metric is missing or None
        (read a metric that may legitimately be None, e.g. "no threshold reaches the target", with get())."""
        value = self.unit(condition).get("metrics", {}).get(key)
        if value is None:
            raise NotRun(f"{condition} ({key})")
        return float(value)

    def get(self, condition: str, key: str, default=None):
        """The metric, or `default` when the unit or the metric is missing."""
        self.read.add(condition)
        return self.units.get(condition, {}).get("metrics", {}).get(key, default)

    def runs(self, condition: str) -> list[dict]:
        """The unit's runs (one per seed), each with what the runs share (units.unit_runs)."""
        return unit_runs(self.unit(condition))

    def series(self, condition: str, key: str, *, field: str = PER_ITEM):
        """The per-item values of `key` of every run of the unit (each run's "per_item"), as a (seeds, items)
        float64 array in seed order; NotRun when a run lacks them. field: another per-run mapping of series."""
        per_run = [(r.get(field) or {}).get(key) for r in self.runs(condition)]
        if not per_run or any(v is None for v in per_run):
            raise NotRun(f"{condition} ({key}, per item)")
        if len({len(v) for v in per_run}) != 1:
            raise ValueError(f"{condition}: the runs hold different numbers of items for {key}")
        return np.asarray(per_run, dtype=np.float64)

    def frozen(self, condition: str) -> bool:
        """Whether the unit trains nothing: its runs are unseeded (Condition.seeded False), so it has no training
        noise to measure or to call unmeasured."""
        return all(r.get("seed") is None for r in self.runs(condition))

    def items(self, condition: str, key: str) -> list[float]:
        """The per-item values of `key`, averaged over the unit's seeds item by item (series)."""
        return [float(x) for x in self.series(condition, key).mean(axis=0)]


def difference(scope: Scope, a: str, b: str, key: str, op: str, margin: float, *, text: str | None = None,
               label: str | None = None, seed: int = 0) -> Measured:
    """The rule `metric(b) - metric(a) op margin` on the units' means, with the two-level bootstrap of the
    difference of the units' per-item means over their seeds and evaluation items (uncertainty.two_level) as its
    interval. Runs measured before per-item values were kept give the point estimate alone, and the record says
    so."""
    va, vb = scope.metric(a, key), scope.metric(b, key)
    text = text or f"{a} {va:.3f} -> {b} {vb:.3f} ({vb - va:+.3f})"
    try:
        xa, xb = scope.series(a, key), scope.series(b, key)
    except NotRun:
        return Measured.compare(vb - va, op, margin, text, uncertainty=NO_ITEMS, label=label)
    if xa.shape[1] != xb.shape[1]:
        raise ValueError(f"{key}: {a} and {b} hold different numbers of items ({xa.shape[1]}, {xb.shape[1]})")
    frozen = [c for c in (a, b) if scope.frozen(c)]
    noise = two_level(lambda d: d.mean(b, xb) - d.mean(a, xa), xa.shape[1], {a: len(xa), b: len(xb)}, seed=seed,
                      frozen=frozen)
    return Measured.compare(vb - va, op, margin, text, label=label, **noise.measured())


def borrowed_noise(measured: Measured, seed_std: float | None, source: str) -> Measured:
    """A 1-seed record (no seed_std of its own) whose value lies within 2 x `seed_std` (the same claim's training
    noise on `source`, the 3-seed preset) of its margin: made inconclusive, saying so (module docstring)."""
    if seed_std is None or measured.seed_std is not None or measured.value is None or measured.op is None:
        return measured
    value, margin, band = measured.value, measured.margin, 2 * seed_std
    distance = abs(margin - abs(value)) if measured.op == "within" else abs(value - margin)
    if math.isnan(value) or distance > band:
        return measured
    return replace(measured, text=f"{measured.text}; within twice the training noise of its margin (seed std "
                   f"{seed_std:.3g} on {source})", holds=None)


def _ours_read(claim: Claim, scope: Scope, m: Measured, ours: set, many: bool) -> list[str]:
    """The conditions marked ours that record `m` reads: of a check returning one record, every condition it asked
    the scope for; of one returning a record per condition, those its label names and those it rests on (its
    siblings' conditions are theirs)."""
    if not many:
        return sorted(scope.read & ours)
    named = set(re.split(r"[\s,;:()]+", m.label or ""))
    rests = claim.rests_on(scope, m.label) if callable(claim.rests_on) else claim.rests_on
    return sorted((named | set(rests or ())) & ours)


def seed_noise_of(records: Sequence[dict]) -> dict[tuple[str, str], float]:
    """{(claim record id, scope): seed_std} of a card's claims records (evaluate's seed_noise)."""
    return {(r["id"], r["scope"]): r["seed_std"] for r in records if r.get("seed_std") is not None}


def evaluate(claims: Sequence[Claim], scopes: Sequence[Scope], *, seed_noise: dict | None = None,
             noise_source: str = "", ours: Sequence[str] = (), undertrained=None) -> list[dict]:
    """Every claim checked on every scope: JSON-able records (the "claims" of results.json). A record's "point" is
    what the point value alone says of the rule (holds / does not hold / None: undecidable); its "verdict" also
    weighs the noise. seed_noise: {(record id, scope): seed_std} of the same claims on the 3-seed preset
    (`noise_source`), for records measured on one seed (borrowed_noise); a scope absent there borrows from the
    record id's only scope, when it has one. ours: the conditions that are this reproduction's own (ablations,
    probes); a record whose check read one is marked "ours" with their names. undertrained: (scope, condition) ->
    why or None, the paper's test of a trained condition the claims rest on (Experiment.undertrained)."""
    ours = set(ours)
    seed_noise = seed_noise or {}
    by_id: dict[str, list[float]] = {}
    for (rid, _), std in seed_noise.items():
        by_id.setdefault(rid, []).append(std)
    out = []
    for scope in scopes:
        for claim in claims:
            base = {"id": claim.id, "scope": scope.name, "statement": claim.statement, "source": claim.source,
                    "rule": claim.rule, "sanity": claim.sanity}
            scope.read = set()
            try:
                measured = claim.check(scope)
            except NotRun as exc:
                out.append({**base, "measured": f"needs {exc.args[0]}", "verdict": NOT_RUN})
                continue
            many = not isinstance(measured, Measured)
            for m in (measured if many else [measured]):
                theirs = _ours_read(claim, scope, m, ours, many)
                m = claim.gated(scope, m, undertrained)
                rid = f"{claim.id} ({m.label})" if m.label else claim.id
                borrowed = seed_noise.get((rid, scope.name))
                if borrowed is None and len(by_id.get(rid, ())) == 1:
                    borrowed = by_id[rid][0]
                m = borrowed_noise(m, borrowed, noise_source)
                decided = verdict(m, sanity=claim.sanity)
                unmeasured = decided == INCONCLUSIVE and m.holds is not None and m.interval is None  # noise unknown
                fields = {k: v for k, v in asdict(m).items() if k not in ("text", "holds", "label")}
                for optional in ("seed_std", "uninformative"):
                    if fields[optional] is None:
                        del fields[optional]
                record = {**base, **fields,
                          "measured": m.text + (_UNMEASURED.format("passes" if m.holds else "fails") if unmeasured
                                                else ""),
                          "point": None if m.holds is None else HOLDS if m.holds else FAILS, "verdict": decided}
                if m.label:
                    record["id"] = rid
                if theirs:
                    record["ours"] = theirs
                if record["interval"] is not None:
                    record["interval"] = list(record["interval"])
                out.append(record)
    return out


def kind(record: dict) -> str:
    """Which table a record belongs to: "paper" (a claim on the paper's conditions), "ours" (it read an ablation or
    probe of this reproduction), "uninformative" or "sanity"."""
    if record.get("sanity"):
        return "sanity"
    if record.get("uninformative"):
        return "uninformative"
    return "ours" if record.get("ours") else "paper"


def counts(records: Sequence[dict], of: str = "paper") -> dict[str, int]:
    """{verdict: how many claims} of one kind (default: the paper's own; ours, uninformative and sanity checks are
    counted apart)."""
    out = {v: 0 for v in VERDICTS}
    for r in records:
        if kind(r) == of:
            out[r["verdict"]] += 1
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _rule_cell(r: dict) -> str:
    rule = r["rule"]
    if r.get("interval") is not None:
        rule += f"; {r['uncertainty'] or 'interval'} {fmt.interval(*r['interval'])}"
    elif r.get("uncertainty"):
        rule += f"; uncertainty: {r['uncertainty']}"
    return rule


TABLES = (("paper", None),
          ("ours", "On this reproduction's own ablations and probes (not the paper's conditions; not counted in the "
                   "headline):"),
          ("uninformative", "Uninformative (the measurement could not speak to the claim, e.g. the readout never "
                            "moved; not counted):"),
          ("sanity", "Sanity checks (rules that cannot fail on this data; not claims):"))


def render(records: Sequence[dict], *, scope: str | None = None) -> str:
    """The claims of `scope` (None: every scope) as Markdown tables: the paper's, then apart ours, the
    uninformative ones and the sanity checks (kind)."""
    chosen = [r for r in records if scope is None or r["scope"] == scope]
    parts = []
    for which, title in TABLES:
        rows = [r for r in chosen if kind(r) == which]
        if not rows:
            continue
        lines = ([title, ""] if title else []) + ["| id | claim | source | measured here | rule | verdict |",
                                                  "|---|---|---|---|---|---|"]
        lines += [f"| {_cell(r['id'])} | {_cell(r['statement'])} | {_cell(r['source'])} | {_cell(r['measured'])} | "
                  f"{_cell(_rule_cell(r))} | **{r['verdict']}** |" for r in rows]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) if parts else "(no claims checked)"


def summary_lines(records: Sequence[dict], *, scope: str | None = None, width: int = 100) -> list[str]:
    """One plain line per claim that ran: "[verdict] id: statement" (the verdict tagged "ours: " on an ablation's or
    probe's record; "uninformative" / "sanity" in place of the verdict)."""
    out = []
    for r in records:
        if (scope is None or r["scope"] == scope) and r["verdict"] != NOT_RUN:
            tag = {"paper": r["verdict"], "ours": f"ours: {r['verdict']}"}.get(kind(r), kind(r))
            line = f"[{tag:>13}] {r['id']}: {r['statement']}"
            out.append(line if len(line) <= width else line[: width - 3] + "...")
    return out


__all__ = ["Claim", "FAILS", "HOLDS", "INCONCLUSIVE", "Measured", "NOT_RUN", "NotRun", "Scope", "TABLES", "VERDICTS",
           "borrowed_noise", "counts", "difference", "evaluate", "kind", "render", "seed_noise_of", "summary_lines",
           "verdict"]
