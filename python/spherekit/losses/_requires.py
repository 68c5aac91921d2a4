"""The losses subclass sentence-transformers' modules: without it, say which extra brings it (one line)."""

from .. import _extras

_absent = _extras.missing("st")
if _absent:
    raise ModuleNotFoundError(_extras.message("st", "spherekit.losses", _absent), name=_absent[0])
