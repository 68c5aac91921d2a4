"""Every tensor argument of the contrastive and token-map ops in a non-contiguous layout, against the fp64
reference on contiguous copies: values and gradients (issue 16: the Triton info_nce kernels read
query_labels / candidate_labels as if they were contiguous).

Two layouts: "strided", a view with every stride doubled whose gaps hold poison (NaN, flipped flags, shifted
ids), so a kernel that reads it as packed returns a wrong or NaN result; "expanded", row 0 broadcast along
dim 0 (stride 0), which a packed read runs past (e.g. torch.zeros(1).long().expand(5)).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spherekit import reference
from spherekit.ops import circular_cse, info_nce, maxsim, sim_map, sincere, soft_align
from spherekit.reference import sim_map as ref_sim_map
from tests.ops._harness import backends

LAYOUTS = ["strided", "expanded"]


def _poison(x):
    if x.is_floating_point():
        return torch.full_like(x, float("nan"))
    if x.dtype == torch.bool:
        return ~x
    return x.roll(1, -1)  # ids stay in range, every one differs from its neighbour's


def strided(x):
    """x as a view with every stride doubled (stride 2 on the last axis); the gaps hold poison."""
    return torch.stack((x, _poison(x).detach()), dim=-1)[..., 0]


def expanded(x):
    """Row 0 of x broadcast along dim 0: stride 0 there."""
    return x[:1].expand(x.shape)


def _gen():
    return torch.Generator().manual_seed(16)


def _unit(*shape, gen):
    return F.normalize(torch.randn(*shape, generator=gen, dtype=torch.float64), dim=-1)


def _info_nce_case():
    gen = _gen()
    B, N, d, k, E = 6, 9, 19, 2, 3
    cl = torch.arange(N) % E
    return dict(queries=_unit(B, d, gen=gen), candidates=_unit(N, d, gen=gen), targets=torch.arange(B),
                hard_negatives=_unit(B, k, d, gen=gen), query_labels=cl[:B].clone(), candidate_labels=cl,
                label_bias=torch.randn(E, E, generator=gen, dtype=torch.float64) * 0.5), \
        dict(temperature=0.1, hard_negative_mode="both", reduction="none")


def _sincere_case():
    gen = _gen()
    E = 3
    return dict(embeddings=_unit(9, 19, gen=gen), labels=torch.arange(9) % E,
                label_bias=torch.randn(E, E, generator=gen, dtype=torch.float64) * 0.5), dict(temperature=0.1)


def _circular_cse_case():
    gen = _gen()
    return dict(embeddings=_unit(9, 19, gen=gen), labels=torch.arange(9) % 4,
                label_angles=torch.rand(4, generator=gen, dtype=torch.float64) * 6.28), dict(margin=0.1)


def _tokens_case(Bd):
    gen = _gen()
    q_mask = torch.rand(3, 5, generator=gen) < 0.7
    d_mask = torch.rand(Bd, 7, generator=gen) < 0.7
    q_mask[:, 0] = d_mask[:, 0] = True
    return dict(q=torch.randn(3, 5, 19, generator=gen, dtype=torch.float64), q_mask=q_mask,
                d=torch.randn(Bd, 7, 19, generator=gen, dtype=torch.float64), d_mask=d_mask)


OPS = {
    "info_nce": (info_nce, reference.info_nce, _info_nce_case),
    "sincere": (sincere, reference.sincere, _sincere_case),
    "circular_cse": (circular_cse, reference.circular_cse, _circular_cse_case),
    "maxsim": (maxsim, ref_sim_map.maxsim, lambda: (_tokens_case(4), dict(normalize=False, reduction="sum"))),
    "soft_align": (soft_align, ref_sim_map.soft_align, lambda: (_tokens_case(3), dict(lam=0.1, tau=0.2))),
    "sim_map": (sim_map, ref_sim_map.sim_map, lambda: (_tokens_case(3), dict(channels=("sim", "rowmax", "colmax")))),
}
CASES = [(op, arg, layout, backend) for op, (_, _, case) in OPS.items() for arg in case()[0] for layout in LAYOUTS
         for backend in backends(op)]
# the op rejects labels that are all equal (no anchor has a negative): sincere has no expanded-labels case
SKIP = {("sincere", "labels", "expanded")}
NO_GRAD = {"label_bias", "label_angles"}


def _run(fn, tensors, arg, layout, dtype, **kw):
    """fn on the tensors cast to dtype, `arg` in `layout` (contiguous copies when dtype is fp64: the
    reference) -> (output, gradients of sum(output * weights) w.r.t. the float leaves)."""
    leaves = {k: v.to(dtype).requires_grad_(k not in NO_GRAD) if v.is_floating_point() else v
              for k, v in tensors.items()}
    args = dict(leaves)
    args[arg] = (strided if layout == "strided" else expanded)(leaves[arg])
    if dtype == torch.float64:
        args = {k: v.contiguous() for k, v in args.items()}
    out = fn(**args, **kw)
    weights = torch.linspace(0.5, 1.5, out.numel(), dtype=out.dtype).reshape(out.shape)
    wrt = [v for v in leaves.values() if v.requires_grad]
    return out, torch.autograd.grad((out * weights).sum(), wrt, allow_unused=True)


@pytest.mark.parametrize("op,arg,layout,backend", CASES, ids=["-".join(case) for case in CASES])
def test_non_contiguous_argument_matches_the_reference(op, arg, layout, backend):
    if (op, arg, layout) in SKIP:
        pytest.skip("the op rejects this content")
    fn, ref, case = OPS[op]
    tensors, kw = case()
    out, grads = _run(fn, tensors, arg, layout, torch.float32, backend=backend, **kw)
    want, want_grads = _run(ref, tensors, arg, layout, torch.float64, compute_dtype=torch.float64, **kw)
    torch.testing.assert_close(out.double(), want, atol=2e-5, rtol=2e-5)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g.double(), w, atol=2e-5, rtol=2e-5)


def _launcher_vectors():
    """(launcher, positional tensor args, keyword options, indices of the 1-D vectors it indexes per row) for each
    Triton launcher of the contrastive ops."""
    KI = pytest.importorskip("spherekit.kernels.info_nce")
    KS = pytest.importorskip("spherekit.kernels.sincere")
    KC = pytest.importorskip("spherekit.kernels.circular_cse")
    gen = _gen()
    e, c = _unit(9, 19, gen=gen).float(), _unit(11, 19, gen=gen).float()
    y, t, cl = torch.arange(9) % 3, torch.arange(9), torch.arange(11) % 3
    tau, g = torch.tensor(0.1), torch.linspace(0.5, 1.5, 9)
    cos, sin, shift = (torch.rand(9, generator=gen) for _ in range(3))
    lb = torch.randn(3, 3, generator=gen)
    nce = (e, c, t, None, tau, y, cl, lb)
    nce_opts = dict(hn_softmax=False, bce_weight=0.0, bce_scale=20.0, bce_bias=-10.0)
    need = dict(need_dq=True, need_dc=True, need_dh=False, need_dtau=True)
    _, lse_i = KI.info_nce_fwd(*nce, **nce_opts)
    _, lse, usum, npos = KS.sincere_fwd(e, y, tau, lb, shift)
    return {
        "info_nce_fwd": (KI.info_nce_fwd, nce, nce_opts, (2, 5, 6)),
        "info_nce_bwd": (KI.info_nce_bwd, (g, *nce, lse_i), {**nce_opts, **need}, (0, 3, 6, 7, 9)),
        "sincere_fwd": (KS.sincere_fwd, (e, y, tau, lb, shift), {}, (1, 4)),
        "sincere_bwd": (KS.sincere_bwd, (g, e, y, tau, lb, shift, lse, usum, npos), dict(need_de=True, need_dtau=True),
                        (0, 2, 5, 6, 7, 8)),
        "circular_cse_fwd": (KC.circular_cse_fwd, (e, y, cos, sin), dict(margin=0.1), (1, 2, 3)),
        "circular_cse_bwd": (KC.circular_cse_bwd, (g, e, y, cos, sin), dict(margin=0.1), (0, 2, 3, 4)),
    }


LAUNCHERS = ["info_nce_fwd", "info_nce_bwd", "sincere_fwd", "sincere_bwd", "circular_cse_fwd", "circular_cse_bwd"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_triton_launchers_take_non_contiguous_vectors(launcher, layout):
    """A launcher called directly (as the custom ops call it) with every per-row vector in `layout` gives
    exactly what it gives on contiguous copies of the same values."""
    fn, args, options, vectors = _launcher_vectors()[launcher]
    view = strided if layout == "strided" else expanded
    args = [view(a) if i in vectors else a for i, a in enumerate(args)]
    got = fn(*args, **options)
    want = fn(*(a.contiguous() if i in vectors else a for i, a in enumerate(args)), **options)
    if not isinstance(got, tuple):
        got, want = (got,), (want,)
    for a, b in zip(got, want):
        if b is not None:
            torch.testing.assert_close(a, b, atol=0, rtol=0, equal_nan=True)
