"""Launcher helpers shared by the token-similarity kernels (maxsim.py, soft_align.py, sim_map.py): the
kernels' input constraints, token masks as uint8, and 1 / |valid query tokens|.

The public ops validate their arguments (spherekit.ops.checks); the launchers only assert what the kernels
need, through the same checks on metadata: ranks, matching shapes, a kernel dtype (KERNEL_DTYPES) and masks
of bool / uint8 / int8 (nonzero = valid; None = every token valid) read through a uint8 view (no copy).
"""

from __future__ import annotations

import torch

from ..ops.checks import KERNEL_DTYPES, KERNEL_MASK_DTYPES, check_mask, check_same, check_tokens

def unit_last(x: torch.Tensor) -> torch.Tensor:
    """x with stride 1 over the embedding axis (vectorised loads); other strides are kept."""
    return x if x.stride(-1) == 1 or x.shape[-1] == 1 else x.contiguous()


def mask_arg(name: str, mask, shape: tuple, device: torch.device) -> tuple[torch.Tensor, bool]:
    """-> (uint8 view of the mask, or a 1-element dummy when mask is None; has_mask)."""
    if mask is None:
        return torch.empty(1, dtype=torch.uint8, device=device), False  # never read: no fill launch
    mask = check_mask(name, mask, shape, device, dtypes=KERNEL_MASK_DTYPES)
    return mask.view(torch.uint8), True


def mask_strides(mask: torch.Tensor, has_mask: bool, ndim: int) -> tuple[int, ...]:
    return tuple(mask.stride()) if has_mask else (0,) * ndim


def inv_valid_count(mask, B: int, M: int, device: torch.device) -> torch.Tensor:
    """(B,) fp32: 1 / |valid tokens| per row, 0 for a row without valid tokens (its mean is taken as 0)."""
    if mask is None:
        return torch.full((B,), 1.0 / M if M > 0 else 0.0, dtype=torch.float32, device=device)
    count = (mask != 0).sum(-1, dtype=torch.float32)
    return torch.where(count > 0, 1.0 / count.clamp_min(1.0), torch.zeros_like(count))


def check_paired(q, q_mask, d, d_mask, *, all_pairs: bool = False):
    """Paired token batches q (B, m, h), d (B, n, h) of one dtype and device, with their masks:
    -> ((B, m, n, h), (q mask, has q mask), (d mask, has d mask)); the masks come from mask_arg.
    all_pairs=True: d may hold any number Bd >= 1 of sequences (every query meets every document)."""
    check_tokens("q", q, 3, dtypes=KERNEL_DTYPES, nonempty=False)
    check_tokens("d", d, 3, dtypes=KERNEL_DTYPES, nonempty=False)
    check_same("d", d, "q", q)
    B, M, H = q.shape
    if (d.shape[0] != B and not all_pairs) or d.shape[2] != H:
        raise ValueError(f"d must have shape ({'Bd' if all_pairs else B}, n, {H}) to pair with q {tuple(q.shape)}, "
                         f"got {tuple(d.shape)}")
    Bd, N = d.shape[:2]
    if min(B, Bd, M, N, H) < 1:
        raise ValueError(f"empty input: q shape {tuple(q.shape)}, d shape {tuple(d.shape)}")
    return (B, M, N, H), mask_arg("q_mask", q_mask, (B, M), q.device), mask_arg("d_mask", d_mask, (Bd, N), q.device)
