"""The bad-input sweep, in both check modes: every value-level bad input to every public op (NaN / Inf in each float
input, an index out of range, a degenerate label set, an all-padding row, a bad tensor temperature) is run, and
its outcome classified:

    named        an error (ValueError / TypeError) whose message names the argument
    loud         no error, and the result or a gradient holds NaN / Inf (a NaN in gives a NaN out)
    documented   no error, and the result is the value the op's docstring states for that input
    unclear      an error that does not name the argument, or another exception
    silent       no error and a finite result: a finite wrong number

Required: 0 unclear and 0 silent in either mode; in the "full" mode (spherekit.checks("full")) every case raises a
named error before any work. The shape / dtype / device errors (host metadata, the same in both modes) are the
tables of tests/ops/test_<op>_errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F

import spherekit
from spherekit import ops

NAN, INF = float("nan"), float("inf")


def _unit(*shape, seed=0):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=-1)


def _set(t: torch.Tensor, index, value) -> torch.Tensor:
    t = t.clone()
    t[index] = value
    return t


@dataclass
class Case:
    """One bad input: the op called on good inputs with `override` applied; `names` are the words its named error
    must contain; `documented` the value the op returns for it in the fast mode (None: it must be loud)."""

    op: str
    bad: str
    call: Callable[..., object]
    override: dict
    names: tuple[str, ...]
    documented: float | None = None


def _info_nce_inputs():
    q, c, h = _unit(6, 8), _unit(7, 8, seed=1), _unit(6, 2, 8, seed=2)
    return dict(queries=q, candidates=c, hard_negatives=h, targets=torch.arange(6),
                query_labels=torch.arange(6) % 3, candidate_labels=torch.arange(7) % 3, label_bias=torch.zeros(3, 3),
                temperature=torch.tensor(0.05))


def _info_nce(queries, candidates, targets, hard_negatives, **kw):
    mode = None if hard_negatives is None else "both"
    return ops.info_nce(queries, candidates, targets, hard_negatives, hard_negative_mode=mode, **kw)


def _sincere_inputs():
    return dict(embeddings=_unit(8, 8), labels=torch.tensor([0, 0, 1, 1, 2, 2, 0, 1]), temperature=torch.tensor(0.1),
                label_bias=torch.zeros(3, 3))


def _sincere(embeddings, labels, **kw):
    return ops.sincere(embeddings, labels, **kw)


def _circular_inputs():
    return dict(embeddings=_unit(8, 8), labels=torch.tensor([0, 0, 1, 1, 2, 2, 0, 1]),
                label_angles=torch.tensor([0.0, 2.0, 4.0]))


def _circular(embeddings, labels, label_angles):
    return ops.circular_cse(embeddings, labels, label_angles, margin=0.1)


def _ngpt_inputs():
    return dict(h=_unit(5, 16), f=torch.randn(5, 16), alpha=torch.full((16,), 0.1))


def _geodesic(h, f, alpha):
    return ops.geodesic_residual(h, f, alpha)


def _l2(x):
    return ops.l2_normalize(x, dim=-1)


def _renormalize(w):
    ops.renormalize_([w], [-1])
    return w


INPUTS = {"info_nce": _info_nce_inputs, "sincere": _sincere_inputs, "circular_cse": _circular_inputs,
          "geodesic_residual": _ngpt_inputs, "l2_normalize": lambda: dict(x=torch.randn(5, 16)),
          "renormalize_": lambda: dict(w=torch.randn(5, 16))}
CALLS = {"info_nce": _info_nce, "sincere": _sincere, "circular_cse": _circular, "geodesic_residual": _geodesic,
         "l2_normalize": _l2, "renormalize_": _renormalize}


def _cases() -> list[Case]:
    g = {name: make() for name, make in INPUTS.items()}
    inn, sin, cir, ngp = g["info_nce"], g["sincere"], g["circular_cse"], g["geodesic_residual"]
    cases = [
        ("info_nce", "nan query", dict(queries=_set(inn["queries"], (2, 3), NAN)), ("queries",)),
        ("info_nce", "inf candidate", dict(candidates=_set(inn["candidates"], (4, 0), INF)), ("candidates",)),
        ("info_nce", "nan hard negative", dict(hard_negatives=_set(inn["hard_negatives"], (1, 1, 5), NAN)),
         ("hard_negatives",)),
        ("info_nce", "target past N", dict(targets=_set(inn["targets"], 3, 7)), ("targets",)),
        ("info_nce", "negative target", dict(targets=_set(inn["targets"], 0, -3)), ("targets",)),
        ("info_nce", "query label outside label_bias", dict(query_labels=_set(inn["query_labels"], 1, 3)),
         ("query_labels",)),
        ("info_nce", "candidate label outside label_bias", dict(candidate_labels=_set(inn["candidate_labels"], 6, -1)),
         ("candidate_labels",)),
        ("info_nce", "nan label_bias", dict(label_bias=_set(inn["label_bias"], (0, 1), NAN)), ("label_bias",)),
        ("info_nce", "+inf label_bias", dict(label_bias=_set(inn["label_bias"], (0, 1), INF)), ("label_bias",)),
        ("info_nce", "nan temperature", dict(temperature=torch.tensor(NAN)), ("temperature",)),
        ("info_nce", "zero temperature", dict(temperature=torch.tensor(0.0)), ("temperature",)),
        ("info_nce", "tiny temperature", dict(temperature=torch.tensor(1e-7)), ("temperature",)),
        ("sincere", "nan embedding", dict(embeddings=_set(sin["embeddings"], (3, 3), NAN)), ("embeddings",)),
        ("sincere", "label outside label_bias", dict(labels=_set(sin["labels"], 2, 5)), ("labels",)),
        ("sincere", "nan label_bias", dict(label_bias=_set(sin["label_bias"], (0, 2), NAN)), ("label_bias",)),
        ("sincere", "nan temperature", dict(temperature=torch.tensor(NAN)), ("temperature",)),
        ("circular_cse", "nan embedding", dict(embeddings=_set(cir["embeddings"], (0, 0), NAN)), ("embeddings",)),
        ("circular_cse", "inf label angle", dict(label_angles=_set(cir["label_angles"], 1, INF)),
         ("label_angles",)),
        ("circular_cse", "label outside label_angles", dict(labels=_set(cir["labels"], 5, 3)), ("labels",)),
        ("geodesic_residual", "nan h", dict(h=_set(ngp["h"], (1, 2), NAN)), ("h",)),
        ("geodesic_residual", "inf f", dict(f=_set(ngp["f"], (0, 7), INF)), ("f",)),
        ("geodesic_residual", "nan alpha", dict(alpha=_set(ngp["alpha"], 3, NAN)), ("alpha",)),
        ("l2_normalize", "nan x", dict(x=_set(g["l2_normalize"]["x"], (2, 2), NAN)), ("x",)),
        ("renormalize_", "inf weight", dict(w=_set(g["renormalize_"]["w"], (4, 1), INF)), ("weights",)),
    ]
    out = [Case(op, bad, CALLS[op], override, names) for op, bad, override, names in cases]
    out += [  # degenerate sets: the loss is exactly 0 by its definition (the docstrings say so)
        Case("info_nce", "only the target in a denominator", CALLS["info_nce"],
             dict(candidates=inn["candidates"][:1], targets=torch.zeros(6, dtype=torch.long), hard_negatives=None,
                  query_labels=None, candidate_labels=None, label_bias=None), ("denominator",), documented=0.0),
        Case("sincere", "no anchor has a positive", CALLS["sincere"],
             dict(labels=torch.arange(8), label_bias=None), ("positive",), documented=0.0),
        Case("sincere", "one label for all", CALLS["sincere"],
             dict(labels=torch.zeros(8, dtype=torch.long), label_bias=None), ("negative",), documented=0.0),
    ]
    return out


CASES = _cases()


def _outcome(case: Case) -> str:
    inputs = {**INPUTS[case.op](), **case.override}
    leaves = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point() and k not in ("label_bias", "label_angles") \
                and case.op != "renormalize_":
            leaves[k] = v.detach().clone().requires_grad_()
    inputs.update(leaves)
    try:
        out = case.call(**inputs)
        grads = torch.autograd.grad(out.sum(), list(leaves.values()), allow_unused=True) if leaves else ()
    except (ValueError, TypeError) as exc:
        return "named" if any(name in str(exc) for name in case.names) else f"unclear: {exc}"
    except Exception as exc:  # noqa: BLE001 - the sweep classifies every failure
        return f"unclear: {type(exc).__name__}: {exc}"
    values = [out.detach()] + [g for g in grads if g is not None]
    if any(not torch.isfinite(v).all() for v in values):
        return "loud"
    if case.documented is not None and out.numel() == 1 and float(out) == case.documented:
        return "documented"
    return f"silent: {out.detach().flatten()[:4].tolist()}"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.op}: {c.bad}" for c in CASES])
def test_fast_mode_is_never_silent_or_unclear(case):
    assert _outcome(case) in ("named", "loud", "documented")


@pytest.mark.parametrize("case", CASES, ids=[f"{c.op}: {c.bad}" for c in CASES])
def test_full_mode_names_every_bad_input(case):
    with spherekit.checks("full"):
        assert _outcome(case) == "named"
