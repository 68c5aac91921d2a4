"""The op tests' harness: which backends an op family is tested on, and an op against its pure-torch oracle
(spherekit.reference) on the same inputs, value and every gradient.

Backends: those spherekit.ops.contracts lists implementations for, less those that cannot run on the CPU tensors
of these tests (spherekit._backend.usable): cuda never can (its tests are the *_cuda.py files), triton can in the
interpreter (TRITON_INTERPRET=1, set by tests/conftest.py).

A comparison runs three computations on the same fp64 inputs: the op on inputs cast to the precision under test,
the oracle in fp64 (compute_dtype = fp64) and the oracle at that precision (inputs and compute_dtype); the op's
error against the fp64 oracle must stay within twice the same-precision oracle's, plus a small floor
(tests/_oracle.py). Inputs are cast by kind:
    data (every float tensor not named below)  the precision under test; fp64 for the fp64 oracle
    params (temperature, lam, tau, alpha)      fp32; fp64 for the fp64 oracle
    consts (label_bias)                        fp32 for the op; the compute dtype for the oracles
Tensors named in `grads` are leaves that require grad; other values (labels, masks, None) pass unchanged.
"""

from __future__ import annotations

from typing import Callable

import torch

from spherekit import _backend
from spherekit.ops import contracts
from tests._oracle import assert_close_to_oracle, grads_of, leaf

CPU = torch.device("cpu")
ORDER = ("cpu", "triton", "cuda")  # the order the tests list backends in


def backends(family: str) -> list[str]:
    """The backends `family` is tested on here: the ones spherekit.ops.contracts.backends(family) names that can run
    on CPU tensors (spherekit._backend.usable), in ORDER."""
    return sorted((b for b in contracts.backends(family) if _backend.usable(b, CPU)[0]), key=ORDER.index)


def random_weights(shape: torch.Size, seed: int = 0) -> torch.Tensor:
    """Upstream gradients uniform in [-0.5, 1.5) (fp64, seeded): grad_output != 1, of either sign."""
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2 - 0.5


def linear_weights(shape: torch.Size) -> torch.Tensor:
    """Upstream gradients 0.5 .. 1.5 along the entries (fp32); 0.7 for a scalar."""
    if not shape:
        return torch.tensor(0.7)
    return torch.linspace(0.5, 1.5, shape.numel()).reshape(shape)


def _cast(inputs: dict, dtype: torch.dtype, compute: torch.dtype | None, grads, params, consts) -> dict:
    """The inputs of one run, cast by kind (module docstring); compute is None for the op."""
    def cast(name, value):
        if not (isinstance(value, torch.Tensor) and value.is_floating_point()):
            return value
        if name in consts:
            return value.to(compute or torch.float32)
        if name in params:
            return leaf(value, torch.float64 if dtype == torch.float64 else torch.float32, name in grads)
        return leaf(value, dtype, name in grads)

    return {name: cast(name, value) for name, value in inputs.items()}


def _run(fn, args: dict, grads, weights, differentiate: bool) -> list:
    """[fn(**args), gradients of sum(value * weights) w.r.t. the args named in grads...] (only the value when not
    differentiate)."""
    value = fn(**args)
    if not differentiate:
        return [value]
    return [value, *grads_of(value, weights(value.shape).to(value.dtype), [args[name] for name in grads])]


def runs(op, oracle, inputs: dict, dtype: torch.dtype, grads=(), *, params=(), consts=(),
         weights: Callable[[torch.Size], torch.Tensor] = random_weights, differentiate: bool = True):
    """The three computations of a comparison, each [value, *gradients of the inputs named in grads]:
    (op(**inputs in dtype), oracle(**inputs in dtype, compute_dtype=dtype), oracle(**inputs in fp64,
    compute_dtype=fp64)). weights(value shape) is the upstream gradient (cast to each value's dtype)."""
    def run(fn, cast_dtype, compute=None):
        args = _cast(inputs, cast_dtype, compute, grads, params, consts)
        return _run(fn if compute is None else lambda **a: fn(**a, compute_dtype=compute), args, grads, weights,
                    differentiate)

    return run(op, dtype), run(oracle, dtype, dtype), run(oracle, torch.float64, torch.float64)


def check(names, got, same, exact, dtype: torch.dtype, conditioning: float = 0.0) -> None:
    """Every result of the op present, finite, shaped like the fp64 oracle's and within the accuracy rule:
    |got - exact| <= 2 |same - exact| + (floor + conditioning) max(1, |exact|) (tests/_oracle.py)."""
    for name, g, s, o in zip(names, got, same, exact, strict=True):
        assert g is not None and g.shape == o.shape, name
        assert torch.isfinite(g).all() and torch.isfinite(o).all(), name
        assert_close_to_oracle(name, g, s, o, dtype, conditioning)


def compare(op, oracle, inputs: dict, dtype: torch.dtype, grads=(), *, params=(), consts=(),
            weights: Callable[[torch.Size], torch.Tensor] = random_weights, grad_conditioning: float = 0.0,
            check_grads: bool = True) -> torch.Tensor:
    """op against oracle (runs) under the accuracy rule (check): the value, then, unless not check_grads, the
    gradient of every input named in grads, in that input's dtype; grad_conditioning: a relative error allowed in
    the gradients on top of the rule, for the cases that derive one. -> the op's value."""
    got, same, exact = runs(op, oracle, inputs, dtype, grads, params=params, consts=consts, weights=weights,
                            differentiate=check_grads)
    check(("value",), got[:1], same[:1], exact[:1], dtype)
    if check_grads:
        for name, g, s in zip(grads, got[1:], same[1:], strict=True):
            assert g is not None and g.dtype == s.dtype, f"d_{name}"  # the input's dtype
        check([f"d_{name}" for name in grads], got[1:], same[1:], exact[1:], dtype, grad_conditioning)
    return got[0]
