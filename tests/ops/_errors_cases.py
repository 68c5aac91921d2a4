"""Bad-input tables shared by several ops; each op's test_<op>_errors.py parametrises over them with its own op.

- the padded token-similarity ops (maxsim, soft_align, sim_map, global_avg_sim): the checks every one of them makes
  on q, q_mask, d, d_mask and backend: COMMON for every op, PAIRED for the paired ops (one document per query);
- the labelled-embedding losses (sincere, circular_cse): the checks both make on embeddings, labels and backend:
  EMBEDDINGS;
- the temperature of the softmax losses (info_nce, sincere): TEMPERATURE.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

NAN, INF = float("nan"), float("inf")


def call_with(fn, positional: dict, overrides: dict):
    """fn(*the values of positional, each replaced by the override of its name, **the other overrides)."""
    args = {**positional, **overrides}
    values = [args.pop(name) for name in positional]
    return fn(*values, **args)


TEMPERATURE = [  # (override of temperature, error, message): info_nce and sincere check it alike
    (dict(temperature=0.0), ValueError, "temperature must be > 0"),
    (dict(temperature=float("inf")), ValueError, "temperature must be finite, got inf"),
    (dict(temperature=1e-39), ValueError, r"temperature must be >= 0.0001 \(and finite\), got 1e-39"),
    (dict(temperature=torch.tensor(5e-5, requires_grad=True)), ValueError, "temperature must be >= 0.0001"),
    (dict(temperature=torch.tensor(float("inf"), requires_grad=True)), ValueError,
     "temperature must be finite, got inf"),
    (dict(temperature=torch.tensor([0.1])), ValueError, "temperature must be a float or a 0-dim"),
    (dict(temperature="hot"), TypeError, "temperature must be a float"),
]


# ---- the labelled-embedding losses ---------------------------------------------------------------------------

def labelled_embeddings():
    """Valid inputs: 6 unit embeddings of size 8, labels [0, 0, 1, 1, 2, 2]."""
    gen = torch.Generator().manual_seed(0)
    return F.normalize(torch.randn(6, 8, generator=gen), dim=-1), torch.tensor([0, 0, 1, 1, 2, 2])


EMBEDDINGS = [  # (override of embeddings / labels / backend, error, message)
    (dict(embeddings=torch.randn(6)), ValueError, "embeddings must have 2 dimensions"),
    (dict(embeddings=torch.randn(6, 8).long()), TypeError, "embeddings must have dtype"),
    (dict(embeddings=torch.randn(6, 8, dtype=torch.float64), backend="triton"), TypeError,
     "embeddings: float64 is not supported by backend 'triton'"),
    (dict(embeddings=torch.randn(0, 8), labels=torch.zeros(0, dtype=torch.long)), ValueError, "embeddings is empty"),
    (dict(embeddings=torch.randn(1, 8), labels=torch.zeros(1, dtype=torch.long)), ValueError,
     "embeddings must hold B >= 2"),
    (dict(embeddings=torch.full((6, 8), float("nan"))), ValueError, "NaN or Inf found in embeddings"),
    (dict(labels=torch.tensor([0, 0, 1, 1, 2])), ValueError, r"labels.shape\[0\] must equal the number"),
    (dict(labels=torch.tensor([0, 0, 1, 1, 2, 2], dtype=torch.int32)), TypeError, "labels must have dtype"),
    (dict(backend="cuda"), ValueError, "backend 'cuda' is not implemented"),
    (dict(backend="fast"), ValueError, "backend must be one of"),
]


# ---- the padded token-similarity ops -------------------------------------------------------------------------


def good(Bq=2, Bd=3, m=4, n=5, h=8):
    """Valid inputs: q (Bq, m, h), d (Bd, n, h), all-True masks."""
    gen = torch.Generator().manual_seed(0)
    return dict(q=torch.randn(Bq, m, h, generator=gen), q_mask=torch.ones(Bq, m, dtype=torch.bool),
                d=torch.randn(Bd, n, h, generator=gen), d_mask=torch.ones(Bd, n, dtype=torch.bool))


def _set(x, key, index, value):
    t = x[key].clone()
    t[index] = value
    return {**x, key: t}


COMMON = [  # (override of the paired inputs (B = 2), error, message)
    (dict(q=torch.randn(2, 4)), ValueError, "q must have 3 dimensions"),
    (dict(q=torch.randn(2, 4, 8).long()), TypeError, "q must have dtype in"),
    (dict(q=torch.randn(2, 0, 8), q_mask=torch.ones(2, 0, dtype=torch.bool)), ValueError, "q is empty"),
    (dict(d=torch.randn(2, 5, 7)), ValueError, r"d.shape\[-1\] must equal the hidden size h of q \(8\)"),
    (dict(d=torch.randn(2, 5, 8).half()), TypeError, r"d must have the dtype of q \(torch.float32\)"),
    (dict(q_mask=torch.full((2, 4), 2, dtype=torch.int64)), ValueError, "q_mask must be bool or hold only 0/1"),
    (dict(d_mask=torch.full((2, 5), 0.5)), ValueError, "d_mask must be bool or hold only 0/1 values"),
    (dict(q_mask=torch.ones(2, 3, dtype=torch.bool)), ValueError, r"q_mask must have shape \(2, 4\), got \(2, 3\)"),
    (dict(d_mask=torch.ones(5, dtype=torch.bool)), ValueError, r"d_mask must have shape \(2, 5\), got \(5,\)"),
    (dict(q_mask=[[True] * 4] * 2), TypeError, "q_mask must be a torch.Tensor or None"),
    ("no_valid_query", ValueError, "q_mask: query 1 has no valid token"),
    ("no_valid_doc", ValueError, "d_mask: document 0 has no valid token"),
    ("nan_q", ValueError, "NaN or Inf found in q"),
    ("inf_d", ValueError, "NaN or Inf found in d"),
    (dict(backend="fast"), ValueError, "backend must be one of"),
]

# the paired ops (soft_align, sim_map, global_avg_sim) need as many documents as queries
PAIRED = COMMON + [("batch_mismatch", ValueError, r"d.shape\[0\] must equal the batch size B of q \(2\)")]


def ids(cases):
    """Test ids: the start of each case's message."""
    return [str(c[2])[:40] for c in cases]


def apply_case(override):
    """The paired inputs (B = 2) with one case's override."""
    if override == "batch_mismatch":
        return good(Bd=3)
    x = good(Bd=2)
    if override == "no_valid_query":
        return _set(x, "q_mask", 1, False)
    if override == "no_valid_doc":
        return _set(x, "d_mask", 0, False)
    if override == "nan_q":
        return _set(x, "q", (0, 1, 2), NAN)
    if override == "inf_d":
        return _set(x, "d", (1, 4, 0), -INF)
    return {**x, **override}


def call(fn, x, **kwargs):
    """fn(q, q_mask, d, d_mask, **the other entries of x, **kwargs)."""
    x = dict(x)
    return fn(x.pop("q"), x.pop("q_mask"), x.pop("d"), x.pop("d_mask"), **x, **kwargs)
