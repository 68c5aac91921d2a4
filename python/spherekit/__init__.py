"""spherekit: fused kernels and a Python layer for learning and measuring embedding geometry on the
unit hypersphere (contrastive losses, token-similarity maps, nGPT residuals)."""

from __future__ import annotations

__version__ = "0.1.0"

from . import ops, reference  # noqa: E402
from .ops.checks import checks  # noqa: E402  (spherekit.checks("full"): the value scans, opt-in)


def info(print_it: bool = True) -> dict:
    """Versions, compiled extensions and which backends can run here. Printed unless print_it=False."""
    import platform

    import torch

    from . import _backend

    versions = {"spherekit": __version__, "python": platform.python_version(), "torch": torch.__version__}
    for name in ("triton", "numpy", "sentence_transformers", "transformers"):
        try:
            versions[name] = __import__(name).__version__
        except Exception as exc:  # missing optional dependency
            versions[name] = f"not available ({type(exc).__name__})"
    device = "cpu"
    if torch.cuda.is_available():
        device = f"cuda: {torch.cuda.get_device_name(0)}"
    result = {
        "versions": versions,
        "device": device,
        "backends": {k: {"usable": ok, "detail": why} for k, (ok, why) in _backend.report().items()},
        "extensions": _backend.build_info(),
    }
    if print_it:
        print("spherekit", __version__)
        for k, v in versions.items():
            print(f"  {k:<22} {v}")
        print(f"  {'device':<22} {device}")
        print("backends (for tensors on the device above):")
        for name, entry in result["backends"].items():
            mark = "yes" if entry["usable"] else "no "
            print(f"  {name:<10} {mark}  {entry['detail']}")
        print("compiled extensions:")
        for name, entry in result["extensions"].items():
            print(f"  {name:<16} {entry}")
    return result
