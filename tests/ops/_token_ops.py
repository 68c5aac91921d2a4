"""The token-similarity ops (maxsim, maxsim_ragged, soft_align, sim_map, global_avg_sim) as one table for the tests that
ask the same of each of them (fast-mode hot path, edge values, autocast, fp64, torch.func, fake tensors, compile):
how to build small inputs, how to call the op with the keyword masks, which backends run here and which inputs take a
gradient. Every call passes its options explicitly."""

from __future__ import annotations

import torch

from tests.ops._harness import backends

OPS = ("maxsim", "maxsim_ragged", "soft_align", "sim_map", "global_avg_sim")
FAMILY = {"maxsim": "maxsim", "maxsim_ragged": None, "soft_align": "soft_align", "sim_map": "sim_map",
          "global_avg_sim": None}
LENGTHS = (3, 1, 5)  # maxsim_ragged's documents


def op_backends(op: str) -> list[str]:
    """The backends op runs on here: its family's (tests/ops/_harness.backends), else cpu only."""
    return backends(FAMILY[op]) if FAMILY[op] else ["cpu"]


def cases(ops=OPS) -> list[tuple[str, str]]:
    """(op, backend) for every op and backend it runs on here."""
    return [(op, backend) for op in ops for backend in op_backends(op)]


def differentiable(op: str) -> bool:
    return op != "maxsim_ragged"


def inputs(op: str, B: int = 2, m: int = 5, n: int = 6, h: int = 8, *, seed: int = 0,
           dtype: torch.dtype = torch.float32) -> dict:
    """Small valid inputs: maxsim all pairs (B queries, B + 1 documents), the paired ops B pairs, maxsim_ragged one
    query against len(LENGTHS) packed documents; masks with padding (every row keeps a valid token)."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, m, h, generator=gen, dtype=torch.float64).to(dtype)
    q_mask = torch.rand(B, m, generator=gen) < 0.8
    q_mask[:, 0] = True
    if op == "maxsim_ragged":
        docs = torch.randn(sum(LENGTHS), h, generator=gen, dtype=torch.float64).to(dtype)
        return dict(q=q[0], docs=docs, offsets=torch.tensor((0, *LENGTHS)).cumsum(0), q_mask=q_mask[0])
    bd = B + 1 if op == "maxsim" else B
    d = torch.randn(bd, n, h, generator=gen, dtype=torch.float64).to(dtype)
    d_mask = torch.rand(bd, n, generator=gen) < 0.8
    d_mask[:, -1] = True
    return dict(q=q, d=d, q_mask=q_mask, d_mask=d_mask)


OPTIONS = {  # the options every call passes (none left to a default)
    "maxsim": dict(normalize=True, reduction="sum"),
    "maxsim_ragged": dict(normalize=True, reduction="mean"),
    "soft_align": dict(lam=0.1, tau=0.2, normalize=True),
    "sim_map": dict(channels=("sim", "rowmax", "colmax"), clip=True, normalize=True),
    "global_avg_sim": dict(normalize=True),
}


def call(op: str, x: dict, backend: str = "auto", **options):
    """op on the inputs x (as built by `inputs`), masks as keywords, OPTIONS[op] updated by options."""
    from spherekit import ops

    fn = getattr(ops, op)
    kw = {**OPTIONS[op], **options}
    if op == "maxsim_ragged":
        return fn(x["q"], x["docs"], x["offsets"], q_mask=x["q_mask"], backend=backend, **kw)
    return fn(x["q"], x["d"], q_mask=x["q_mask"], d_mask=x["d_mask"], backend=backend, **kw)


def token_names(op: str) -> tuple[str, str]:
    """The names of the two token tensors in inputs(op)."""
    return ("q", "docs") if op == "maxsim_ragged" else ("q", "d")


def with_grad(x: dict, op: str) -> dict:
    """x with fresh leaf copies of its token tensors that require grad."""
    return {k: (v.detach().clone().requires_grad_() if k in token_names(op) else v) for k, v in x.items()}
