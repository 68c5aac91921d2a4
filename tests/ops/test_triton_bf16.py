"""bfloat16 and the Triton interpreter (issue 16): the interpreter's bf16 arithmetic is wrong (info_nce gave
2.1e11 for 12.4), so backend="triton" refuses bf16 there with an error naming the argument; the cpu backend
takes bf16; compiled Triton on a GPU is not affected by the rule."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import checks, circular_cse, info_nce, maxsim, sim_map, sincere, soft_align
from spherekit.reference import sim_map as ref_sim_map

GEN_SEED = 16
LABELS = torch.arange(8) % 3


def _unit(*shape):
    gen = torch.Generator().manual_seed(GEN_SEED)
    return F.normalize(torch.randn(*shape, generator=gen, dtype=torch.float64), dim=-1)


def _tokens(fn, dtype, **kw):
    """fn on two query / document token batches: the ops take the masks as keywords, the oracles positionally."""
    q_mask, d_mask = torch.ones(2, 5, dtype=torch.bool), torch.ones(2, 7, dtype=torch.bool)
    q, d = _unit(2, 5, 16).to(dtype), _unit(2, 7, 16).flip(0).to(dtype)
    if fn.__module__ == ref_sim_map.__name__:
        return fn(q, q_mask, d, d_mask, normalize=False, **kw)
    return fn(q, d, q_mask=q_mask, d_mask=d_mask, normalize=False, **kw)


# op name -> (first float argument, call(fn, dtype, **kw)); fn is the op or its reference
CALLS = {
    "info_nce": ("queries", lambda fn, dt, **kw: fn(_unit(8, 16).to(dt), _unit(8, 16).flip(0).to(dt), **kw)),
    "sincere": ("embeddings", lambda fn, dt, **kw: fn(_unit(8, 16).to(dt), LABELS, **kw)),
    "circular_cse": ("embeddings", lambda fn, dt, **kw: fn(_unit(8, 16).to(dt), LABELS, torch.tensor([0.0, 2.0, 4.0]),
                                                           **kw)),
    "maxsim": ("q", lambda fn, dt, **kw: _tokens(fn, dt, reduction="sum", **kw)),
    "soft_align": ("q", _tokens),
    "sim_map": ("q", _tokens),
}
OPS = {"info_nce": (info_nce, reference.info_nce), "sincere": (sincere, reference.sincere),
       "circular_cse": (circular_cse, reference.circular_cse), "maxsim": (maxsim, ref_sim_map.maxsim),
       "soft_align": (soft_align, ref_sim_map.soft_align), "sim_map": (sim_map, ref_sim_map.sim_map)}


@pytest.mark.parametrize("op", list(CALLS))
def test_triton_interpreter_refuses_bf16_naming_the_argument(op):
    pytest.importorskip("triton")
    name, call = CALLS[op]
    with pytest.raises(TypeError, match=f"^{name}: bfloat16 is not supported by the Triton interpreter "
                                        r"\(TRITON_INTERPRET=1, CPU tensors\).*use backend='cpu' or a GPU"):
        call(OPS[op][0], torch.bfloat16, backend="triton")


@pytest.mark.parametrize("op", list(CALLS))
def test_cpu_backend_takes_bf16(op):
    """The cpu backend computes in fp32 from the bf16 values: the fp64 reference on the same values."""
    _, call = CALLS[op]
    fn, ref = OPS[op]
    got = call(fn, torch.bfloat16, backend="cpu")
    want = call(ref, torch.bfloat16, compute_dtype=torch.float64)
    tol = 8e-3 if got.dtype == torch.bfloat16 else 1e-5  # sim_map returns the map in q's dtype
    torch.testing.assert_close(got.double(), want.reshape(got.shape), atol=tol, rtol=tol)


def test_the_rule_applies_to_the_interpreter_only(monkeypatch):
    x = torch.zeros(2, 2, dtype=torch.bfloat16)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    checks.check_triton_dtype("triton", queries=x)  # compiled Triton (a GPU) takes bf16
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    checks.check_triton_dtype("cpu", queries=x)
    checks.check_triton_dtype("triton", queries=x.float(), hard_negatives=None)
    with pytest.raises(TypeError, match="^queries: bfloat16"):
        checks.check_triton_dtype("triton", queries=x)
