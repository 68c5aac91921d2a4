"""spherekit.ops.checks: the one place where arguments are validated. Every error names the argument, the
expected and the actual value.

Who validates
-------------
The public entry points validate, once, before a backend is chosen: the functions of spherekit.ops and the
verifiers of spherekit.nn (check_verifier_pair). The launchers in spherekit.kernels only assert what their kernels
need (ranks, matching shapes, a kernel dtype, a mask readable through a uint8 view, block sizes): cheap
checks on metadata, never on values (no NaN scan, no "every query needs a valid token" pass, no host sync).

Dtype policy
------------
KERNEL_DTYPES = (float32, float16, bfloat16) is what the Triton and CUDA kernels take (they accumulate in
fp32). FLOAT_DTYPES = KERNEL_DTYPES + (float64,). Per op:

    op                                        input dtypes      float64
    info_nce, sincere, circular_cse           KERNEL_DTYPES     refused on every backend: the losses return fp32
      (queries / candidates / embeddings)                       on every backend, so fp64 would be silently cut
    label_bias (info_nce, sincere),           FLOAT_DTYPES      accepted: small side tables, cast to fp32 before
      label_angles (circular_cse)                               the kernels
    maxsim, soft_align, sim_map,              FLOAT_DTYPES      cpu and reference compute in fp64 (fp64 scores,
      global_avg_sim, maxsim_ragged                             so the ops can be gradchecked); triton / cuda
    geodesic_residual, l2_normalize,          FLOAT_DTYPES      refuse it (refuse_float64) and backend="auto"
      renormalize_                                              picks cpu for it where it would pick a kernel
    spherekit.nn verifiers                    FLOAT_DTYPES      as the op the verifier calls

Under the Triton interpreter (TRITON_INTERPRET=1, CPU tensors) backend "triton" also refuses bfloat16
(check_triton_dtype): the interpreter's bf16 arithmetic is wrong.

Masks
-----
check_mask is the one mask rule: shape, device and dtype, then (optionally) "every row has a valid token".
The ops take bool masks (True = valid token; None = all valid). The nn verifiers and the retrieval layer also
take 0/1 integer or float masks (a tokenizer's attention_mask), which become bool. The kernel launchers take
bool / uint8 / int8 (KERNEL_MASK_DTYPES), read through a uint8 view without a copy.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch
from torch import Tensor

from .. import _backend

# ---- check modes ------------------------------------------------------------------------------------------------

CHECK_MODES = ("fast", "full")
CHECKS_ENV = "SPHEREKIT_CHECKS"


def _mode_from_env() -> str:
    mode = os.environ.get(CHECKS_ENV, "fast") or "fast"
    if mode not in CHECK_MODES:
        raise ValueError(f"{CHECKS_ENV} must be one of {CHECK_MODES}, got {mode!r}")
    return mode


_MODE = _mode_from_env()


def check_mode() -> str:
    """The validation mode every op obeys now: "fast" (the default) or "full"."""
    return _MODE


def full_checks() -> bool:
    """True inside spherekit.checks("full") or with SPHEREKIT_CHECKS=full: the value scans run."""
    return _MODE == "full"


@contextmanager
def checks(mode: str):
    """Set the validation mode of every spherekit op for the block (process-wide; restored on exit).

    "fast" (the default): the ops check only host metadata (types, shapes, dtypes, devices, strides, options),
    read no tensor data and never synchronise with the device; a NaN or Inf in the input gives a NaN or Inf out,
    never a finite wrong number. "full": also the value scans that read the data and sync the host (NaN / Inf
    in inputs, index ranges, masks with an all-padding row, degenerate denominators, tensor temperatures), each
    raising an error that names the argument. SPHEREKIT_CHECKS=full sets "full" for the whole process.

        with spherekit.checks("full"):
            loss = info_nce(q, d)   # raises "NaN or Inf found in queries" instead of returning NaN
    """
    global _MODE
    check_choice("mode", mode, CHECK_MODES)
    previous, _MODE = _MODE, mode
    try:
        yield
    finally:
        _MODE = previous


KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
FLOAT_DTYPES = KERNEL_DTYPES + (torch.float64,)
KERNEL_MASK_DTYPES = (torch.bool, torch.uint8, torch.int8)


# ---- tensors --------------------------------------------------------------------------------------------------

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


def check_shape(name: str, x: Tensor, shape: tuple) -> None:
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")


def check_same(name: str, x: Tensor, ref_name: str, ref: Tensor) -> None:
    """Same dtype and device as `ref`."""
    if x.dtype != ref.dtype:
        raise TypeError(f"{name} must have the dtype of {ref_name} ({ref.dtype}), got {x.dtype}")
    if x.device != ref.device:
        raise ValueError(f"{name} must be on the device of {ref_name} ({ref.device}), got {x.device}")


def check_nonempty(name: str, x: Tensor) -> None:
    """The one rule of every op for empty input: an empty batch is an error naming the argument (a loss or a score
    of nothing is undefined; an update of nothing is almost always a bug upstream)."""
    if x.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); every spherekit op needs a non-empty batch")


def check_tokens(name: str, x, ndims: int | tuple[int, ...], *, dtypes=FLOAT_DTYPES, like: Tensor | None = None,
                 like_name: str = "q", nonempty: bool = True) -> None:
    """Token embeddings: a tensor with x.dim() in ndims and a dtype in `dtypes` (no zero-size dim unless
    nonempty=False); with `like`, also its dtype, device and hidden size h (shape[-1])."""
    ndims = (ndims,) if isinstance(ndims, int) else tuple(ndims)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() not in ndims:
        want = " or ".join(str(n) for n in ndims)
        raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(x.shape)}")
    if x.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in dtypes]}, got {x.dtype}")
    if nonempty and 0 in x.shape:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")
    if like is not None:
        check_same(name, x, like_name, like)
        if x.shape[-1] != like.shape[-1]:
            raise ValueError(f"{name}.shape[-1] must equal the hidden size h of {like_name} ({like.shape[-1]}), "
                             f"got shape {tuple(x.shape)}")


def check_finite(**tensors: Tensor | None) -> None:
    """In the "full" check mode: raise naming each float tensor holding NaN or +-Inf. One aminmax reduction per
    tensor (NaN propagates to min and max; an Inf shows up as one of them): no tensor-sized temporary, one host
    sync for all. In the "fast" mode (the default) nothing is read: a non-finite input gives a non-finite output."""
    if not full_checks():
        return
    named = [(n, t.detach()) for n, t in tensors.items() if t is not None and t.is_floating_point() and t.numel()]
    if not named:
        return
    stats = torch.stack([torch.stack(torch.aminmax(t)).to(torch.float64) for _, t in named])
    ok = torch.isfinite(stats).all(-1).tolist()
    bad = [n for (n, _), fine in zip(named, ok) if not fine]
    if bad:
        raise ValueError(f"NaN or Inf found in {', '.join(bad)}")


def check_log_weights(name: str, x: Tensor) -> None:
    """Log-weights: -inf is allowed (weight 0), NaN and +inf are not ("full" check mode only)."""
    if full_checks() and bool((torch.isnan(x) | torch.isposinf(x)).any()):
        raise ValueError(f"{name} contains NaN or +Inf (-Inf is allowed and means weight 0)")


def check_index_range(name: str, x: Tensor, low: int, high: int, *, ignore: int | None = None) -> None:
    """All entries in [low, high) (entries equal to `ignore` are allowed); "full" check mode only (the kernels
    turn an out-of-range index into a NaN loss or score in the "fast" mode, see each op)."""
    if not full_checks():
        return
    vals = x if ignore is None else x[x != ignore]
    if vals.numel() == 0:
        return
    lo, hi = int(vals.min()), int(vals.max())
    if lo < low or hi >= high:
        extra = f" (or {ignore} to ignore a row)" if ignore is not None else ""
        raise ValueError(f"{name} must lie in [{low}, {high}){extra}, got values in [{lo}, {hi}]")


# ---- masks ------------------------------------------------------------------------------------------------------

def check_mask(name: str, mask, shape: tuple[int, ...], device: torch.device, *, what: str | None = None,
               dtypes: tuple[torch.dtype, ...] = (torch.bool,), zero_one: bool = False,
               like_name: str | None = None) -> Tensor:
    """A token mask of exactly `shape` on `device` (None -> all True). Returns it as bool (kernel dtypes as given).

    dtypes: the accepted dtypes (bool for the ops, KERNEL_MASK_DTYPES for the launchers); zero_one=True
    accepts any dtype holding only 0/1 values instead (an attention mask) and converts it to bool.
    what: name of a row ("query", "document", "text"): in the "full" check mode every row (the last dim) needs a
    valid token; None skips this value check (the launchers). like_name: the device errors say "the device of
    <like_name>". In the "fast" mode no mask value is read: an all-padding row gets its op's documented value and
    a 0/1 mask is taken as mask != 0."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool, device=device)
    bool_only = tuple(dtypes) == (torch.bool,) and not zero_one
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a {'bool ' if bool_only else ''}torch.Tensor or None, "
                        f"got {type(mask).__name__}")
    if bool_only and mask.dtype != torch.bool:
        raise TypeError(f"{name} must have dtype torch.bool (True = valid token; convert an attention mask "
                        f"with mask.bool()), got {mask.dtype}")
    if not zero_one and mask.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype in {[str(d) for d in dtypes]}, got {mask.dtype}")
    check_shape(name, mask, shape)
    if mask.device != device:
        where = f"the device of {like_name} ({device})" if like_name else f"device {device}"
        raise ValueError(f"{name} must be on {where}, got {mask.device}")
    if zero_one and mask.dtype != torch.bool:
        if full_checks() and bool(((mask != 0) & (mask != 1)).any()):
            raise ValueError(f"{name} must be bool or hold only 0/1 values (dtype {mask.dtype})")
        mask = mask != 0
    if what is not None and full_checks():
        empty = ~mask.any(-1)
        if mask.dim() == 1 and bool(empty):
            raise ValueError(f"{name}: the {what} has no valid token (it needs at least one)")
        if bool(empty.any()):
            where = tuple(int(i) for i in torch.nonzero(empty)[0])
            index = where[0] if len(where) == 1 else where
            raise ValueError(f"{name}: {what} {index} has no valid token (every {what} needs at least one)")
    return mask


