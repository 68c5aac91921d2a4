"""The float dtype codes that the compiled kernels' raw-pointer entry points take (csrc/common/dispatch.h:
spherekit::kFloat32 / kFloat16 / kBFloat16 = 0 / 1 / 2), shared by the compiled launchers (_maxsim_cuda,
_ngpt_cuda, _ngpt_cpp)."""

from __future__ import annotations

import torch

DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def dtype_code(dtype: torch.dtype) -> int:
    """The code of a float storage dtype (the callers check the dtype first; any other is a TypeError)."""
    try:
        return DTYPE_CODES[dtype]
    except KeyError:
        raise TypeError(f"expected dtype in {list(DTYPE_CODES)}, got {dtype}") from None
