"""Argument validation shared by the ops: every error names the argument, the expected and the actual."""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _backend

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check_tensor(name: str, x, *, ndim: int | None = None, dtypes=None, device: torch.device | None = None) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if dtypes is not None and x.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in dtypes]}, got {x.dtype}")
    if device is not None and x.device != device:
        raise ValueError(f"{name} must be on device {device}, got {x.device}")


def check_dim(name: str, x: Tensor, dim: int, expected: int, what: str) -> None:
    if x.shape[dim] != expected:
        raise ValueError(f"{name}.shape[{dim}] must equal {what} ({expected}), got shape {tuple(x.shape)}")


def check_nonempty(name: str, x: Tensor) -> None:
    if x.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); an empty batch has no loss")


def check_finite(**tensors: Tensor | None) -> None:
    """Raise naming each float tensor holding NaN or +-Inf. One aminmax reduction per tensor (NaN propagates
    to min and max; an Inf shows up as one of them): no tensor-sized temporary, one host sync for all."""
    named = [(n, t.detach()) for n, t in tensors.items() if t is not None and t.is_floating_point() and t.numel()]
    if not named:
        return
    stats = torch.stack([torch.stack(torch.aminmax(t)).to(torch.float64) for _, t in named])
    ok = torch.isfinite(stats).all(-1).tolist()
    bad = [n for (n, _), fine in zip(named, ok) if not fine]
    if bad:
        raise ValueError(f"NaN or Inf found in {', '.join(bad)}")


def check_log_weights(name: str, x: Tensor) -> None:
    """Log-weights: -inf is allowed (weight 0), NaN and +inf are not."""
    if bool((torch.isnan(x) | torch.isposinf(x)).any()):
        raise ValueError(f"{name} contains NaN or +Inf (-Inf is allowed and means weight 0)")


def check_index_range(name: str, x: Tensor, low: int, high: int, *, ignore: int | None = None) -> None:
    """All entries in [low, high) (entries equal to `ignore` are allowed)."""
    vals = x if ignore is None else x[x != ignore]
    if vals.numel() == 0:
        return
    lo, hi = int(vals.min()), int(vals.max())
    if lo < low or hi >= high:
        extra = f" (or {ignore} to ignore a row)" if ignore is not None else ""
        raise ValueError(f"{name} must lie in [{low}, {high}){extra}, got values in [{lo}, {hi}]")


# The smallest temperature: logits are dot products / temperature, so for unit vectors they stay within
# +-1e4 and d_temperature (~ dot / temperature^2) within ~1e8, far inside fp32 even for dot products of 1e20.
# Far smaller ones leave fp32: 1e-39 is subnormal and 1 / 1e-39 overflows, which gave NaN losses.
MIN_TEMPERATURE = 1e-4


def check_temperature(name: str, value: float, dtype: torch.dtype = torch.float64) -> None:
    """The temperature rule of every op: finite and >= MIN_TEMPERATURE (1e-4, as rounded to the temperature's
    dtype). An infinite temperature makes the gradients 0 * inf = NaN; a tiny one drives the logits and
    gradients out of fp32 range."""
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if value == float("inf"):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < torch.tensor(MIN_TEMPERATURE, dtype=dtype).item():
        raise ValueError(f"{name} must be >= {MIN_TEMPERATURE:g} (and finite), got {value}: the logits are dot "
                         f"products / {name}, and below that they and their gradients (~ 1/{name}^2) leave fp32")


def as_temperature(temperature, device: torch.device) -> Tensor:
    """A float or 0-dim floating tensor obeying check_temperature -> 0-dim fp32 tensor on `device` (grad kept)."""
    if isinstance(temperature, Tensor):
        if temperature.dim() != 0 or not temperature.is_floating_point():
            raise ValueError(
                f"temperature must be a float or a 0-dim floating tensor, got shape {tuple(temperature.shape)} "
                f"dtype {temperature.dtype}"
            )
        if temperature.device != device:
            raise ValueError(f"temperature must be on device {device}, got {temperature.device}")
        check_temperature("temperature", float(temperature.detach()), temperature.dtype)
        return temperature.float()
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a float or a 0-dim tensor, got {type(temperature).__name__}")
    check_temperature("temperature", float(temperature))
    return torch.tensor(float(temperature), dtype=torch.float32, device=device)


def check_triton_dtype(backend: str, **tensors: Tensor | None) -> None:
    """The Triton launch paths' dtype rule: under the Triton interpreter (TRITON_INTERPRET=1, how Triton runs
    on CPU tensors) backend 'triton' refuses bfloat16, whose arithmetic the interpreter gets wrong (every
    tl.dot returns garbage). Compiled Triton on a GPU takes bfloat16."""
    if backend != "triton" or not _backend.triton_interpreting():
        return
    for name, x in tensors.items():
        if x is not None and x.dtype == torch.bfloat16:
            raise TypeError(f"{name}: bfloat16 is not supported by the Triton interpreter (TRITON_INTERPRET=1, "
                            "CPU tensors): its bf16 arithmetic is wrong; use backend='cpu' or a GPU")


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