# ---- paired token batches -----------------------------------------------------------------------------------

def check_pair(q, q_mask, d, d_mask, *, d_ndim: int = 3, same_batch: bool = True, names: tuple[str, str] = ("q", "d"),
               what: tuple[str, str] = ("query", "document"), zero_one: bool = True, finite: bool = True,
               nonempty: bool = True) -> tuple[Tensor, Tensor]:
    """Queries q (B, m, h) and documents d (B, n, h) (d_ndim=4: (B, K, n, h); same_batch=False: any Bd) of one
    dtype and device, with their masks (shapes q.shape[:2] and d.shape[:-1]) -> the completed bool masks.

    The ops use the defaults (bool or 0/1 attention masks, no empty tensor, NaN / Inf refused); the nn verifiers
    name the arguments ("q_tokens", "d_tokens"), call every row a "text" and leave empty batches and non-finite
    values to the layers they call."""
    qn, dn = names
    check_tokens(qn, q, (3,), nonempty=nonempty)
    check_tokens(dn, d, (d_ndim,), like=q, like_name=qn, nonempty=nonempty)
    if same_batch and d.shape[0] != q.shape[0]:
        raise ValueError(f"{dn}.shape[0] must equal the batch size B of {qn} ({q.shape[0]}), "
                         f"got shape {tuple(d.shape)}")
    q_mask = check_mask("q_mask", q_mask, tuple(q.shape[:2]), q.device, what=what[0], zero_one=zero_one,
                        like_name=qn)
    d_mask = check_mask("d_mask", d_mask, tuple(d.shape[:-1]), q.device, what=what[1], zero_one=zero_one,
                        like_name=qn)
    if finite:
        check_finite(**{qn: q, dn: d})
    return q_mask, d_mask


