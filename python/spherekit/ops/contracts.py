"""The backend contracts: what every implementation of an op family provides to the op that dispatches to it.

An op (spherekit.ops.<family>) validates its inputs once, picks a backend (spherekit._backend) and calls the
chosen implementation through the launchers below; every implementation of a family has the same launcher
names and parameters:

    family         implementations                                                   Protocol
    info_nce       kernels/info_nce.py (Triton), ops/_info_nce_cpu.py                 InfoNCEBackend
    info_nce_rows  kernels/info_nce_rows.py, ops/_info_nce_cpu.py (the row kernel     InfoNCERowsBackend
                   of ops/_info_nce_chunked.py, the one-pass path)
    sincere        kernels/sincere.py, ops/_sincere_cpu.py                            SincereBackend
    sincere_rows   kernels/gram_rows.py, ops/_sincere_cpu.py (ops/_gram_chunked.py)   SincereRowsBackend
    circular_cse   kernels/circular_cse.py, ops/_circular_cse_cpu.py                  CircularCSEBackend
    circular_cse_  kernels/gram_rows.py, ops/_circular_cse_cpu.py                     CircularCSERowsBackend
      rows
    ngpt           kernels/ngpt.py, ops/_ngpt_cuda.py, ops/_ngpt_cpp.py (CppNgpt),    NGPTBackend
                   ops/_ngpt_cpu.py
    maxsim         kernels/maxsim.py, ops/_maxsim_cpu.py                              MaxSimBackend
    soft_align     kernels/soft_align.py, ops/_soft_align_cpu.py                      SoftAlignBackend
    sim_map        kernels/sim_map.py, ops/_sim_map_cpu.py                            SimMapBackend

Conventions (tests/ops/test_contracts.py checks every implementation against its Protocol):
  - launchers are named ``<op>_fwd`` / ``<op>_bwd``; the row kernel of a chunked one-pass loss (a scalar loss and
    its gradients from one pass: ops/_info_nce_chunked.py, ops/_gram_chunked.py) is ``<op>_rows``;
  - tensors are positional, in the order below; options (flags, scalars, which gradients are needed) are
    keyword-only;
  - inputs arrive validated (spherekit.ops.checks) and contiguous where the op says so; a launcher only asserts
    its own kernel constraints (tile limits, dtypes its kernels do not support);
  - gradients that were not asked for come back as None; statistics and gradients are fp32 (fp64 on the CPU
    paths for fp64 inputs) and the op casts them back to the input dtype.

The symbols follow each family's oracle in spherekit.reference, whose docstring states the forward and backward
math: q, c, h queries / candidates / hard negatives, t targets, tau temperature, ql / cl query / candidate labels,
e embeddings, y labels, lse the per-row logsumexp the forward saves for the backward.
backends(family) names the backends a family has; the op tests run each of them against the oracle
(tests/ops/_harness.py). How to add a backend: kernels/README.md.
"""

from __future__ import annotations

from typing import Optional, Protocol, Sequence

import torch
from torch import Tensor

Grad = Optional[Tensor]


class InfoNCEBackend(Protocol):
    def info_nce_fwd(self, q: Tensor, c: Tensor, targets: Tensor, h: Optional[Tensor], tau: Tensor,
                     ql: Optional[Tensor], cl: Optional[Tensor], label_bias: Optional[Tensor], *, hn_softmax: bool,
                     bce_weight: float, bce_scale: float, bce_bias: float) -> tuple[Tensor, Tensor]:
        """-> (loss per row (B,), logsumexp per row (B,)); ignored rows (target -100) get loss 0."""

    def info_nce_bwd(self, grad_rows: Tensor, q: Tensor, c: Tensor, targets: Tensor, h: Optional[Tensor], tau: Tensor,
                     ql: Optional[Tensor], cl: Optional[Tensor], label_bias: Optional[Tensor], lse: Tensor, *,
                     hn_softmax: bool, bce_weight: float, bce_scale: float, bce_bias: float, need_dq: bool,
                     need_dc: bool, need_dh: bool, need_dtau: bool,
                     grad_dtype: Optional[torch.dtype] = None) -> tuple[Grad, Grad, Grad, Grad]:
        """-> (dq, dc, dh, dtau) for the upstream gradient grad_rows (B,) of the per-row losses; dq, dc, dh in
        grad_dtype (None: the backend's own, the inputs' dtype for Triton and fp32 for the CPU tiles; the op casts
        them to the inputs' dtype)."""


