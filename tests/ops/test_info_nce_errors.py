"""Bad input to info_nce gets a clear error that names the argument."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit.ops import info_nce
from tests.ops._errors_cases import TEMPERATURE

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


def _qc(B=4, N=5, d=8, dtype=torch.float32):
    return F.normalize(torch.randn(B, d), dim=-1).to(dtype), F.normalize(torch.randn(N, d), dim=-1).to(dtype)


@pytest.mark.parametrize(
    "kwargs, error, match",
    TEMPERATURE + [
        (dict(queries=torch.randn(4)), ValueError, "queries must have 2 dimensions"),
        (dict(candidates=torch.randn(5, 9)), ValueError, r"candidates.shape\[1\] must equal the embedding size"),
        (dict(candidates=torch.randn(5, 8, dtype=torch.float64)), TypeError, "candidates must have the dtype"),
        (dict(queries=torch.randn(4, 8).long()), TypeError, "queries must have dtype"),
        (dict(queries=torch.randn(4, 8, dtype=torch.float64), candidates=torch.randn(5, 8, dtype=torch.float64),
              backend="triton"), TypeError, "queries: float64 is not supported by backend 'triton'"),
        (dict(workspace_bytes=0), ValueError, "workspace_bytes must be a positive int or None"),
        (dict(dc_accumulator="fp16"), ValueError, "dc_accumulator must be one of"),
        (dict(queries=torch.randn(0, 8)), ValueError, "queries is empty"),
        (dict(targets=torch.tensor([0, 1, 2, 5])), ValueError, r"targets must lie in \[0, 5\)"),
        (dict(targets=torch.tensor([0, 1, 2])), ValueError, r"targets.shape\[0\] must equal the number of queries"),
        (dict(targets=torch.tensor([0, 1, 2, 3], dtype=torch.int32)), TypeError, "targets must have dtype"),
        (dict(candidates=torch.randn(3, 8)), ValueError, "targets=None pairs query i with candidate i, which needs N >= B"),
        (dict(temperature=-1.0), ValueError, "temperature must be > 0"),
        (dict(hard_negatives=torch.randn(4, 2, 9)), ValueError, r"hard_negatives.shape\[2\] must equal"),
        (dict(hard_negatives=torch.randn(3, 2, 8)), ValueError, r"hard_negatives.shape\[0\] must equal"),
        (dict(hard_negatives=torch.randn(4, 0, 8)), ValueError, "hard_negatives has k=0"),
        (dict(hard_negative_mode="unified"), ValueError, "hard_negative_mode must be one of"),
        (dict(hard_negative_mode="bce"), ValueError, "hard_negative_mode='bce' needs hard_negatives"),
        (dict(hard_negative_mode="softmax"), ValueError, "hard_negative_mode='softmax' needs hard_negatives"),
        (dict(reduction="avg"), ValueError, "reduction must be one of"),
        (dict(query_labels=torch.zeros(4, dtype=torch.long)), ValueError, "must be given together"),
        (dict(query_labels=torch.zeros(3, dtype=torch.long), candidate_labels=torch.arange(5)), ValueError,
         r"query_labels.shape\[0\]"),
        (dict(label_bias=torch.zeros(3, 3)), ValueError, "pass query_labels and candidate_labels"),
        (dict(query_labels=torch.arange(4), candidate_labels=torch.arange(5), label_bias=torch.zeros(3, 3)),
         ValueError, r"query_labels must lie in \[0, 3\)"),
        (dict(query_labels=torch.arange(4), candidate_labels=torch.arange(5), label_bias=torch.zeros(5, 4)),
         ValueError, "label_bias must be square"),
        (dict(query_labels=torch.arange(4), candidate_labels=torch.arange(5),
              label_bias=torch.full((5, 5), float("nan"))), ValueError, "label_bias contains NaN"),
        (dict(query_labels=torch.arange(4), candidate_labels=torch.arange(5),
              label_bias=torch.zeros(5, 5, requires_grad=True)), ValueError, "label_bias receives no gradient"),
        (dict(bce_weight=float("nan")), ValueError, "bce_weight must be a finite float"),
        (dict(backend="cuda"), ValueError, "backend 'cuda' is not implemented"),
        (dict(backend="gpu"), ValueError, "backend must be one of"),
    ],
)
def test_bad_argument_is_named(kwargs, error, match):
    q, c = _qc()
    args = dict(queries=q, candidates=c)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        info_nce(args.pop("queries"), args.pop("candidates"), **args)


@pytest.mark.parametrize("where", ["queries", "candidates", "hard_negatives"])
def test_nan_or_inf_is_named(where):
    q, c = _qc()
    h = torch.randn(4, 2, 8)
    bad = {"queries": q, "candidates": c, "hard_negatives": h}[where]
    bad[0, 0] = float("inf") if where == "candidates" else float("nan")
    with pytest.raises(ValueError, match=f"NaN or Inf found in {where}"):
        info_nce(q, c, None, h, backend="cpu")


def test_empty_denominator_after_label_masking_is_an_error():
    q, c = _qc(B=3, N=3)
    labels = torch.tensor([1, 1, 1])
    with pytest.raises(ValueError, match="query 0: every candidate shares its label 1"):
        info_nce(q, c, query_labels=labels, candidate_labels=labels, backend="cpu")
    # a hard negative in the softmax is a negative: then it is fine
    loss = info_nce(q, c, None, torch.randn(3, 1, 8), query_labels=labels, candidate_labels=labels,
                    hard_negative_mode="softmax", backend="cpu")
    assert torch.isfinite(loss)


def test_single_candidate_without_negatives_is_an_error():
    q, c = _qc(B=1, N=1)
    with pytest.raises(ValueError, match="denominator holds only its target"):
        info_nce(q, c, backend="cpu")


def test_mixed_devices_are_named():
    q, c = _qc()
    meta = torch.empty(5, 8, device="meta")
    with pytest.raises(ValueError, match="candidates must be on device cpu"):
        info_nce(q, meta)


def test_environment_variable_picks_the_backend(monkeypatch):
    q, c = _qc()
    monkeypatch.setenv("SPHEREKIT_BACKEND", "nonsense")
    with pytest.raises(ValueError, match="SPHEREKIT_BACKEND must be one of"):
        info_nce(q, c)
    monkeypatch.setenv("SPHEREKIT_BACKEND", "reference")
    a = info_nce(q, c)
    monkeypatch.setenv("SPHEREKIT_BACKEND", "cpu")
    b = info_nce(q, c)
    torch.testing.assert_close(a, b)
    # an explicit argument wins over the environment
    monkeypatch.setenv("SPHEREKIT_BACKEND", "triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    torch.testing.assert_close(info_nce(q, c, backend="cpu"), a)
    with pytest.raises(RuntimeError, match="backend 'triton' cannot run here"):
        info_nce(q, c)


@pytest.mark.parametrize("backend", ["cpu", "triton", "reference"])
def test_infinite_temperature_is_rejected_on_every_backend(backend):
    """Issue 16: temperature=inf gave a finite loss with all-NaN gradients on triton (0 * inf in the gradient
    rescaling); a non-finite temperature is an error everywhere."""
    q, c = _qc()
    with pytest.raises(ValueError, match="temperature must be finite, got inf"):
        info_nce(q.requires_grad_(), c, temperature=float("inf"), backend=backend)


def test_label_bias_takes_float64_like_sincere():
    """The dtype policy of spherekit.ops.checks: side tables (label_bias, label_angles) take float64 too."""
    q, c = _qc()
    kw = dict(query_labels=torch.arange(4) % 3, candidate_labels=torch.arange(5) % 3)
    bias = torch.randn(3, 3)
    for backend in ("cpu", "reference"):
        torch.testing.assert_close(info_nce(q, c, label_bias=bias.double(), backend=backend, **kw),
                                   info_nce(q, c, label_bias=bias, backend=backend, **kw))


def test_bce_defaults_are_the_concept_papers_logit():
    """The documented BCE defaults: logit 20 cos + 0, weight 0.5, mean over the positive and the k negatives."""
    q, c = _qc()
    h = F.normalize(torch.randn(4, 3, 8), dim=-1)
    plain = info_nce(q, c, temperature=0.05)
    pos, neg = 20 * (q * c[:4]).sum(-1), 20 * torch.einsum("bd,bkd->bk", q, h)
    bce = (F.softplus(-pos) + F.softplus(neg).sum(-1)) / 4
    torch.testing.assert_close(info_nce(q, c, hard_negatives=h, temperature=0.05, hard_negative_mode="bce"),
                               plain + 0.5 * bce.mean())


def test_hard_negatives_join_the_softmax_by_default_as_in_sentence_transformers():
    """The default mode is the ecosystem's (sentence-transformers' MNRL, PyLate): the hard negatives join each
    query's denominator, exactly as if they were appended to the candidates as its own extra columns."""
    q, c = _qc()
    h = F.normalize(torch.randn(4, 3, 8), dim=-1)
    logits = torch.cat([q @ c.T, torch.einsum("bd,bkd->bk", q, h)], dim=1) / 0.05
    expected = F.cross_entropy(logits, torch.arange(4))
    torch.testing.assert_close(info_nce(q, c, hard_negatives=h, temperature=0.05), expected)