def check_verifier_pair(q: Tensor, q_mask, d: Tensor, d_mask, *, d_ndim: int = 3, same_batch: bool = True
                        ) -> tuple[Tensor, Tensor]:
    """check_pair under the conventions of the spherekit.nn verifiers and their losses: a paired (d_ndim=3),
    per-query-K (d_ndim=4) or all-pairs (same_batch=False) input, arguments named q_tokens / d_tokens, every row a
    "text", 0/1 attention masks accepted; returns the bool masks."""
    return check_pair(q, q_mask, d, d_mask, d_ndim=d_ndim, same_batch=same_batch, names=("q_tokens", "d_tokens"),
                      what=("text", "text"), zero_one=True, finite=False, nonempty=False)


# ---- scalars and options ----------------------------------------------------------------------------------------

# The smallest temperature: logits are dot products / temperature, so for unit vectors they stay within
# +-1e4 and d_temperature (~ dot / temperature^2) within ~1e8, far inside fp32 even for dot products of 1e20.
# Far smaller ones leave fp32: 1e-39 is subnormal and 1 / 1e-39 overflows, which gave NaN losses.
MIN_TEMPERATURE = 1e-4
_MIN_TEMPERATURE_AS = {dt: torch.tensor(MIN_TEMPERATURE, dtype=dt).item() for dt in FLOAT_DTYPES}  # as rounded


