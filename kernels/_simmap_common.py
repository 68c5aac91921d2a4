"""Launcher helpers shared by the token-similarity kernels (maxsim.py, soft_align.py, sim_map.py):
argument checks with clear errors, token masks as uint8, and 1 / |valid query tokens|.

Masks are bool (or int8/uint8; nonzero = valid) with the token axes of their embeddings; None means
every token is valid. Kernels read them through a uint8 view (no copy for bool/uint8/int8).
"""

from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MASK_DTYPES = (torch.bool, torch.uint8, torch.int8)


def check_tokens(name: str, x, ndim: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in FLOAT_DTYPES]}, got {x.dtype}")


def check_same(name: str, x: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    """Same dtype and device as `ref`."""
    if x.dtype != ref.dtype:
        raise TypeError(f"{name} must have the dtype of {ref_name} ({ref.dtype}), got {x.dtype}")
    if x.device != ref.device:
        raise ValueError(f"{name} must be on the device of {ref_name} ({ref.device}), got {x.device}")


def check_shape(name: str, x: torch.Tensor, shape: tuple) -> None:
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")


def unit_last(x: torch.Tensor) -> torch.Tensor:
    """x with stride 1 over the embedding axis (vectorised loads); other strides are kept."""
    return x if x.stride(-1) == 1 or x.shape[-1] == 1 else x.contiguous()


def mask_arg(name: str, mask, shape: tuple, device: torch.device) -> tuple[torch.Tensor, bool]:
    """-> (uint8 view of the mask, or a 1-element dummy when mask is None; has_mask)."""
    if mask is None:
        return torch.ones(1, dtype=torch.uint8, device=device), False
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype not in MASK_DTYPES:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in MASK_DTYPES]}, got {mask.dtype}")
    check_shape(name, mask, shape)
    if mask.device != device:
        raise ValueError(f"{name} must be on device {device}, got {mask.device}")
    return mask.view(torch.uint8), True


def mask_strides(mask: torch.Tensor, has_mask: bool, ndim: int) -> tuple[int, ...]:
    return tuple(mask.stride()) if has_mask else (0,) * ndim


def inv_valid_count(mask, B: int, M: int, device: torch.device) -> torch.Tensor:
    """(B,) fp32: 1 / |valid tokens| per row, 0 for a row without valid tokens (its mean is taken as 0)."""
    if mask is None:
        return torch.full((B,), 1.0 / M if M > 0 else 0.0, dtype=torch.float32, device=device)
    count = (mask != 0).sum(-1, dtype=torch.float32)
    return torch.where(count > 0, 1.0 / count.clamp_min(1.0), torch.zeros_like(count))


def check_paired(q, q_mask, d, d_mask):
    """Paired token batches q (B, m, h), d (B, n, h) of one dtype and device, with their masks:
    -> ((B, m, n, h), (q mask, has q mask), (d mask, has d mask)); the masks come from mask_arg."""
    check_tokens("q", q, 3)
    check_tokens("d", d, 3)
    check_same("d", d, "q", q)
    B, M, H = q.shape
    if d.shape[0] != B or d.shape[2] != H:
        raise ValueError(f"d must have shape ({B}, n, {H}) to pair with q {tuple(q.shape)}, got {tuple(d.shape)}")
    N = d.shape[1]
    if min(B, M, N, H) < 1:
        raise ValueError(f"empty input: q shape {tuple(q.shape)}, d shape {tuple(d.shape)}")
    return (B, M, N, H), mask_arg("q_mask", q_mask, (B, M), q.device), mask_arg("d_mask", d_mask, (B, N), q.device)