class InfoNCERowsBackend(Protocol):
    def info_nce_rows(self, S: Tensor, targets: Tensor, ql: Optional[Tensor], cl: Optional[Tensor],
                      label_bias: Optional[Tensor], tau: Tensor, y: Optional[Tensor], *, hn_softmax: bool,
                      bce_weight: float, bce_scale: float, bce_bias: float,
                      need_stat: bool) -> tuple[Tensor, Grad, Grad]:
        """The row kernel of the chunked one-pass path (spherekit.ops._info_nce_chunked): S (R, N) holds the dots
        of R query rows with every candidate and is overwritten with the scaled logit gradient G'; y (R, k) the
        hard-negative dots. -> (loss per row (R,), the temperature statistic r (R,) or None, Gh' (R, k) or None)."""


class SincereBackend(Protocol):
    def sincere_fwd(self, e: Tensor, labels: Tensor, tau: Tensor, label_bias: Optional[Tensor],
                    shift: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """-> (loss per anchor, L = logsumexp over its negatives, U = sum of sigmoids over its positives, |P|)."""

    def sincere_bwd(self, grad_rows: Tensor, e: Tensor, labels: Tensor, tau: Tensor, label_bias: Optional[Tensor],
                    shift: Optional[Tensor], lse: Tensor, usum: Tensor, npos: Tensor, *, need_de: bool,
                    need_dtau: bool) -> tuple[Grad, Grad]:
        """-> (dE, dtau) from the statistics the forward saved."""


class SincereRowsBackend(Protocol):
    def sincere_rows(self, S: Tensor, sl: slice, labels: Tensor, tau: Tensor, label_bias: Optional[Tensor],
                     shift: Optional[Tensor], npos: Tensor, *, need_stat: bool) -> tuple[Tensor, Grad]:
        """The row kernel of the chunked one-pass path (spherekit.ops._gram_chunked): S (R, B) holds the dots of the
        rows sl with every embedding and is overwritten with G'. -> (the rows' loss sum, their statistic or None)."""


class CircularCSEBackend(Protocol):
    def circular_cse_fwd(self, e: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *,
                         margin: float) -> Tensor:
        """-> rows (B,): sum over j != i of the squared residual l_ij."""

    def circular_cse_bwd(self, grad_rows: Tensor, e: Tensor, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *,
                         margin: float) -> Tensor:
        """-> dE (B, d)."""


class CircularCSERowsBackend(Protocol):
    def circular_cse_rows(self, S: Tensor, sl: slice, labels: Tensor, row_cos: Tensor, row_sin: Tensor, *,
                          margin: float) -> tuple[Tensor, None]:
        """The row kernel of the chunked one-pass path: S (R, B) overwritten with the residuals r.
        -> (the rows' sum of r^2, None)."""


class NGPTBackend(Protocol):
    def geodesic_residual_fwd(self, h: Tensor, f: Tensor, alpha: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
        """-> (out (R, d) in h.dtype, norms (R, 3): ||h||, ||f||, ||y||)."""

    def geodesic_residual_bwd(self, grad_out: Tensor, h: Tensor, f: Tensor, alpha: Tensor, norms: Tensor, *,
                              eps: float) -> tuple[Tensor, Tensor, Tensor]:
        """-> (grad_h, grad_f, grad_alpha (d,))."""

    def l2_normalize_fwd(self, x: Tensor, *, eps: float) -> tuple[Tensor, Tensor]:
        """-> (x / max(||x||, eps) in x.dtype, norms (R,), unclamped)."""

    def l2_normalize_bwd(self, grad_out: Tensor, x: Tensor, norms: Tensor, *, eps: float) -> Tensor:
        """-> grad_x."""

    def renormalize_(self, views: Sequence[Tensor], *, eps: float) -> None:
        """Every (outer, n, inner) view normalised in place along n."""


class MaxSimBackend(Protocol):
    def maxsim_fwd(self, q: Tensor, q_mask: Tensor, d4: Tensor, d_mask4: Tensor, *,
                   shared: bool) -> tuple[Tensor, Tensor]:
        """-> (scores (Bq, K), argmax (Bq, K, m) int32, -1 at padding query tokens)."""

    def maxsim_bwd(self, grad: Tensor, q: Tensor, q_mask: Tensor, d4: Tensor, d_mask4: Tensor, argmax: Tensor, *,
                   shared: bool, need_dq: bool, need_dd: bool) -> tuple[Grad, Grad]:
        """-> (grad_q, grad_d4); only argmax entries receive gradient."""


class SimMapBackend(Protocol):
    def sim_map_fwd(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *, patch: Optional[int],
                    channels: tuple[str, ...], clip: bool, out_dtype, all_pairs: bool
                    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """-> (out (P, ...) map or patches, rowmax, rowarg, colmax, colarg): the row / column maxima and argmax the
        backward may reuse, or empty tensors (a backend that recomputes them)."""

    def sim_map_bwd(self, grad_out: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, *,
                    patch: Optional[int], channels: tuple[str, ...], clip: bool, stats, need_dq: bool, need_dd: bool,
                    all_pairs: bool) -> tuple[Grad, Grad]:
        """-> (grad_q, grad_d); stats: the four statistics sim_map_fwd returned (None or empty: recompute)."""


class SoftAlignBackend(Protocol):
    def soft_align_fwd(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam, tau
                       ) -> tuple[Tensor, Tensor, Tensor]:
        """-> (score (B,), lse (B, m), s (B, m)); lam and tau are 0-dim tensors (CPU) or floats (Triton)."""

    def soft_align_bwd(self, grad: Tensor, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor, lam, tau,
                       lse: Tensor, s: Tensor, *, need_dq: bool, need_dd: bool) -> tuple[Grad, Grad, Tensor, Tensor]:
        """-> (grad_q, grad_d, grad_lam (B,), grad_tau (B,))."""


# family -> (Protocol, module names of its implementations); a module's name may end in ":Class" for a class
# (instantiated around an extension module). A "<family>_rows" entry is the row kernel of the family's chunked
# one-pass path.
IMPLEMENTATIONS: dict[str, tuple[type, tuple[str, ...]]] = {
    "info_nce": (InfoNCEBackend, ("spherekit.kernels.info_nce", "spherekit.ops._info_nce_cpu")),
    "info_nce_rows": (InfoNCERowsBackend, ("spherekit.kernels.info_nce_rows", "spherekit.ops._info_nce_cpu")),
    "sincere": (SincereBackend, ("spherekit.kernels.sincere", "spherekit.ops._sincere_cpu")),
    "sincere_rows": (SincereRowsBackend, ("spherekit.kernels.gram_rows", "spherekit.ops._sincere_cpu")),
    "circular_cse": (CircularCSEBackend, ("spherekit.kernels.circular_cse", "spherekit.ops._circular_cse_cpu")),
    "circular_cse_rows": (CircularCSERowsBackend, ("spherekit.kernels.gram_rows",
                                                   "spherekit.ops._circular_cse_cpu")),
    "ngpt": (NGPTBackend, ("spherekit.kernels.ngpt", "spherekit.ops._ngpt_cuda", "spherekit.ops._ngpt_cpp:CppNgpt",
                           "spherekit.ops._ngpt_cpu")),
    "maxsim": (MaxSimBackend, ("spherekit.kernels.maxsim", "spherekit.ops._maxsim_cpu")),
    "soft_align": (SoftAlignBackend, ("spherekit.kernels.soft_align", "spherekit.ops._soft_align_cpu")),
    "sim_map": (SimMapBackend, ("spherekit.kernels.sim_map", "spherekit.ops._sim_map_cpu")),
}


def backend_of(target: str) -> str:
    """The backend (a spherekit._backend name) an IMPLEMENTATIONS entry serves, by the file naming of
    kernels/README.md: spherekit.kernels.<family> is "triton", ops/_<family>_cuda.py "cuda", ops/_<family>_cpu.py
    and ops/_<family>_cpp.py (the C++ loops of spherekit._C) "cpu"."""
    module = target.partition(":")[0]
    if module.startswith("spherekit.kernels."):
        return "triton"
    return {"cpu": "cpu", "cpp": "cpu", "cuda": "cuda"}[module.rsplit("_", 1)[-1]]


def backends(family: str) -> tuple[str, ...]:
    """The backends that implement `family`: those of its entries in IMPLEMENTATIONS (its own and its row kernel's,
    "<family>_rows"), each once, in the order listed."""
    targets = IMPLEMENTATIONS[family][1] + IMPLEMENTATIONS.get(f"{family}_rows", (None, ()))[1]
    return tuple(dict.fromkeys(backend_of(target) for target in targets))