def check_temperature(name: str, value: float, dtype: torch.dtype = torch.float64) -> None:
    """The temperature rule of every op: finite and >= MIN_TEMPERATURE (1e-4, as rounded to the temperature's
    dtype). An infinite temperature makes the gradients 0 * inf = NaN; a tiny one drives the logits and
    gradients out of fp32 range."""
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if value == float("inf"):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < _MIN_TEMPERATURE_AS.get(dtype, MIN_TEMPERATURE):
        raise ValueError(f"{name} must be >= {MIN_TEMPERATURE:g} (and finite), got {value}: the logits are dot "
                         f"products / {name}, and below that they and their gradients (~ 1/{name}^2) leave fp32")


def guard_scalar(value: Tensor, *, temperature: bool) -> Tensor:
    """A 0-dim tensor argument checked on the device, without a host sync: NaN where it is not finite (or, for a
    temperature, below MIN_TEMPERATURE), so that a bad value gives a NaN result, never a finite wrong one."""
    ok = torch.isfinite(value)
    if temperature:
        ok = ok & (value >= MIN_TEMPERATURE)
    return torch.where(ok, value, torch.full_like(value, float("nan")))


def _check_scalar_tensor(name: str, value: Tensor, device: torch.device, where: str) -> None:
    if value.dim() != 0 or not value.is_floating_point():
        raise ValueError(f"{name} must be a float or a 0-dim floating tensor, got shape {tuple(value.shape)} "
                         f"dtype {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name} must be on {where} ({device}), got {value.device}")


def as_temperature(temperature, device: torch.device) -> Tensor:
    """A float obeying check_temperature, or a 0-dim floating tensor -> 0-dim fp32 tensor on `device` (grad kept).
    A tensor's value is checked on the host in the "full" check mode only (a sync); in the "fast" mode an invalid
    value becomes NaN on the device (guard_scalar) and so does the loss."""
    if isinstance(temperature, Tensor):
        _check_scalar_tensor("temperature", temperature, device, "device")
        if full_checks():
            check_temperature("temperature", float(temperature.detach()), temperature.dtype)
        return guard_scalar(temperature.float(), temperature=True)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a float or a 0-dim tensor, got {type(temperature).__name__}")
    check_temperature("temperature", float(temperature))
    return torch.full((), float(temperature), dtype=torch.float32, device=device)


def as_scalar(name: str, value, device: torch.device, dtype: torch.dtype, *, temperature: bool) -> Tensor:
    """A finite float or 0-d floating tensor (grad kept) -> 0-d tensor of `dtype` on `device`; a temperature
    also obeys the ops' temperature rule (> 0 and >= MIN_TEMPERATURE). A tensor's value: as in as_temperature."""
    if isinstance(value, Tensor):
        _check_scalar_tensor(name, value, device, "the device of q")
        if not full_checks():
            return guard_scalar(value.to(dtype), temperature=temperature)
        x, x_dtype = float(value.detach()), value.dtype
        out = value.to(dtype)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float or a 0-dim tensor, got {type(value).__name__}")
    else:
        x, x_dtype = float(value), torch.float64
        out = torch.full((), x, dtype=dtype, device=device)
    if x != x or abs(x) == float("inf") or (temperature and not x > 0):
        raise ValueError(f"{name} must be a finite float{' > 0' if temperature else ''}, got {x}")
    if temperature:
        check_temperature(name, x, x_dtype)
    return out


def check_workspace_bytes(value, name: str = "workspace_bytes") -> None:
    """A byte budget of a chunked path: None (the device's default) or a positive int."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")


def check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


# ---- the backend's dtype rules ------------------------------------------------------------------------------

def refuse_float64(backend: str, name: str, what: str) -> None:
    """Input `name` is float64: the kernel backends ("triton", "cuda") take only KERNEL_DTYPES, so they raise
    naming it (backend "cpu" or "reference" runs it)."""
    if backend in ("triton", "cuda"):
        raise TypeError(f"{name}: float64 is not supported by backend {backend!r}: backend {backend!r} takes "
                        f"float32 / float16 / bfloat16 {what}, got torch.float64; use backend='cpu' or 'reference'")


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
